"""The LLM factory: the turn's model settings -> a LangChain chat model that can call tools.

A tenant-chosen endpoint (`ModelSettings.trusted` false) is called through an egress-checked
client (`chat_shell.net`) without retries; the operator's endpoint keeps the SDK's defaults.
Failures become errors that carry a status code and a generic message, never the endpoint's
answer or URL (`model_failure`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import openai
from langchain_core.language_models import BaseChatModel
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from chat_shell.contracts import ModelSettings
from chat_shell.errors import ChatShellError, ModelCallError
from chat_shell.net import REFUSED_HOST, EgressForbidden, EgressPolicy, egress_client, find_cause
from chat_shell.net.upstream import log_upstream_error
from chat_shell.offline import OfflineChatModel

OFFLINE_MODEL = "offline"
# Self-hosted OpenAI-compatible servers often need no key, but the client insists on one.
_NO_KEY = SecretStr("not-needed")
_CONNECT_TIMEOUT_S = 10.0  # a stream may run long (`ModelSettings.timeout_s`), connecting may not

logger = logging.getLogger(__name__)


class _NoSyncCalls(httpx.BaseTransport):
    """The sync side of a tenant's model client: turns call models asynchronously only, and
    this path would not pass the egress check."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        raise EgressForbidden("tenant model endpoints are called asynchronously only")


def create_chat_model(settings: ModelSettings, **client: Any) -> BaseChatModel:
    """`offline` -> the deterministic offline model; anything else -> an OpenAI-compatible model.

    `client` adds ChatOpenAI arguments (the HTTP clients and retries of `open_chat_model`).
    """
    if settings.name == OFFLINE_MODEL:
        return OfflineChatModel()  # no client: `client` does not apply
    api_key = settings.api_key or (_NO_KEY if settings.base_url else None)
    try:
        return ChatOpenAI(
            model=settings.name,
            base_url=settings.base_url,
            api_key=api_key,
            temperature=settings.temperature,
            max_tokens=settings.max_tokens,
            streaming=True,
            stream_usage=True,
            **client,
        )
    except Exception as exc:  # the client validates keys and URLs eagerly
        # The type only: a validation message may quote the URL (and credentials in it).
        logger.warning("cannot set up model %r", settings.name, exc_info=True)
        raise ModelCallError(
            f"cannot set up model {settings.name!r}: {type(exc).__name__}"
        ) from exc


@asynccontextmanager
async def open_chat_model(
    settings: ModelSettings, egress: EgressPolicy
) -> AsyncIterator[BaseChatModel]:
    """The turn's model; a tenant endpoint's HTTP client is closed when the block ends.

    A tenant endpoint is checked before anything is sent (scheme, a literal address) and
    again on every connection (the resolved addresses).
    """
    timeout = httpx.Timeout(settings.timeout_s, connect=min(_CONNECT_TIMEOUT_S, settings.timeout_s))
    if settings.name == OFFLINE_MODEL or settings.trusted:
        yield create_chat_model(settings, timeout=timeout, max_retries=settings.max_retries)
        return
    if settings.base_url is not None:
        try:
            egress.check_url(settings.base_url)
        except EgressForbidden as exc:
            raise _endpoint_refused() from exc
    async with egress_client(egress, timeout=timeout) as client:
        yield create_chat_model(
            settings,
            http_async_client=client,
            http_client=httpx.Client(transport=_NoSyncCalls()),
            max_retries=0,  # a refused or failing tenant endpoint is not worth asking again
            timeout=timeout,
        )


def _endpoint_refused() -> EgressForbidden:
    return EgressForbidden(f"the model endpoint: {REFUSED_HOST}")


def model_failure(exc: BaseException, secrets: Iterable[str] = ()) -> ChatShellError:
    """The error a failed model call ends the turn with: a code, a status code and a generic
    message. What the endpoint answered goes to the log, truncated, `secrets` masked."""
    if find_cause(exc, EgressForbidden) is not None:
        return _endpoint_refused()
    status = find_cause(exc, openai.APIStatusError)
    if status is not None:
        body = status.body or status
        log_upstream_error("the model endpoint", status.status_code, body, secrets)
        return ModelCallError(
            f"the model endpoint answered HTTP {status.status_code}",
            details={"status": status.status_code},
        )
    if find_cause(exc, openai.APITimeoutError) is not None:
        return ModelCallError("the model endpoint did not answer in time")
    if find_cause(exc, openai.APIConnectionError) is not None:
        logger.warning("cannot reach the model endpoint", exc_info=exc)
        return ModelCallError("could not connect to the model endpoint")
    logger.warning("the model call failed", exc_info=exc)
    return ModelCallError(f"the model call failed: {type(exc).__name__}")
