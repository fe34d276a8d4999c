"""Certificates for TLS tests on loopback: a CA and a server certificate for one host name."""

from __future__ import annotations

import datetime
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def certificates(tmp_path: Path, hostname: str) -> tuple[Path, Path, Path]:
    """(CA cert, server cert, server key) PEM files; the server cert names `hostname`."""
    now = datetime.datetime.now(datetime.UTC)

    def build(
        subject: str,
        issuer: str,
        key: ec.EllipticCurvePrivateKey,
        signer: ec.EllipticCurvePrivateKey,
    ) -> x509.Certificate:
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(hours=1))
        )
        is_ca = subject == issuer
        builder = builder.add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), True)
        if not is_ca:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.DNSName(hostname)]), False
            )
        return builder.sign(signer, hashes.SHA256())

    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = build("test ca", "test ca", ca_key, ca_key)
    cert = build(hostname, "test ca", key, ca_key)
    paths = (tmp_path / "ca.pem", tmp_path / "cert.pem", tmp_path / "key.pem")
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


def tls_pair(tmp_path: Path, hostname: str) -> tuple[ssl.SSLContext, ssl.SSLContext, list[str]]:
    """(server context, client context trusting its CA, server names the server saw)."""
    ca, cert, key = certificates(tmp_path, hostname)
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert, key)
    seen: list[str] = []
    server.sni_callback = lambda _sock, name, _ctx: seen.append(name or "")  # type: ignore[assignment]
    return server, ssl.create_default_context(cafile=str(ca)), seen
