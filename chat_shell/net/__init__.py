"""Outbound connections: the egress policy and the clients that obey it."""

from chat_shell.net._redact import log_secrets, redact
from chat_shell.net._transport import (
    EgressNetworkBackend,
    EgressTransport,
    UnrequestedEncoding,
    content_encoding,
    egress_client,
)
from chat_shell.net.egress import (
    REFUSED_HOST,
    EgressForbidden,
    EgressPolicy,
    default_refusal,
    literal_address,
    readable_url,
)
from chat_shell.net.upstream import (
    error_body_logger,
    find_cause,
    log_upstream_error,
    truncated,
)

__all__ = [
    "REFUSED_HOST",
    "EgressForbidden",
    "EgressNetworkBackend",
    "EgressPolicy",
    "EgressTransport",
    "UnrequestedEncoding",
    "content_encoding",
    "default_refusal",
    "egress_client",
    "error_body_logger",
    "find_cause",
    "literal_address",
    "log_secrets",
    "log_upstream_error",
    "readable_url",
    "redact",
    "truncated",
]
