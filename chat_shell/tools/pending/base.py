"""The registry interface and what both implementations share.

A tool calls `request(...)`: the registry emits `skill:request` to the conversation and waits
for the browser's `skill:response`, which reaches `resolve(...)` on whichever process received
it. `_RegistryCore` owns the waiting side (futures, timeout, error mapping, counters); the
implementations decide where requests live and how an answer finds its waiter.
"""

from __future__ import annotations

import abc
import asyncio
import enum
import secrets
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, Self

from chat_shell.observe import tracer
from chat_shell.ports import FrontendChannel
from chat_shell.tools.pending.errors import FrontendError, RequestTimeout

REQUEST_EVENT = "skill:request"
MAX_REQUEST_ID = 64  # longer ids are not ours; answer not_found without touching the store
MAX_ERROR_CHARS = 2000  # the browser's error text goes to the model; keep prompts bounded


class Outcome(enum.StrEnum):
    """What `resolve` did with an answer; the Socket.IO handler puts it in the ack."""

    RESOLVED = "resolved"
    NOT_FOUND = "not_found"  # unknown id, or another user's request (indistinguishable)
    ALREADY_RESOLVED = "already_resolved"
    EXPIRED = "expired"  # the waiter timed out or was cancelled first


@dataclass(frozen=True)
class RegistryMetrics:
    """Counters of this registry instance (one per process; sum them across processes)."""

    pending: int  # requests waiting in this process now
    resolved: int  # answers accepted by `resolve` here
    expired: int  # waits here that ended by timeout
    rejected: int  # answers refused by `resolve` here (not_found, already_resolved, expired)


@dataclass(frozen=True)
class Answer:
    success: bool
    result: Any
    error: str | None

    @classmethod
    def of(cls, success: bool, result: Any, error: object) -> Answer:
        text = None if error is None else str(error)[:MAX_ERROR_CHARS]
        return cls(bool(success), result, text)


class PendingRequestRegistry(Protocol):
    """Frontend requests that wait for the browser's answer (issue 6)."""

    worker_id: str

    async def request(
        self,
        user_id: int,
        conversation_id: str,
        skill: str,
        action: str,
        payload: Any,
        timeout_s: float,
    ) -> Any:
        """Emit `skill:request` and return the browser's result.

        Raises `RequestTimeout` (`request_timeout`) when no answer comes within `timeout_s`
        seconds, `FrontendError` (`frontend_error`) when the browser reports a failure.
        """
        ...

    async def resolve(
        self,
        user_id: int,
        request_id: str,
        success: bool,
        result: Any = None,
        error: str | None = None,
    ) -> Outcome:
        """Deliver an answer; only the request's user can, and only once."""
        ...

    def metrics(self) -> RegistryMetrics: ...

    async def start(self) -> None: ...

    async def aclose(self) -> None: ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None: ...


class _RegistryCore(abc.ABC):
    """The waiting side, shared. Subclasses store requests and route answers to `_deliver`."""

    worker_id: str

    def __init__(self, channel: FrontendChannel) -> None:
        self._channel = channel
        self._waiters: dict[str, asyncio.Future[Answer]] = {}
        self._resolved = self._expired = self._rejected = 0

    # --- storage hooks -------------------------------------------------------------------

    @abc.abstractmethod
    async def _register(self, request_id: str, user_id: int, timeout_s: float) -> None:
        """Store the request (owner included) before the browser can see its id."""

    @abc.abstractmethod
    async def _claim(self, user_id: int, request_id: str, answer: Answer) -> Outcome:
        """Atomically accept the first answer of the owner; classify every other one."""

    @abc.abstractmethod
    async def _expire(self, request_id: str) -> Answer | None:
        """At the deadline: mark expired, unless an answer got stored first (then return it)."""

    @abc.abstractmethod
    def _abandon(self, request_id: str) -> None:
        """The wait ended without an answer (cancelled, emit failed): later answers expire."""

    # --- the interface -------------------------------------------------------------------

    async def request(
        self,
        user_id: int,
        conversation_id: str,
        skill: str,
        action: str,
        payload: Any,
        timeout_s: float,
    ) -> Any:
        with tracer.start_as_current_span("browser.request"):
            return await self._request(user_id, conversation_id, skill, action, payload, timeout_s)

    async def _request(
        self,
        user_id: int,
        conversation_id: str,
        skill: str,
        action: str,
        payload: Any,
        timeout_s: float,
    ) -> Any:
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        request_id = secrets.token_urlsafe(18)  # 144 random bits: unguessable
        waiter: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._waiters[request_id] = waiter
        try:
            await self._register(request_id, user_id, timeout_s)
            honour_cancellation()
            event = {"request_id": request_id, "skill_name": skill, "action": action}
            await self._channel.emit(conversation_id, REQUEST_EVENT, {**event, "data": payload})
            honour_cancellation()
            # asyncio.wait, not wait_for: a timeout must not cancel an answer being delivered.
            done, _ = await asyncio.wait((waiter,), timeout=timeout_s)
            answer = waiter.result() if done else await self._expire(request_id)
            honour_cancellation()
        except BaseException:
            if not waiter.done():
                self._abandon(request_id)
            raise
        finally:
            del self._waiters[request_id]
        details = {"request_id": request_id, "skill": skill, "action": action}
        if answer is None:
            self._expired += 1
            raise RequestTimeout(
                f"the browser did not answer {skill}.{action} within {timeout_s:g} s",
                details={**details, "timeout_s": timeout_s},
            )
        if not answer.success:
            reason = answer.error or "no error message"
            raise FrontendError(
                f"the browser failed {skill}.{action}: {reason}",
                details={**details, "error": reason},
            )
        return answer.result

    async def resolve(
        self,
        user_id: int,
        request_id: str,
        success: bool,
        result: Any = None,
        error: str | None = None,
    ) -> Outcome:
        if not isinstance(request_id, str) or not 0 < len(request_id) <= MAX_REQUEST_ID:
            outcome = Outcome.NOT_FOUND
        else:
            outcome = await self._claim(user_id, request_id, Answer.of(success, result, error))
            honour_cancellation()
        if outcome is Outcome.RESOLVED:
            self._resolved += 1
        else:
            self._rejected += 1
        return outcome

    def metrics(self) -> RegistryMetrics:
        return RegistryMetrics(
            pending=len(self._waiters),
            resolved=self._resolved,
            expired=self._expired,
            rejected=self._rejected,
        )

    @abc.abstractmethod
    async def start(self) -> None: ...

    @abc.abstractmethod
    async def aclose(self) -> None: ...

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # --- for subclasses ------------------------------------------------------------------

    def _deliver(self, request_id: str, answer: Answer) -> bool:
        """Wake the local waiter of `request_id`, if any; False if none is waiting here."""
        waiter = self._waiters.get(request_id)
        if waiter is None or waiter.done():
            return False
        waiter.set_result(answer)
        return True


def honour_cancellation() -> None:
    """Raise `CancelledError` if this task was cancelled but the cancellation got lost.

    On Python 3.11, `asyncio.wait_for` (which redis-py uses to send commands) swallows a
    cancellation that lands just as the I/O completes (CPython gh-86296). The task still counts
    the request (`cancelling()`), so a cancelled turn stops here instead of waiting on.
    """
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError
