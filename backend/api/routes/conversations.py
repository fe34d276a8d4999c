"""Conversations and chat over REST: JSON (wait for the answer) or SSE (stream the turn)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from sqlalchemy.ext.asyncio import AsyncSession

from backend.api.deps import (
    ChatDep,
    CurrentIdentity,
    CurrentUser,
    LiveAuthDep,
    SessionDep,
    TextId,
    TransportDep,
)
from backend.api.errors import errors
from backend.api.sse import sse_frame, sse_refused
from backend.chat import conversations
from backend.chat.runtime import ReadOverrides
from backend.chat.transport import TurnEnded, TurnEnvelope, message_json
from backend.db.models import Conversation
from backend.db.types import NoNul
from backend.errors import ServiceUnavailable
from backend.ghosts.resolve import ghost_row
from backend.ops.quotas import check_stored
from backend.ops.usage import conversation_totals

router = APIRouter(prefix="/conversations", tags=["conversations"])


class ConversationCreate(BaseModel):
    ghost: Annotated[str, NoNul] = Field(
        min_length=3, max_length=140, description='"ns/name" or "public/name"'
    )
    title: Annotated[str, NoNul] | None = Field(None, max_length=conversations.TITLE_CHARS)


Title = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=conversations.TITLE_CHARS),
    NoNul,
]


class ConversationRename(BaseModel):
    title: Title


class ConversationUsage(BaseModel):
    """Running totals of the conversation's model calls (backend/ops/usage.py)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class ConversationOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    ghost: str
    title: str
    created_at: datetime
    updated_at: datetime
    usage: ConversationUsage = Field(default_factory=ConversationUsage)


async def _with_usage(session: AsyncSession, rows: Sequence[Conversation]) -> list[ConversationOut]:
    totals = await conversation_totals(session, [r.id for r in rows])  # ops
    out = []
    for row in rows:
        item = ConversationOut.model_validate(row)
        if (t := totals.get(row.id)) is not None:
            item.usage = ConversationUsage(
                prompt_tokens=t.prompt_tokens,
                completion_tokens=t.completion_tokens,
                total_tokens=t.total_tokens,
            )
        out.append(item)
    return out


class ConversationList(BaseModel):
    items: list[ConversationOut]
    continue_: str | None = Field(None, alias="continue", serialization_alias="continue")


class MessageIn(BaseModel):
    content: conversations.MessageText


class MessageOut(BaseModel):
    """A stored message (`StoredMessage` in `backend/chat/transport/envelope.py`)."""

    id: int
    conversation_id: str
    role: Literal["user", "assistant"]
    content: str
    status: str = Field(description="`ok`, `error` or `cancelled`")
    reply_to: int | None = Field(description="an answer's user message")
    tool_calls: list[dict[str, Any]]
    loaded_skills: list[dict[str, Any]] | None = Field(
        description="skills in context after an answer; null when a failed turn kept the last"
    )
    usage: dict[str, Any]
    error: dict[str, Any] | None
    created_at: datetime


class MessageList(BaseModel):
    items: list[MessageOut]
    continue_: str | None = Field(alias="continue")


class CancelResult(BaseModel):
    cancelled: bool = Field(description="false when no turn was running")


# 422: an id that cannot be one (NUL, over 64 characters: `TextId`)
_NOT_FOUND = errors((404, "no such conversation of the caller (`conversation_not_found`)"), 422)
_SSE_EVENTS = (
    "`start`, `token`, `tool_start`, `tool_end`, `skill_loaded`, `skill_error`, `mcp_error`, "
    "`artifact`, `mcp_call`, `usage`, then `done` or `error`"
)


