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
# Scheme and authority ("https://host:port"); a placeholder there is resolved per turn.
_HEAD = re.compile(r"[^/?#]*//[^/?#]*")


def url_refusal(url: str, policy: EgressPolicy) -> str | None:
    """Why `policy` refuses `url` as written, or None (also when a placeholder makes up the
    address: it is checked once substituted, when the turn connects)."""
    head = _HEAD.match(url)
    if url.startswith("${{") or (head is not None and "${{" in head.group(0)):
        return None
    try:
        policy.check_url(url)
    except EgressForbidden as exc:
        return str(exc.details.get("reason") or exc.message)
    return None


def check_egress(
    urls: Mapping[str, str], policy: EgressPolicy, *, key: str, what: str = "URL"
) -> None:
    """422 `egress_forbidden` listing every refused entry of `urls` ({name: url}).

    `key` names the entries in `details` ("server", "field"); messages never quote a URL.
    """
    errors: list[dict[str, Any]] = []
    for name, url in urls.items():
        reason = url_refusal(url, policy)
        if reason is not None:
            errors.append({key: name, "reason": reason})
    if errors:
        names = [e[key] for e in errors]
        raise InvalidRequest(
            f"{what} not allowed by the egress policy: {', '.join(names)}",
            code=EGRESS_FORBIDDEN,
            details={f"{key}s": names, "errors": errors},
        )
