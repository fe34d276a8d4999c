"""The egress policy: which addresses an outbound connection chosen by a tenant may reach.

Tenants choose URLs (a Ghost's `model.baseUrl`, MCP servers of user Ghosts and user skills);
without a policy the service would connect wherever they point it: loopback, the private
network, the cloud metadata service (server-side request forgery). The rules:

- http and https only.
- Every address a host name resolves to is checked, and the connection goes to a checked
  address (`chat_shell.net._transport`), so a second DNS answer cannot rebind it.
- Refused by default: loopback, private, link-local (169.254.169.254), shared (CGNAT),
  multicast, unspecified, documentation and reserved ranges of IPv4 and IPv6, also when an
  IPv6 address carries a refused IPv4 one (IPv4-mapped, IPv4-compatible, NAT64, 6to4).
- The operator's `deny` entries (CIDRs or host names) are refused even where the defaults
  allow, and wins over `allow`; `allow` entries open what the defaults refuse.

Host name entries match the name exactly; `*.example.com` matches names under example.com.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
from pydantic import BaseModel, ConfigDict, PrivateAttr, field_validator

from chat_shell.errors import ChatShellError
from chat_shell.net._redact import redacted_for_log

logger = logging.getLogger(__name__)

# What a tenant is told when a host is refused on connect, whatever the reason (see
# `EgressPolicy.resolve_and_check`).
REFUSED_HOST = "the host does not resolve to an address the egress policy allows"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

SCHEMES = frozenset({"http", "https"})
_DEFAULT_PORTS = {"http": 80, "https": 443}

# IANA special-purpose registries, as ranges no tenant may reach. The stdlib's `is_global`
# alone misses some (multicast, 6to4, IPv4-compatible, site-local), so both are consulted.
_REFUSED_V4 = tuple(
    ipaddress.IPv4Network(n)
    for n in (
        "0.0.0.0/8",  # "this network", unspecified
        "10.0.0.0/8",
        "100.64.0.0/10",  # shared address space (CGNAT)
        "127.0.0.0/8",
        "169.254.0.0/16",  # link-local, cloud metadata services
        "172.16.0.0/12",
        "192.0.0.0/24",  # IETF protocol assignments
        "192.0.2.0/24",  # documentation
        "192.88.99.0/24",  # 6to4 relay anycast
        "192.168.0.0/16",
        "198.18.0.0/15",  # benchmarking
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, broadcast
    )
)
_REFUSED_V6 = tuple(
    ipaddress.IPv6Network(n)
    for n in (
        "::/128",
        "::1/128",
        "::ffff:0:0:0/96",  # IPv4-translated
        "64:ff9b:1::/48",  # local-use NAT64
        "100::/64",  # discard
        "2001::/23",  # IETF protocol assignments (Teredo, ...)
        "2001:db8::/32",  # documentation
        "3fff::/20",  # documentation
        "5f00::/16",  # SRv6 SIDs
        "fc00::/7",  # unique local
        "fe80::/10",  # link-local
        "fec0::/10",  # site-local (deprecated)
        "ff00::/8",  # multicast
    )
)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")

_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_HOST_PATTERN = re.compile(rf"(?:\*\.)?{_LABEL}(?:\.{_LABEL})*")
_INET_ATON_FORM = re.compile(r"[0-9a-fx.]+")


class EgressForbidden(ChatShellError):
    """The address is refused by the egress policy."""

    code = "egress_forbidden"


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one stands for (mapped, compatible, NAT64, 6to4), if any."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64 or (address in _IPV4_COMPATIBLE and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address.sixtofour


def default_refusal(address: IPAddress) -> str | None:
    """Why the default rules refuse `address` (a short reason), or None when they allow it."""
    if isinstance(address, ipaddress.IPv6Address):
        inner = embedded_ipv4(address)
        if inner is not None:
            reason = default_refusal(inner)
            if reason is not None:
                return f"embeds {inner} ({reason})"
            if address in _IPV4_COMPATIBLE:
                return "IPv4-compatible (deprecated)"
            return None
        refused: tuple[IPNetwork, ...] = _REFUSED_V6
    else:
        refused = _REFUSED_V4
    for label, flag in (
        ("loopback", address.is_loopback),
        ("unspecified", address.is_unspecified),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("private", address.is_private),
        ("reserved", address.is_reserved),
    ):
        if flag:
            return label
    if any(address in network for network in refused) or not address.is_global:
        return "special-purpose range"
    return None


def literal_address(host: str) -> IPAddress | None:
    """`host` as an IP address when it is one, including the forms `inet_aton` takes
    (`127.1`, `0x7f000001`, `2130706433`) that resolvers turn into addresses, with or without
    the trailing dot of an absolute name (`127.0.0.1.`), as `normalize_host` resolves it."""
    text = host.strip("[]").rstrip(".")
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    if _INET_ATON_FORM.fullmatch(text.lower()):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(text))
        except OSError:
            return None
    return None


def readable_url(url: str) -> bool:
    """Whether httpx can request `url` and a resolver encode its host. Both refuse URLs that
    `urlsplit` takes: control characters, leading-zero IPv4 parts, bad IDNA labels (`xn--`),
    empty labels or ones over 63 characters."""
    try:
        httpx.URL(url).host.encode("idna")  # httpx decodes the host as it reads it
    except (httpx.InvalidURL, UnicodeError):  # idna's errors are UnicodeErrors
        return False
    return True


def normalize_host(host: str) -> str:
    return host.strip("[]").rstrip(".").lower()


@dataclass(frozen=True)
class _Rules:
    networks: tuple[IPNetwork, ...] = ()
    names: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()  # ".example.com" for "*.example.com"

    @classmethod
    def parse(cls, entries: Iterable[str]) -> _Rules:
        networks: list[IPNetwork] = []
        names: set[str] = set()
        suffixes: list[str] = []
        for entry in entries:
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
                continue
            except ValueError:
                pass
            name = normalize_host(entry)
            if name.startswith("*."):
                suffixes.append(name[1:])
            else:
                names.add(name)
        return cls(tuple(networks), frozenset(names), tuple(suffixes))

    def has_name(self, host: str) -> bool:
        name = normalize_host(host)
        return name in self.names or name.endswith(self.suffixes)

    def has_address(self, address: IPAddress) -> bool:
        forms: list[IPAddress] = [address]
        if isinstance(address, ipaddress.IPv6Address) and (inner := embedded_ipv4(address)):
            forms.append(inner)
        return any(form in network for form in forms for network in self.networks)


class EgressPolicy(BaseModel):
    """The operator's allow and deny entries over the default rules (see the module doc).

    A plain model so it can travel in a `TurnRequest`; `EgressPolicy()` is the strict default.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    _allow: _Rules = PrivateAttr(default_factory=_Rules)
    _deny: _Rules = PrivateAttr(default_factory=_Rules)

    @field_validator("allow", "deny")
    @classmethod
    def _check_entries(cls, entries: tuple[str, ...]) -> tuple[str, ...]:
        for entry in entries:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                if not _HOST_PATTERN.fullmatch(normalize_host(entry)):
                    raise ValueError(f"{entry!r} is neither a CIDR nor a host name") from None
        return entries

    def model_post_init(self, context: Any, /) -> None:
        self._allow = _Rules.parse(self.allow)
        self._deny = _Rules.parse(self.deny)

    def refusal(self, host: str, address: IPAddress) -> str | None:
        """Why connecting to `address` (which `host` resolved to) is refused, or None."""
        if self._deny.has_name(host) or self._deny.has_address(address):
            return "denied by the operator"
        if self._allow.has_name(host) or self._allow.has_address(address):
            return None
        return default_refusal(address)

    def check_url(self, url: str) -> tuple[str, int]:
        """Check what can be checked without resolving: the scheme, a literal address, a
        denied host name. Returns (host, port); raises `EgressForbidden`."""
        try:
            parts = urlsplit(url)
            host, port = parts.hostname, parts.port
        except ValueError:
            raise EgressForbidden("the URL cannot be parsed") from None
        scheme = parts.scheme.lower()
        if scheme not in SCHEMES:
            raise EgressForbidden("only http and https URLs are allowed")
        if not host:
            raise EgressForbidden("the URL has no host")
        address = literal_address(host)
        reason = (
            self.refusal(host, address)
            if address is not None
            else ("denied by the operator" if self._deny.has_name(host) else None)
        )
        if reason is not None:
            raise EgressForbidden(
                f"the URL's address is not allowed: {reason}", details={"reason": reason}
            )
        if not readable_url(url):  # else the client's own error, which no caller expects
            raise EgressForbidden("the URL cannot be parsed")
        return host, port or _DEFAULT_PORTS[scheme]

    async def resolve_and_check(self, host: str, port: int) -> list[IPAddress]:
        """Every address `host` resolves to, once all are allowed; else `EgressForbidden`.

        Connect to these addresses (never to `host` again): a second resolution could answer
        differently. A name that does not resolve is refused with the same message as one
        resolving to a refused address: telling them apart would let a tenant learn which
        internal names exist (split-horizon DNS answers them only inside).
        """
        address = literal_address(host)
        if address is not None:
            addresses = [address]
        else:
            if self._deny.has_name(host):
                raise self._refused(host, None, "denied by the operator")
            try:
                infos = await asyncio.get_running_loop().getaddrinfo(
                    normalize_host(host), port, type=socket.SOCK_STREAM
                )
            except UnicodeError as exc:  # a label no resolver can encode: a failed lookup
                raise self._refused(host, None, f"invalid host name: {exc}") from None
            except OSError as exc:  # socket.gaierror: no such name, or no answer
                raise self._refused(host, None, f"does not resolve: {exc}") from None
            addresses = list(dict.fromkeys(ipaddress.ip_address(info[4][0]) for info in infos))
        for resolved in addresses:
            reason = self.refusal(host, resolved)
            if reason is not None:
                raise self._refused(host, resolved, reason)
        return addresses

    @staticmethod
    def _refused(host: str, address: IPAddress | None, reason: str) -> EgressForbidden:
        # The reason goes to the log only: telling a tenant which of their names resolve to
        # internal addresses would map the internal network for them. The host may hold a
        # secret the connection's config substituted (`log_secrets`).
        host, reason = redacted_for_log(host), redacted_for_log(reason)
        logger.warning("egress refused: %s -> %s: %s", host, address, reason)
        return EgressForbidden(REFUSED_HOST)
