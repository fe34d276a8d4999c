"""The Fernet key that encrypts secrets at rest (`cryptography`'s authenticated encryption)."""

from __future__ import annotations

import logging
import os

from cryptography.fernet import Fernet, InvalidToken

from backend.config import Settings

log = logging.getLogger("skillhive.secrets")

KEY_FILE = "secrets.key"


class SecretsKeyError(RuntimeError):
    """Start-up refuses to continue without a usable key (outside development)."""


def load_cipher(settings: Settings) -> Fernet:
    if settings.secrets_key is not None:
        try:
            return Fernet(settings.secrets_key.get_secret_value().encode())
        except (ValueError, TypeError) as exc:
            raise SecretsKeyError(
                "SKILLHIVE_SECRETS_KEY is not a Fernet key (32 url-safe base64-encoded bytes)"
            ) from exc
    if settings.env != "development":
        raise SecretsKeyError("SKILLHIVE_SECRETS_KEY is required when SKILLHIVE_ENV=production")
    # Development: a key generated once and kept beside the SQLite file, so restarts can still
    # read what was stored.
    path = settings.data_dir / KEY_FILE
    if not path.exists():
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(Fernet.generate_key())
        log.warning("development: generated a secrets key at %s", path)
    return Fernet(path.read_bytes().strip())


def decrypt(cipher: Fernet, token: bytes) -> str:
    try:
        return cipher.decrypt(token).decode("utf-8")
    except InvalidToken as exc:
        raise SecretsKeyError("a stored secret cannot be decrypted with the current key") from exc
