"""The egress policy's rules: the default ranges, literal forms, operator allow and deny."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket

import pytest
from pydantic import ValidationError

from chat_shell.net import (
    REFUSED_HOST,
    EgressForbidden,
    EgressPolicy,
    default_refusal,
    egress_client,
    literal_address,
    log_secrets,
)

REFUSED = [
    "127.0.0.1",
    "127.255.255.254",
    "10.1.2.3",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "169.254.169.254",  # cloud metadata
    "100.64.0.1",  # shared / CGNAT
    "100.127.255.254",
    "0.0.0.0",
    "0.1.2.3",
    "192.0.0.1",
    "192.0.2.1",
    "198.18.0.1",
    "224.0.0.1",  # multicast
    "239.255.255.250",
    "240.0.0.1",  # reserved
    "255.255.255.255",
    "::1",
    "::",
    "fe80::1",
    "fe80::1%1",
    "fc00::1",
    "fd12:3456::1",
    "fec0::1",
    "ff02::1",
    "ff0e::1",  # global-scope multicast is still multicast
    "2001:db8::1",
    "2001::1",  # Teredo
    "100::1",
    "::ffff:127.0.0.1",  # IPv4-mapped
    "::ffff:169.254.169.254",
    "::ffff:10.0.0.1",
    "::ffff:0:7f00:1",  # IPv4-translated
    "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
    "64:ff9b:1::1",  # local-use NAT64
    "2002:7f00:1::1",  # 6to4 of 127.0.0.1
    "2002:a9fe:a9fe::1",  # 6to4 of 169.254.169.254
    "::7f00:1",  # IPv4-compatible 127.0.0.1
    "::808:808",  # IPv4-compatible (deprecated) even of a public address
]

ALLOWED = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.216.34",
    "100.63.255.255",  # just below CGNAT
    "100.128.0.1",  # just above
    "172.32.0.1",
    "11.0.0.1",
    "2606:4700:4700::1111",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",  # NAT64 of a public address
    "2002:808:808::1",  # 6to4 of a public address
]


@pytest.mark.parametrize("address", REFUSED)
def test_the_defaults_refuse_non_public_addresses(address: str) -> None:
    ip = ipaddress.ip_address(address)
    assert default_refusal(ip) is not None
    assert EgressPolicy().refusal("host.example", ip) is not None


@pytest.mark.parametrize("address", ALLOWED)
def test_the_defaults_allow_public_addresses(address: str) -> None:
    assert default_refusal(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/v1",
        "http://127.1/",  # the short forms resolvers accept
        "http://127.0.0.1.:8121/",  # an absolute name's trailing dot
        "http://127.1./",
        "http://2130706433/",
        "http://0x7f000001/",
        "http://0177.0.0.1/",
        "http://[::1]:8080/mcp",
        "http://[::ffff:127.0.0.1]/",
        "https://169.254.169.254/latest/meta-data/",
        "http://[fd00::1]/",
        "http://100.100.100.200/",
    ],
)
def test_a_literal_refused_address_is_refused_without_resolving(url: str) -> None:
    with pytest.raises(EgressForbidden) as info:
        EgressPolicy().check_url(url)
    assert info.value.code == "egress_forbidden"
    assert url not in info.value.message


@pytest.mark.parametrize(
    "url", ["ftp://example.com/", "file:///etc/passwd", "gopher://example.com/", "example.com"]
)
def test_only_http_and_https_are_allowed(url: str) -> None:
    with pytest.raises(EgressForbidden):
        EgressPolicy().check_url(url)


UNREADABLE = [
    "http://" + "a" * 64 + ".example.com/",  # a label over 63 characters
    "http://a..example.com/",  # an empty label
    "http://xn--/",  # an A-label without Punycode
    "http://example.com:8080\x00/",
]


@pytest.mark.parametrize("url", UNREADABLE)
def test_a_url_the_client_or_a_resolver_cannot_read_is_refused(url: str) -> None:
    """`urlsplit` takes these; httpx or the resolver then raised their own errors (an
    `InvalidURL`, a `UnicodeError`), which the callers of an egress client do not expect."""
    with pytest.raises(EgressForbidden, match="cannot be parsed"):
        EgressPolicy().check_url(url)
    with pytest.raises(EgressForbidden, match="cannot be parsed"):
        EgressPolicy(allow=("0.0.0.0/0",)).check_url(url)


@pytest.mark.parametrize("host", ["a" * 64 + ".example.com", "a..example.com"])
async def test_a_host_no_resolver_can_encode_is_refused_as_a_failed_lookup(host: str) -> None:
    with pytest.raises(EgressForbidden, match=REFUSED_HOST):
        await EgressPolicy().resolve_and_check(host, 443)


async def test_a_name_that_does_not_resolve_reads_as_one_resolving_inside(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a different answer for each told a tenant which internal names exist
    async def getaddrinfo(host: str, port: int, **_: object) -> list[tuple[object, ...]]:
        if host == "db.corp.internal":
            return [(0, 1, 6, "", ("10.1.2.3", port))]
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", getaddrinfo)
    refusals = []
    for host in ("db.corp.internal", "nothing.corp.internal"):
        with pytest.raises(EgressForbidden) as refused:
            await EgressPolicy().resolve_and_check(host, 443)
        refusals.append((refused.value.code, refused.value.message, refused.value.details))
    assert refusals[0] == refusals[1]


async def test_a_secret_in_a_refused_host_is_masked_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # the client hands the policy the host lower-cased and IDNA-encoded, not as substituted
    async def connect(host: str) -> None:
        log_secrets({"S3cr3T", "tök"})
        async with egress_client(EgressPolicy()) as client:
            await client.get(f"http://{host}/")

    for host in ("S3cr3T.localhost", "tök.localhost"):
        with caplog.at_level(logging.WARNING), pytest.raises(EgressForbidden):
            await asyncio.create_task(connect(host))
    lines = [r.getMessage() for r in caplog.records if "egress refused" in r.getMessage()]
    assert len(lines) == 2
    assert all(line.startswith("egress refused: ***.localhost") for line in lines), lines
    assert "s3cr3t" not in caplog.text.lower() and "xn--tk-fka" not in caplog.text


def test_a_host_name_passes_the_write_check_and_reports_its_port() -> None:
    policy = EgressPolicy()
    assert policy.check_url("https://Models.Example.COM:8443/v1") == ("models.example.com", 8443)
    assert policy.check_url("http://localhost/") == ("localhost", 80)  # resolved on connect


def test_literal_address_reads_the_forms_resolvers_accept() -> None:
    assert literal_address("127.1") == ipaddress.ip_address("127.0.0.1")
    assert literal_address("[::1]") == ipaddress.ip_address("::1")
    assert literal_address("127.0.0.1.") == ipaddress.ip_address("127.0.0.1")
    assert literal_address("cafe") is None  # a host name made of hex letters
    assert literal_address("example.com") is None


def test_an_allow_entry_opens_exactly_its_range() -> None:
    policy = EgressPolicy(allow=("127.0.0.1", "10.0.0.0/8", "fd00::/8"))
    for address in ("127.0.0.1", "10.20.30.40", "fd00::5", "::ffff:10.1.1.1"):
        assert policy.refusal("h", ipaddress.ip_address(address)) is None, address
    for address in ("127.0.0.2", "192.168.0.1", "169.254.169.254", "fe80::1"):
        assert policy.refusal("h", ipaddress.ip_address(address)) is not None, address
    assert policy.check_url("http://127.0.0.1:9000/") == ("127.0.0.1", 9000)


def test_deny_wins_over_allow_and_over_the_defaults() -> None:
    policy = EgressPolicy(allow=("10.0.0.0/8",), deny=("10.1.0.0/16", "8.8.8.0/24"))
    assert policy.refusal("h", ipaddress.ip_address("10.2.0.1")) is None
    assert policy.refusal("h", ipaddress.ip_address("10.1.2.3")) is not None
    for address in ("8.8.8.8", "::ffff:8.8.8.8", "64:ff9b::808:808"):
        assert policy.refusal("h", ipaddress.ip_address(address)) is not None, address
    assert policy.refusal("h", ipaddress.ip_address("8.8.4.4")) is None


def test_host_name_entries_match_the_name_or_names_under_a_wildcard() -> None:
    policy = EgressPolicy(allow=("models.internal",), deny=("evil.example", "*.corp.example"))
    internal = ipaddress.ip_address("10.0.0.5")
    assert policy.refusal("MODELS.internal.", internal) is None
    assert policy.refusal("other.internal", internal) is not None
    public = ipaddress.ip_address("8.8.8.8")
    assert policy.refusal("a.corp.example", public) is not None
    assert policy.refusal("corp.example", public) is None
    with pytest.raises(EgressForbidden):
        policy.check_url("https://evil.example/mcp")
    with pytest.raises(EgressForbidden):
        policy.check_url("https://x.corp.example/mcp")


@pytest.mark.parametrize("entry", ["not a host!", "http://x.example", "10.0.0.0/33", ""])
def test_malformed_entries_are_refused(entry: str) -> None:
    with pytest.raises(ValidationError):
        EgressPolicy(allow=(entry,))


async def test_a_name_resolving_to_loopback_is_refused_at_connect_time() -> None:
    with pytest.raises(EgressForbidden) as info:
        await EgressPolicy().resolve_and_check("localhost", 80)
    assert "localhost" not in info.value.message and "127.0.0.1" not in info.value.message


def fake_dns(monkeypatch: pytest.MonkeyPatch, answers: dict[str, list[str]]) -> list[str]:
    """Answer getaddrinfo from `answers`; returns the list of names looked up."""
    asked: list[str] = []

    async def getaddrinfo(host: str, port: int, **_: object) -> list[tuple[object, ...]]:
        asked.append(host)
        return [(0, 1, 6, "", (address, port)) for address in answers[host]]

    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", getaddrinfo)
    return asked


async def test_every_resolved_address_must_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = fake_dns(
        monkeypatch, {"mixed.example": ["8.8.8.8", "10.0.0.1"], "public.example": ["8.8.8.8"]}
    )
    with pytest.raises(EgressForbidden):
        await EgressPolicy().resolve_and_check("mixed.example", 443)
    addresses = await EgressPolicy().resolve_and_check("public.example", 443)
    assert addresses == [ipaddress.ip_address("8.8.8.8")]
    assert asked == ["mixed.example", "public.example"]  # one lookup each


async def test_a_denied_name_is_refused_before_it_is_resolved(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked = fake_dns(monkeypatch, {})
    with pytest.raises(EgressForbidden):
        await EgressPolicy(deny=("evil.example",)).resolve_and_check("evil.example", 443)
    assert asked == []


def test_the_policy_travels_as_plain_data() -> None:
    policy = EgressPolicy(allow=("127.0.0.1",), deny=("evil.example",))
    again = EgressPolicy.model_validate_json(policy.model_dump_json())
    assert again == policy
    assert again.refusal("h", ipaddress.ip_address("127.0.0.1")) is None
