"""Conversations and their messages: the only code that reads or writes those tables."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, cast

from pydantic import Field
from sqlalchemy import (
    Case,
    ColumnExpressionArgument,
    Integer,
    ScalarSelect,
    Table,
    Text,
    and_,
    bindparam,
    case,
    exists,
    func,
    insert,
    literal,
    or_,
    select,
    update,
)
from sqlalchemy.engine import CursorResult
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from backend.db.detached import as_loaded
from backend.db.hot_reads import HotRead
from backend.db.hot_writes import HotWrite
from backend.db.models import (
    SYSTEM_USER_ID,
    Conversation,
    Message,
    SkillGeneration,
    User,
    UserQuota,
)
from backend.db.types import NoNul, utcnow
from backend.errors import NotFound
from backend.ghosts.resolve import ghost_text_of
from backend.kinds import cursor

# The turn's hot path runs its prebuilt Core statements on a plain connection where it can: a
# Session around one or two statements cost more CPU than the statements (pool checkout, ORM
# execution, closing). Both have the same `execute` and `commit`.
Executor = AsyncSession | AsyncConnection

TITLE_CHARS = 80
DEFAULT_TITLE = "New conversation"  # until the first message names the conversation
# The most characters of one user message (REST and Socket.IO alike).
MAX_MESSAGE_CHARS = 100_000
# A user message as REST and Socket.IO take it.
MessageText = Annotated[str, Field(min_length=1, max_length=MAX_MESSAGE_CHARS), NoNul]

# The statements every turn runs, built once with bind parameters: building a statement and its
# cache key cost more than SQLite took to run it (SQLAlchemy memoizes a built statement's key).
_OWNED_WITH_OVERRIDES = HotRead(
    select(Conversation.id, UserQuota.limits)
    .outerjoin(UserQuota, UserQuota.user_id == Conversation.user_id)
    .where(Conversation.id == bindparam("cid"), Conversation.user_id == bindparam("uid"))
)
_TOUCH = HotWrite(
    update(Conversation)
    .where(Conversation.id == bindparam("cid"), Conversation.user_id == bindparam("uid"))
    .values(
        updated_at=bindparam("now"),
        title=case(
            (Conversation.title == DEFAULT_TITLE, bindparam("new_title")),
            else_=Conversation.title,
        ),
    )
    .execution_options(synchronize_session=False)  # no conversation is loaded here
)
# Core, not the ORM's unit of work: the send needs only the new id.
_MESSAGES = cast(Table, Message.__table__)
_ADD_USER_MESSAGE = (
    insert(_MESSAGES)
    .values(conversation_id=bindparam("cid"), role="user", content=bindparam("content"))
    .returning(_MESSAGES.c.id)
)
# The same, only into a conversation of the user's (no row: none, or deleted meanwhile): the
# send's touch goes ahead unchecked (`defer`), this checks.
_ADD_USER_MESSAGE_IF_OWNED = HotWrite(
    insert(_MESSAGES)
    .from_select(
        ["conversation_id", "role", "content"],
        select(bindparam("cid"), literal("user"), bindparam("content")).where(
            exists().where(
                Conversation.id == bindparam("cid"), Conversation.user_id == bindparam("uid")
            )
        ),
    )
    .returning(_MESSAGES.c.id)
)
# An answer, every column given (the returned message is built from the same values).
_REPLY_COLUMNS = (
    "conversation_id",
    "role",
    "content",
    "status",
    "reply_to",
    "tool_calls",
    "loaded_skills",
    "usage",
    "error",
    "created_at",
)
_ADD_REPLY = HotWrite(
    insert(_MESSAGES)
    .values({name: bindparam(name) for name in _REPLY_COLUMNS})
    .returning(_MESSAGES.c.id)
)


def _generation(user_id: ColumnExpressionArgument[int] | int) -> ScalarSelect[str]:
    """A user's skill generation as text, `-` without one (search/sample.py's form)."""
    return (
        select(func.coalesce(SkillGeneration.generation.cast(Text), "-"))
        .where(SkillGeneration.user_id == user_id)
        .scalar_subquery()
    )


def _on_user_message(value: ScalarSelect[str]) -> Case[str]:
    """`value` on the user message's row only (a CASE, so its subquery runs once)."""
    return case((_MESSAGES.c.id == bindparam("mid"), value))


