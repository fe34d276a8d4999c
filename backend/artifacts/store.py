"""The `conversation_artifacts` rows: outputs, inputs and one kept workspace per conversation.

Callers check the conversation's owner first (`backend.chat.conversations.get`); these
functions take a conversation id that is already the caller's.
"""

from __future__ import annotations

import hashlib
import mimetypes
import uuid
from collections.abc import Sequence
from datetime import timedelta

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import undefer

from backend.db.models import ConversationArtifact
from backend.db.types import utcnow
from backend.errors import NotFound, PayloadTooLarge

OUTPUT = "output"
INPUT = "input"
WORKSPACE = "workspace"  # internal: never listed or downloaded
LISTED = (OUTPUT, INPUT)
WORKSPACE_NAME = "workspace.tar"


def artifact_url(conversation_id: str, artifact_id: str) -> str:
    return f"/api/v1/conversations/{conversation_id}/artifacts/{artifact_id}"


def guess_type(name: str) -> str:
    return mimetypes.guess_type(name, strict=False)[0] or "application/octet-stream"


async def add(
    session: AsyncSession,
    conversation_id: str,
    *,
    kind: str,
    name: str,
    mime_type: str,
    data: bytes,
    message_id: int | None = None,
    sha256: str | None = None,
) -> ConversationArtifact:
    """A new artifact row; `sha256` is the data's digest when the caller already took it."""
    row = ConversationArtifact(
        id=str(uuid.uuid4()),
        conversation_id=conversation_id,
        message_id=message_id,
        kind=kind,
        name=name,
        mime_type=mime_type,
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest() if sha256 is None else sha256,
        data=data,
        created_at=utcnow(),
    )
    session.add(row)
    await session.flush()
    return row


async def listing(
    session: AsyncSession, conversation_id: str, kinds: Sequence[str] = LISTED, *, limit: int
) -> list[ConversationArtifact]:
    """Newest first, without their bytes."""
    rows = await session.scalars(
        select(ConversationArtifact)
        .where(
            ConversationArtifact.conversation_id == conversation_id,
            ConversationArtifact.kind.in_(kinds),
        )
        .order_by(ConversationArtifact.created_at.desc(), ConversationArtifact.id)
        .limit(limit)
    )
    return list(rows)


async def get(
    session: AsyncSession, conversation_id: str, artifact_id: str, *, with_data: bool = False
) -> ConversationArtifact:
    query = select(ConversationArtifact).where(
        ConversationArtifact.id == artifact_id,
        ConversationArtifact.conversation_id == conversation_id,
        ConversationArtifact.kind.in_(LISTED),
    )
    if with_data:
        query = query.options(undefer(ConversationArtifact.data))
    found = await session.scalar(query)
    if found is None:
        raise NotFound("artifact not found", code="artifact_not_found")
    return found


async def put_input(
    session: AsyncSession,
    conversation_id: str,
    name: str,
    data: bytes,
    *,
    total_limit: int,
    sha256: str | None = None,
) -> ConversationArtifact:
    """Store an upload, replacing the conversation's upload of the same name; 413
    `conversation_files_full` when the conversation's uploads would pass `total_limit`.
    `sha256`: the digest the upload took as its bytes arrived."""
    same_name = (
        ConversationArtifact.conversation_id == conversation_id,
        ConversationArtifact.kind == INPUT,
        ConversationArtifact.name == name,
    )
    others = await session.scalar(
        select(func.coalesce(func.sum(ConversationArtifact.size), 0)).where(
            ConversationArtifact.conversation_id == conversation_id,
            ConversationArtifact.kind == INPUT,
            ConversationArtifact.name != name,
        )
    )
    if int(others or 0) + len(data) > total_limit:
        raise PayloadTooLarge(
            f"the conversation's files would exceed {total_limit} bytes",
            code="conversation_files_full",
            details={"limit_bytes": total_limit, "used_bytes": int(others or 0)},
        )
    await session.execute(delete(ConversationArtifact).where(*same_name))
    return await add(
        session,
        conversation_id,
        kind=INPUT,
        name=name,
        mime_type=guess_type(name),
        data=data,
        sha256=sha256,
    )


async def inputs(session: AsyncSession, conversation_id: str) -> dict[str, bytes]:
    rows = await session.execute(
        select(ConversationArtifact.name, ConversationArtifact.data).where(
            ConversationArtifact.conversation_id == conversation_id,
            ConversationArtifact.kind == INPUT,
        )
    )
    return {row.name: row.data for row in rows}


async def load_workspace(
    session: AsyncSession, conversation_id: str, *, ttl_seconds: int
) -> bytes | None:
    """The kept workspace; one unused for `ttl_seconds` is deleted instead."""
    row = await session.scalar(
        select(ConversationArtifact)
        .where(
            ConversationArtifact.conversation_id == conversation_id,
            ConversationArtifact.kind == WORKSPACE,
        )
        .options(undefer(ConversationArtifact.data))
    )
    if row is None:
        return None
    if row.created_at < utcnow() - timedelta(seconds=ttl_seconds):
        await session.delete(row)
        return None
    return row.data


async def save_workspace(session: AsyncSession, conversation_id: str, data: bytes) -> None:
    await session.execute(
        delete(ConversationArtifact).where(
            ConversationArtifact.conversation_id == conversation_id,
            ConversationArtifact.kind == WORKSPACE,
        )
    )
    await add(
        session,
        conversation_id,
        kind=WORKSPACE,
        name=WORKSPACE_NAME,
        mime_type="application/x-tar",
        data=data,
    )
