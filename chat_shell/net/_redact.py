"""Secret values masked in what the service logs about outbound connections.

The code that substitutes secrets (an MCP server's config) knows their values; the egress
policy, which logs what it refused, does not. `log_secrets` hands the values down through a
context variable, so every task the connection starts inherits them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from contextvars import ContextVar

_LOG_SECRETS: ContextVar[re.Pattern[str] | None] = ContextVar("egress_log_secrets", default=None)


def redact(text: str, secrets: Iterable[str]) -> str:
    """Mask secret values (e.g. in a URL echoed by a connection error)."""
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def log_secrets(secrets: Iterable[str]) -> None:
    """Mask `secrets` in the egress log lines of the current task and the tasks it starts.

    A host reaches the policy as the HTTP client made it: lower-cased and IDNA-encoded, so a
    secret is masked in those spellings too, whatever their case."""
    forms = {form for secret in secrets if secret for form in _host_forms(secret)}
    if not forms:
        _LOG_SECRETS.set(None)
        return
    alternatives = "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))
    _LOG_SECRETS.set(re.compile(alternatives, re.IGNORECASE))


def redacted_for_log(text: str) -> str:
    pattern = _LOG_SECRETS.get()
    return text if pattern is None else pattern.sub("***", text)


def _host_forms(secret: str) -> set[str]:
    forms = {secret}
    for label in re.split(r"[.\u3002\uff0e\uff61]", secret):  # IDNA's label separators
        if not label.isascii():
            try:
                forms.add(label.encode("idna").decode("ascii"))
            except UnicodeError:  # no host could hold it: the plain form is all there is
                pass
    try:
        forms.add(secret.encode("idna").decode("ascii"))
    except UnicodeError:
        pass
    return forms