# A turn's conversation, its owner and their quota overrides, with the message window: one
# query (the outer join still yields the owner when no message matches). Core columns, not
# entities: loading ORM objects for every message of the window cost a turn more CPU than the
# query (only a retried turn's stored answer becomes a `Message`).
# The Ghost's stored JSON and the skill generations of the owner and of the public skills come
# on the user message's row only (a CASE, so the subqueries run once): the turn needs no
# statement of its own to read them (the generations tell whether a kept catalog still holds:
# backend/chat/catalog.py).
_WINDOW = HotRead(
    select(
        Conversation.ghost,
        User.id.label("user_id"),
        User.name.label("user_name"),
        User.is_active,
        UserQuota.limits,
        case(
            (
                _MESSAGES.c.id == bindparam("mid"),
                ghost_text_of(Conversation.ghost, Conversation.user_id),
            )
        ).label("ghost_text"),
        _on_user_message(_generation(Conversation.user_id)).label("user_generation"),
        _on_user_message(_generation(SYSTEM_USER_ID)).label("public_generation"),
        *(c.label(f"m_{c.key}") for c in _MESSAGES.c),
    )
    .select_from(Conversation)
    .join(User, User.id == Conversation.user_id)
    .outerjoin(UserQuota, UserQuota.user_id == User.id)
    .outerjoin(
        _MESSAGES,
        and_(
            _MESSAGES.c.conversation_id == Conversation.id,
            or_(_MESSAGES.c.id <= bindparam("mid"), _MESSAGES.c.reply_to == bindparam("mid")),
        ),
    )
    .where(Conversation.id == bindparam("cid"))
    .order_by(_MESSAGES.c.id.desc())
    .limit(bindparam("rows", type_=Integer))
)
_MESSAGE_KEYS = tuple(c.key for c in _MESSAGES.c)
_FIRST_MESSAGE_COLUMN = 8  # _WINDOW's columns before the message's


@dataclass(frozen=True)
class Owned:
    """A turn's conversation as the runner needs it: its Ghost and its owner."""

    ghost: str  # the conversation's Ghost reference ("ns/name" or "public/name")
    user_id: int
    user_name: str
    user_active: bool
    quota_overrides: dict[str, Any] | None  # the owner's `user_quotas.limits` (None: no row)


@dataclass(frozen=True, slots=True)
class WindowMessage:
    """A message of a turn's window, with the columns a turn reads."""

    id: int
    role: str
    content: str
    reply_to: int | None
    tool_calls: list[dict[str, Any]] | None
    loaded_skills: list[dict[str, Any]] | None


@dataclass(frozen=True)
class TurnWindow:
    """What a turn for one user message needs from the conversation, its owner and the
    message table, in one query."""

    owned: Owned | None  # None: the conversation is gone
    user_message: WindowMessage | None
    ghost_text: str | None  # the Ghost's stored JSON, read with the user message (None: none)
    # user id -> skill generation (`-`: none) of the owner and the public skills' owner, read
    # with the user message (empty: none)
    generations: Mapping[int, str]
    reply: Message | None  # the stored answer (detached), if this turn already ran
    history: list[WindowMessage]  # oldest first, at most `history`, before the user message
    user_turns_before: int  # user messages older than the window (keeps turn indices exact)


async def create(session: AsyncSession, user_id: int, ghost: str, title: str) -> Conversation:
    conversation = Conversation(
        id=str(uuid.uuid4()), user_id=user_id, ghost=ghost, title=title[:TITLE_CHARS]
    )
    session.add(conversation)
    await session.flush()
    return conversation


async def rename(
    session: AsyncSession, user_id: int, conversation_id: str, title: str
) -> Conversation:
    """Set the title of the user's conversation (404 if it is not theirs)."""
    conversation = await get(session, user_id, conversation_id)
    conversation.title = title[:TITLE_CHARS]
    await session.flush()
    return conversation


async def get(session: AsyncSession, user_id: int, conversation_id: str) -> Conversation:
    found = await session.scalar(
        select(Conversation).where(
            Conversation.id == conversation_id, Conversation.user_id == user_id
        )
    )
    if found is None:  # someone else's conversation is indistinguishable from none
        raise _not_found()
    return found


async def list_page(
    session: AsyncSession, user_id: int, *, limit: int, token: str | None
) -> tuple[list[Conversation], str | None]:
    """Newest first by creation time; `token` continues after the last item of a page."""
    stmt = select(Conversation).where(Conversation.user_id == user_id)
    if token:
        created, last_id = cursor.decode_pair(token)
        stmt = stmt.where(
            or_(
                Conversation.created_at < created,
                and_(Conversation.created_at == created, Conversation.id < last_id),
            )
        )
    rows = list(
        await session.scalars(
            stmt.order_by(Conversation.created_at.desc(), Conversation.id.desc()).limit(limit + 1)
        )
    )
    more = len(rows) > limit
    rows = rows[:limit]
    next_token = cursor.encode_pair(rows[-1].created_at, rows[-1].id) if more and rows else None
    return rows, next_token


async def delete(session: AsyncSession, user_id: int, conversation_id: str) -> None:
    await session.delete(await get(session, user_id, conversation_id))


async def quota_overrides_if_owned(
    session: Executor, user_id: int, conversation_id: str
) -> dict[str, Any] | None:
    """`get`'s ownership check (404 otherwise) and, in the same query, the user's quota
    overrides (`user_quotas.limits`; None without a row), which admitting a turn needs. A read:
    on SQLite it takes no write lock while the send is admitted."""
    params = {"cid": conversation_id, "uid": user_id}
    found = await _OWNED_WITH_OVERRIDES.rows(session, params)
    row = found[0] if found else None
    if row is None:  # someone else's conversation is indistinguishable from none
        raise _not_found()
    overrides: dict[str, Any] | None = row.limits
    return overrides


def _touch_params(user_id: int, conversation_id: str, content: str) -> dict[str, Any]:
    title = " ".join(content.split())[:TITLE_CHARS]
    return {"cid": conversation_id, "uid": user_id, "now": utcnow(), "new_title": title}


def _not_found() -> NotFound:
    return NotFound("conversation not found", code="conversation_not_found")


async def _touch(session: Executor, user_id: int, conversation_id: str, content: str) -> None:
    """Touch the user's conversation for a message of `content` (404 unless it is theirs: it
    may have been deleted since it was checked); one still called `DEFAULT_TITLE` is named
    after it. One UPDATE does the ownership check, the touch and the naming."""
    params = _touch_params(user_id, conversation_id, content)
    touched: CursorResult[Any] = await session.execute(_TOUCH.statement, params)  # type: ignore[assignment]
    if touched.rowcount == 0:  # deleted meanwhile, or never the user's
        raise _not_found()


async def store_user_message(
    connection: AsyncConnection, user_id: int, conversation_id: str, content: str
) -> int:
    """`add_user_message`, committed, in one trip on SQLite: the touch is held back (`defer`)
    and goes with the INSERT and its COMMIT (`HotWrite`), so the write lock is held
    for that trip only. The touch's row count is not read: the INSERT checks the ownership
    (404)."""
    await _TOUCH.defer(connection, _touch_params(user_id, conversation_id, content))
    params = {"cid": conversation_id, "uid": user_id, "content": content}
    rows = await _ADD_USER_MESSAGE_IF_OWNED.rows(connection, params, commit=True)
    if not rows:  # deleted meanwhile, or never the user's: the touch changed nothing
        raise _not_found()
    return int(rows[0][0])


async def add_user_message(
    session: Executor, user_id: int, conversation_id: str, content: str
) -> int:
    """Store a user message in the user's conversation (404 otherwise), its id (the caller
    commits)."""
    await _touch(session, user_id, conversation_id, content)
    added = await session.execute(_ADD_USER_MESSAGE, {"cid": conversation_id, "content": content})
    return int(added.scalar_one())


async def add_reply(
    session: AsyncConnection,
    conversation_id: str,
    reply_to: int,
    *,
    content: str,
    status: str,
    tool_calls: list[dict[str, Any]],
    loaded_skills: list[dict[str, Any]] | None,
    usage: dict[str, Any],
    error: dict[str, Any] | None = None,
) -> Message:
    """Store the assistant's answer to `reply_to` and commit the session's transaction (the turn's
    other writes go with it), once: a retried turn gets the stored one, and its writes are
    rolled back. The answer comes back detached, as stored."""
    values: dict[str, Any] = {
        "conversation_id": conversation_id,
        "role": "assistant",
        # A model may answer with U+0000, which PostgreSQL text cannot hold: stored as U+FFFD
        # (on either database), where refusing it lost the whole answer.
        "content": content.replace("\x00", "\ufffd"),
        "status": status,
        "reply_to": reply_to,
        "tool_calls": tool_calls,
        "loaded_skills": loaded_skills,
        "usage": usage,
        "error": error,
        "created_at": utcnow(),
    }
    try:
        message_id = int((await _ADD_REPLY.rows(session, values, commit=True))[0][0])
    except IntegrityError:
        await session.rollback()
        stored = await session.execute(select(_MESSAGES).where(_MESSAGES.c.reply_to == reply_to))
        existing = stored.mappings().first()
        if existing is None:
            raise
        return Message(**existing)
    return as_loaded(Message, {"id": message_id, **values})


async def turn_window(
    session: Executor, conversation_id: str, message_id: int, *, history: int = 100
) -> TurnWindow:
    """The conversation with its owner (no owner filter: for the turn runner, which acts on a
    conversation a user already owns) and the newest `history` messages before
    `message_id`; older ones only count for turn indices."""
    params = {"cid": conversation_id, "mid": message_id, "rows": history + 2}
    found = await _WINDOW.rows(session, params)
    if not found:
        return TurnWindow(None, None, None, {}, None, [], 0)
    head = found[0]
    owned = Owned(head.ghost, head.user_id, head.user_name, head.is_active, head.limits)
    first = _FIRST_MESSAGE_COLUMN
    reply: Message | None = None
    user_message: WindowMessage | None = None
    ghost_text: str | None = None
    generations: dict[int, str] = {}
    window: list[WindowMessage] = []
    for row in found:
        if row.m_id is None:  # the outer join found no message
            continue
        if row.m_reply_to == message_id:
            reply = Message(**dict(zip(_MESSAGE_KEYS, row[first:], strict=True)))
            continue
        message = WindowMessage(
            row.m_id,
            row.m_role,
            row.m_content,
            row.m_reply_to,
            row.m_tool_calls,
            row.m_loaded_skills,
        )
        if message.id == message_id:
            user_message = message
            ghost_text = row.ghost_text
            generations = {head.user_id: row.user_generation, SYSTEM_USER_ID: row.public_generation}
        elif message.id < message_id and len(window) < history:
            window.append(message)
    window.reverse()
    before = 0
    if window and len(window) == history:  # older messages exist: count their user turns
        before = int(
            await session.scalar(
                select(func.count())
                .select_from(Message)
                .where(
                    Message.conversation_id == conversation_id,
                    Message.id < window[0].id,
                    Message.role == "user",
                )
            )
            or 0
        )
    return TurnWindow(owned, user_message, ghost_text, generations, reply, window, before)


async def messages_page(
    session: AsyncSession, conversation_id: str, *, limit: int, token: str | None
) -> tuple[list[Message], str | None]:
    """Oldest first; `token` continues after the last message of the previous page."""
    stmt = select(Message).where(Message.conversation_id == conversation_id)
    if token is not None:
        stmt = stmt.where(Message.id > cursor.decode_id(token))
    rows = list(await session.scalars(stmt.order_by(Message.id).limit(limit + 1)))
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, (cursor.encode_id(rows[-1].id) if more and rows else None)
