"""Run one chat turn: load what it needs, stream chat_shell's events, persist the answer.

The same code runs in the gateway (embedded mode) and in `skillhive worker` processes. It is
idempotent per user message: a turn whose answer is already stored only re-announces it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from cryptography.fernet import Fernet
from langchain_core.language_models import BaseChatModel
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from backend.artifacts.turn_files import turn_access
from backend.chat import conversations, skill_versions
from backend.chat.builder import (
    TurnInputs,
    build_turn_request,
    global_servers,
    needs_secrets,
    wanted_skills,
)
from backend.chat.catalog import (
    FittingCatalogs,
    GhostSkillDirectory,
    SkillSpecCache,
    turn_skills,
)
from backend.chat.commands import unescape
from backend.chat.skill_versions import SkillChangedEvent, UsedVersion
from backend.chat.transport.base import TransportFrontend, TurnTransport
from backend.chat.transport.envelope import StoredMessage, TurnEnded, TurnEvent
from backend.config import Settings
from backend.db.models import Message
from backend.errors import SkillhiveError, Unauthorized
from backend.ghosts.resolve import GhostCache, ghost_skills, resolve_skills
from backend.ops.metrics import TurnObservation, model_label
from backend.ops.quotas import Quotas, with_overrides
from backend.ops.tracing import tracer
from backend.ops.usage import TurnAccount, record_calls
from backend.plugins.commands import invocation_for
from backend.secrets import service as secrets
from backend.skills.search.semantic import ranker_for
from chat_shell import (
    ChatShellError,
    ErrorEvent,
    Event,
    PackageSource,
    SandboxAccess,
    SkillDirectory,
    TurnRequest,
    UsageEvent,
    run_turn,
)

log = logging.getLogger("skillhive.chat")

Release = Callable[[], Awaitable[None]]


@dataclass(frozen=True)
class PreparedTurn:
    request: TurnRequest
    directory: SkillDirectory  # the Ghost's skills beyond those the request carries
    ghost: str = ""  # ops: "ns/name", for usage accounting
    token_limit: int | None = None  # ops: the user's tokens per day
    # Versions of the skills the turn started with or loaded (the directory adds to it), and
    # the loaded skills that are another version than the conversation's last good turn used.
    versions: dict[str, UsedVersion] = field(default_factory=dict)
    changes: tuple[SkillChangedEvent, ...] = ()


@dataclass
class _Progress:
    text: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, int] = field(
        default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0}
    )
    calls: list[UsageEvent] = field(default_factory=list)  # ops: one per model call

    def add(self, event: Event) -> None:
        if event.type == "token":
            self.text.append(event.delta)
        elif event.type == "tool_end":
            self.tool_calls.append(event.model_dump(mode="json", exclude={"type"}))
        elif event.type == "usage":
            self.calls.append(event)
            self.usage["prompt_tokens"] += event.prompt_tokens
            self.usage["completion_tokens"] += event.completion_tokens


async def _call(release: Release | None) -> None:
    if release is None:
        return
    try:
        await release()
    except Exception:  # the answer is stored; announcing it matters more than the lock
        log.exception("releasing the conversation failed")


class TurnRunner:
    def __init__(
        self,
        *,
        sessionmaker: async_sessionmaker[AsyncSession],
        settings: Settings,
        cipher: Fernet,
        package_source: PackageSource,
        transport: TurnTransport,
        model: BaseChatModel | None = None,
        sandbox: SandboxAccess | None = None,
        slots: int | None = None,
        quotas: Quotas | None = None,
    ) -> None:
        # At most `slots` turns run at once; the others wait, holding nothing (None: no bound).
        self._slots = asyncio.Semaphore(slots) if slots is not None else None
        self.quotas = quotas  # ops: tokens per day, charged per model call
        self.sessionmaker = sessionmaker
        self.engine: AsyncEngine = sessionmaker.kw["bind"]  # the pool the sessions use
        self.settings = settings
        self.cipher = cipher
        self.package_source = package_source
        self.transport = transport  # where events go; its registry holds browser requests
        self.frontend = TransportFrontend(transport)
        # Turns asked to stop. Checked after every event as well as cancelling the task:
        # redis-py can swallow a task cancellation that lands while a Redis call completes.
        self._cancel_requested: set[int] = set()
        self.model = model  # tests and benchmarks inject a fake; None builds it from settings
        self.sandbox = sandbox  # where skill_run runs; None: the tool is not offered
        self.skill_specs = SkillSpecCache()
        self.catalogs = FittingCatalogs()  # catalogs that fit, by their owners' generations
        self.ghosts = GhostCache()
        self.mcp_servers = global_servers(settings)  # the server's, parsed once

    async def _publish(self, envelope: TurnEvent | TurnEnded) -> None:
        try:
            await self.transport.publish(envelope)
        except Exception:  # a lost event must not break the turn
            log.exception("publishing an event of conversation %s failed", envelope.conversation_id)

    def request_cancel(self, message_id: int) -> None:
        """Stop the turn answering `message_id` (the caller also cancels its task)."""
        self._cancel_requested.add(message_id)

    async def prepare(self, conversation_id: str, message_id: int) -> PreparedTurn | Message:
        """The turn's request, or the stored answer when this turn already ran (a retry)."""
        async with self.sessionmaker() as session:
            # The window and the Ghost: Core statements on the session's connection (one
            # checkout, no ORM loading); the Ghost is validated once per stored version.
            connection = await session.connection()
            window = await conversations.turn_window(
                connection, conversation_id, message_id, history=self.settings.history_messages
            )
            if window.reply is not None:
                return window.reply
            if window.user_message is None or window.owned is None:
                raise SkillhiveError("the user message is gone", code="message_not_found")
            owned = window.owned
            if not owned.user_active:  # deactivated while the turn waited: none of its secrets
                raise Unauthorized("user is deactivated", code="user_inactive")
            ghost = await self.ghosts.resolve(
                connection, owned.user_id, owned.ghost, window.ghost_text
            )
            pinned = ghost.pins  # `name@3` in spec.skills
            ghost = ghost.unpinned  # the rest of the turn reads bare names
            # A `/command` becomes the request and preloads its skills (backend/chat/commands.py).
            message = window.user_message.content
            invocation = await invocation_for(session, ghost.owner, ghost.spec, message)
            if invocation is not None:
                ghost = ghost.with_preloads(invocation.skills)
            message = invocation.request if invocation is not None else unescape(message)
            source = ghost_skills(ghost.owner, ghost.spec)
            budget = ghost.spec.catalog_budget_tokens
            skills = await turn_skills(
                session,
                source,
                self.skill_specs,
                budget_tokens=self.settings.catalog_budget_tokens if budget is None else budget,
                message=message,
                wanted=wanted_skills(
                    ghost.spec, window.history, window.user_turns_before, self.settings
                ),
                threshold=self.settings.skill_search_threshold,
                pins=pinned,
                rerank=ranker_for(self.settings),
                kept=(self.catalogs, window.generations),
            )
            # The recorded versions matter only for skills the turn starts with in full.
            before = (
                await skill_versions.recorded(session, conversation_id) if skills.versions else {}
            )
            preloads = ghost.spec.preload_skills
            preloaded = await resolve_skills(session, ghost.owner, preloads) if preloads else []
            disabled = [s.metadata.name for s in preloaded if not s.status.enabled]
            limits = with_overrides(self.settings, owned.quota_overrides)  # ops
            user_secrets: dict[str, str] = {}
            if needs_secrets(ghost, self.mcp_servers, skills_use_secrets=skills.uses_secrets):
                user_secrets = await secrets.values(session, self.cipher, owned.user_id)
        inputs = TurnInputs(
            conversation_id=conversation_id,
            user_id=owned.user_id,
            user_name=owned.user_name,
            ghost=ghost,
            catalog=skills.catalog,
            skills=skills.specs,
            skill_search=skills.search,
            history=window.history,
            user_turns_before=window.user_turns_before,
            user_message=message,
            secrets=user_secrets,
            disabled_preloads=disabled,
            global_servers=self.mcp_servers,
        )
        directory = GhostSkillDirectory(
            self.sessionmaker,
            source,
            self.skill_specs,
            threshold=self.settings.skill_search_threshold,
            pins=pinned,
            used=dict(skills.versions),
            rerank=ranker_for(self.settings),
        )
        return PreparedTurn(
            build_turn_request(inputs, self.settings),
            directory,
            ghost=owned.ghost,
            token_limit=limits["tokens_per_day"],
            versions=directory.used,
            changes=tuple(skill_versions.changes(before, skills.versions)),
        )

    async def run(
        self, conversation_id: str, message_id: int, *, release: Release | None = None
    ) -> Message | None:
        """Run the turn and store its answer. `release` frees the conversation for the next
        send; it runs after the answer is stored and before the end is announced, so a client
        reacting to it can send at once. None when the answer could not be stored (e.g. the
        conversation was deleted meanwhile): the turn is over, not retried. A turn running past
        `turn_deadline_s` ends with `turn_timeout`."""
        with tracer.start_as_current_span("chat.turn"):  # ops: model and tool spans nest here
            return await self._run(conversation_id, message_id, release)

    async def _run(
        self, conversation_id: str, message_id: int, release: Release | None
    ) -> Message | None:
        progress = _Progress()
        outcome: Event | None = None
        slot = False
        account: TurnAccount | None = None
        observed: TurnObservation | None = None  # ops: metrics of this turn
        used: dict[str, UsedVersion] = {}  # skill versions of this turn, recorded if it is good
        deadline = asyncio.timeout(self.settings.turn_deadline_s)
        try:
            if self._slots is not None:  # inside the try: a cancel while waiting is a cancel
                await self._slots.acquire()
                slot = True
            async with deadline:
                prepared = await self.prepare(conversation_id, message_id)
                if isinstance(prepared, Message):  # a retry of a finished turn: announce it
                    self._cancel_requested.discard(message_id)
                    await _call(release)
                    await self._end(conversation_id, message_id, None, prepared)
                    return prepared
                request = prepared.request
                used = prepared.versions
                account = TurnAccount(
                    request.user_id, prepared.ghost, request.model.name, conversation_id, message_id
                )
                observed = TurnObservation(
                    model_label(request.model.name, self.settings),
                    frozenset(s.name for s in request.skills if s.public),
                    enabled=self.settings.metrics,
                )
                outcome = await self._stream(
                    conversation_id, message_id, prepared, progress, observed
                )
            if deadline.expired():  # chat_shell turned the deadline's cancellation into an event
                outcome = self._timed_out()
        except TimeoutError:
            if deadline.expired():
                outcome = self._timed_out()
            else:  # not ours: something inside gave up
                log.exception("turn of conversation %s failed", conversation_id)
                outcome = ErrorEvent(code="internal_error", message="TimeoutError")
        except asyncio.CancelledError:
            outcome = ErrorEvent(code="cancelled", message="the turn was cancelled")
        except (SkillhiveError, ChatShellError) as exc:
            outcome = ErrorEvent(code=exc.code, message=exc.message)
        except Exception as exc:
            log.exception("turn of conversation %s failed", conversation_id)
            outcome = ErrorEvent(code="internal_error", message=type(exc).__name__)
        finally:
            if slot and self._slots is not None:
                self._slots.release()
        self._cancel_requested.discard(message_id)
        if observed is not None:
            observed.finish(outcome.code if isinstance(outcome, ErrorEvent) else None)
        error = outcome if isinstance(outcome, ErrorEvent) else None
        if outcome is None:
            error = ErrorEvent(code="internal_error", message="turn failed")
        try:
            message: Message | None = await self._persist(
                conversation_id, message_id, outcome, progress, account, used
            )
        except Exception:
            log.exception("the answer to message %s could not be stored", message_id)
            message = None
            error = ErrorEvent(code="turn_not_stored", message="not stored")
        await _call(release)
        await self._end(conversation_id, message_id, error, message)
        return message

    def _timed_out(self) -> ErrorEvent:
        limit = self.settings.turn_deadline_s
        return ErrorEvent(
            code="turn_timeout", message=f"the turn ran past its deadline of {limit:g} s"
        )

    async def _over_budget(self, prepared: PreparedTurn, usage: UsageEvent) -> bool:
        if self.quotas is None:
            return False
        tokens = usage.prompt_tokens + usage.completion_tokens
        return await self.quotas.charge_tokens(
            prepared.request.user_id, tokens, prepared.token_limit
        )

    async def _stream(
        self,
        conversation_id: str,
        message_id: int,
        prepared: PreparedTurn,
        progress: _Progress,
        observed: TurnObservation,
    ) -> Event | None:
        """Run chat_shell's turn, publishing its progress; its `done` or `error` (or
        `quota_exceeded` once a model call spent the user's tokens of the day)."""
        turn = run_turn(
            prepared.request,
            skills=prepared.directory,
            package_source=self.package_source,
            frontend=self.frontend,
            model=self.model,
            pending_requests=self.transport.registry,
            sandbox=turn_access(
                self.sandbox, self.sessionmaker, self.settings, conversation_id, message_id
            ),
        )
        async with aclosing(turn) as events:
            async for event in events:
                if message_id in self._cancel_requested:
                    raise asyncio.CancelledError
                if event.type in ("done", "error"):
                    return event
                progress.add(event)
                observed.event(event)
                await self._publish(
                    TurnEvent(conversation_id=conversation_id, message_id=message_id, event=event)
                )
                if event.type == "start":  # before the model runs: which skills changed
                    for change in prepared.changes:
                        await self._publish(
                            TurnEvent(
                                conversation_id=conversation_id, message_id=message_id, event=change
                            )
                        )
                if event.type == "usage" and await self._over_budget(prepared, event):
                    return ErrorEvent(
                        code="quota_exceeded",
                        message="the user's tokens per day are spent; the turn stopped "
                        "after its last model call",
                    )
        return None

    async def _end(
        self, conversation_id: str, message_id: int, error: ErrorEvent | None, reply: Message | None
    ) -> None:
        await self._publish(
            TurnEnded(
                conversation_id=conversation_id,
                message_id=message_id,
                error=error,
                reply=StoredMessage.of(reply) if reply is not None else None,
            )
        )

    async def _persist(
        self,
        conversation_id: str,
        message_id: int,
        outcome: Event | None,
        progress: _Progress,
        account: TurnAccount | None = None,
        used: dict[str, UsedVersion] | None = None,
    ) -> Message:
        # Prebuilt Core statements on a connection: no Session, no unit of work.
        async with self.engine.connect() as session:
            if account is not None:  # ops: committed with the answer, or not at all
                await record_calls(session, account, progress.calls)
            if outcome is not None and outcome.type == "done":
                # The versions of the skills still loaded, committed with the answer.
                loaded = {s.name for s in outcome.loaded_skills}
                kept = {n: v for n, v in (used or {}).items() if n in loaded}
                await skill_versions.record(session, conversation_id, kept)
                return await conversations.add_reply(
                    session,
                    conversation_id,
                    message_id,
                    content=outcome.text,
                    status="ok",
                    tool_calls=[c.model_dump(mode="json") for c in outcome.tool_calls],
                    loaded_skills=[s.model_dump(mode="json") for s in outcome.loaded_skills],
                    usage=outcome.usage.model_dump(mode="json"),
                )
            error = outcome if isinstance(outcome, ErrorEvent) else None
            code = error.code if error else "internal_error"
            return await conversations.add_reply(
                session,
                conversation_id,
                message_id,
                content="".join(progress.text),
                status="cancelled" if code == "cancelled" else "error",
                tool_calls=progress.tool_calls,
                loaded_skills=None,  # state comes from the last good turn (chat_shell looks back)
                usage=progress.usage,
                error={"code": code, "message": error.message if error else "turn failed"},
            )