# The turn's route first: FastAPI tries a router's routes in order, and this is the busiest.
@router.post(
    "/{conversation_id}/messages",
    response_model=MessageOut,
    responses={
        200: {
            "description": "the stored answer (JSON), or with `Accept: text/event-stream` the "
            f"turn's events as Server-Sent Events: {_SSE_EVENTS}; each `data:` is the event as "
            "JSON, `X-Message-Id` names the user message",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        },
        **_NOT_FOUND,
        **errors(
            (409, "a turn of this conversation is running (`turn_in_progress`)"),
            422,
            (
                429,
                "the caller has `SKILLHIVE_MAX_CONCURRENT_TURNS_PER_USER` turns running "
                "(`too_many_turns`), or a quota is reached (`quota_turns_per_minute`, "
                "`quota_tokens_per_day`); with `Retry-After`, nothing was stored",
            ),
            (503, "a backing service is unavailable, or the answer could not be stored"),
        ),
    },
)
async def send_message(
    conversation_id: TextId,
    body: MessageIn,
    caller: CurrentIdentity,  # user, token and quota overrides: one dependency on the hot path
    request: Request,
    chat: ChatDep,
    transport: TransportDep,
    live_auth: LiveAuthDep,
) -> Response:
    """Run a turn. `Accept: text/event-stream` streams its events; otherwise the answer (JSON)
    comes back once the turn ends. A second send while a turn runs is 409 `turn_in_progress`;
    one more turn than the caller may run at once is 429 `too_many_turns`. When the token is
    revoked or expires, or the user is deactivated, before the turn ends, its turn is cancelled
    and a stream ends with `error`, a JSON wait with 401 (`token_revoked`, `token_expired`,
    `user_inactive`)."""
    stack = AsyncExitStack()
    streamed = "text/event-stream" in request.headers.get("accept", "")
    # Subscribe before the turn starts, so no event can slip past; the JSON answer needs the
    # turn's end only.
    events: AsyncIterator[TurnEnvelope] = await stack.enter_async_context(
        transport.subscribe(conversation_id, ends_only=not streamed)
    )
    # A turn's answer, streamed or not, goes to the caller only while its grant holds (as a
    # socket's: backend/ws/live_auth.py).
    access = await stack.enter_async_context(live_auth.stream(caller.token))
    try:
        message_id = await chat.send(
            caller.user.id,
            conversation_id,
            body.content,
            overrides=ReadOverrides(caller.quota_overrides),
        )
    except BaseException:
        await stack.aclose()
        raise

    if streamed:

        async def stream() -> AsyncIterator[bytes]:
            try:
                async for envelope in access.until_refused(events):
                    if envelope.message_id != message_id:
                        continue  # another turn's (e.g. a retried earlier one) announcement
                    yield sse_frame(envelope)
                    if isinstance(envelope, TurnEnded):
                        return
                if access.refused is not None:  # the caller lost access: so does the turn
                    await transport.cancel(conversation_id)
                    yield sse_refused(conversation_id, message_id, access.refused)
            finally:
                await stack.aclose()

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
                "X-Message-Id": str(message_id),
            },
        )

    async with stack:
        reply = None
        async for envelope in access.until_refused(events):
            if isinstance(envelope, TurnEnded) and envelope.message_id == message_id:
                reply = envelope.reply
                break
        if reply is None and access.refused is not None:  # lost access first: so does the turn
            await transport.cancel(conversation_id)
            raise access.refused
    if reply is None:
        raise ServiceUnavailable(
            "the turn ended but its answer could not be stored", code="turn_not_stored"
        )
    # pydantic's serializer, not a dict for `json.dumps`: the same JSON, in a fraction of the time
    return Response(reply.model_dump_json(), media_type="application/json")


@router.post(
    "",
    status_code=201,
    responses=errors(
        (404, "the caller may not use that Ghost, or it does not exist (`ghost_not_found`)"),
        422,
        (429, "the caller's conversations quota is reached (`quota_conversations`)"),
    ),
)
async def create_conversation(
    body: ConversationCreate,
    user: CurrentUser,
    session: SessionDep,
    request: Request,
    chat: ChatDep,
) -> ConversationOut:
    await ghost_row(session, user.id, body.ghost)  # 404 unless the caller may use it
    await check_stored(session, request.app.state.settings, user.id, {"conversations": 1})  # ops
    created = await conversations.create(
        session, user.id, body.ghost, body.title or conversations.DEFAULT_TITLE
    )
    await session.commit()
    chat.owned_by(created.id, user.id)  # its first send need not read who owns it
    return ConversationOut.model_validate(created)


@router.get("", response_model_by_alias=True, responses=errors(422))
async def list_conversations(
    user: CurrentUser,
    session: SessionDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    continue_: Annotated[str | None, Query(alias="continue")] = None,
) -> ConversationList:
    rows, token = await conversations.list_page(session, user.id, limit=limit, token=continue_)
    return ConversationList(items=await _with_usage(session, rows), **{"continue": token})


@router.get("/{conversation_id}", responses=_NOT_FOUND)
async def get_conversation(
    conversation_id: TextId, user: CurrentUser, session: SessionDep
) -> ConversationOut:
    row = await conversations.get(session, user.id, conversation_id)
    return (await _with_usage(session, [row]))[0]


@router.patch("/{conversation_id}", responses=_NOT_FOUND)
async def rename_conversation(
    conversation_id: TextId, body: ConversationRename, user: CurrentUser, session: SessionDep
) -> ConversationOut:
    """Change the conversation's title."""
    row = await conversations.rename(session, user.id, conversation_id, body.title)
    await session.commit()
    return (await _with_usage(session, [row]))[0]


@router.delete("/{conversation_id}", status_code=204, responses=_NOT_FOUND)
async def delete_conversation(
    conversation_id: TextId, user: CurrentUser, session: SessionDep, transport: TransportDep
) -> Response:
    await conversations.get(session, user.id, conversation_id)
    await session.commit()  # ends the read: no connection held while the turn stops
    await transport.cancel(conversation_id)
    await conversations.delete(session, user.id, conversation_id)
    await session.commit()
    return Response(status_code=204)


@router.post("/{conversation_id}/cancel", responses=_NOT_FOUND)
async def cancel_turn(
    conversation_id: TextId, user: CurrentUser, session: SessionDep, transport: TransportDep
) -> CancelResult:
    """Cancel the running turn (it ends with `cancelled`); `cancelled: false` if none ran."""
    await conversations.get(session, user.id, conversation_id)
    await session.commit()  # ends the read: no connection held while the turn stops
    return CancelResult(cancelled=await transport.cancel(conversation_id))


@router.get(
    "/{conversation_id}/messages",
    response_model=MessageList,
    responses=_NOT_FOUND,
)
async def list_messages(
    conversation_id: TextId,
    user: CurrentUser,
    session: SessionDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    continue_: Annotated[str | None, Query(alias="continue")] = None,
) -> JSONResponse:
    await conversations.get(session, user.id, conversation_id)
    rows, token = await conversations.messages_page(
        session, conversation_id, limit=limit, token=continue_
    )
    return JSONResponse({"items": [message_json(m) for m in rows], "continue": token})
