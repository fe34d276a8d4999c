"""Write-time egress checks: a URL a tenant writes that the policy refuses as written is a 422.

What can be decided without resolving is decided on write (scheme, a literal address, a denied
host name); host names are resolved and checked when a turn connects (`chat_shell.net`). The
policy comes from `Settings.egress`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from backend.errors import InvalidRequest
from chat_shell import EgressForbidden, EgressPolicy

EGRESS_FORBIDDEN = EgressForbidden.code
# The scheme with "//" and the authority ("https://user@host:port") of a URL.
_HEAD = re.compile(r"(?P<scheme>[^/?#]*//)(?P<authority>[^/?#]*)")
_PLACEHOLDER = "${{"


def _deferred(url: str) -> bool:
    """Whether a placeholder makes up the URL's address: before or in its scheme, host or
    port. One in the userinfo (or the path) leaves the address as written."""
    if url.startswith(_PLACEHOLDER):
        return True
    head = _HEAD.match(url)
    if head is None:
        return False
    host_port = head["authority"].rpartition("@")[2]  # as `urlsplit` finds the host
    return _PLACEHOLDER in head["scheme"] or _PLACEHOLDER in host_port


def url_refusal(url: str, policy: EgressPolicy, *, substituted: bool = True) -> str | None:
    """Why `policy` refuses `url` as written, or None.

    `substituted`: the URL's placeholders are substituted before it is used (MCP urls); a
    placeholder in its scheme, host or port then defers the check to the turn that connects.
    A URL used as written (a model `baseUrl`) is checked whatever it holds.
    """
    if substituted and _deferred(url):
        return None
    try:
        policy.check_url(url)
    except EgressForbidden as exc:
        return str(exc.details.get("reason") or exc.message)
    return None


def check_egress(
    urls: Mapping[str, str],
    policy: EgressPolicy,
    *,
    key: str,
    what: str = "URL",
    substituted: bool = True,
) -> None:
    """422 `egress_forbidden` listing every refused entry of `urls` ({name: url}).

    `key` names the entries in `details` ("server", "field"); messages never quote a URL.
    `substituted` as for `url_refusal`.
    """
    errors: list[dict[str, Any]] = []
    for name, url in urls.items():
        reason = url_refusal(url, policy, substituted=substituted)
        if reason is not None:
            errors.append({key: name, "reason": reason})
    if errors:
        names = [e[key] for e in errors]
        raise InvalidRequest(
            f"{what} not allowed by the egress policy: {', '.join(names)}",
            code=EGRESS_FORBIDDEN,
            details={f"{key}s": names, "errors": errors},
        )
