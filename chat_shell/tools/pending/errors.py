"""Errors a pending frontend request ends with; tools report them to the model as text."""

from __future__ import annotations

from chat_shell.errors import ChatShellError


class PendingRequestError(ChatShellError):
    """Base of the pending-request errors."""

    code = "pending_request_error"


class RequestTimeout(PendingRequestError):
    """The browser did not answer before the request's timeout."""

    code = "request_timeout"


class FrontendError(PendingRequestError):
    """The browser answered with a failure (e.g. the renderer's syntax error)."""

    code = "frontend_error"


class RegistryUnavailable(PendingRequestError):
    """The registry cannot reach its store (Redis down) or was closed."""

    code = "pending_unavailable"
