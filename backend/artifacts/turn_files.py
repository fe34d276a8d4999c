"""`ConversationFiles` for one turn, on the database: any worker can run the next turn."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from backend.artifacts import store
from backend.config import Settings
from chat_shell import ArtifactLimits, NewArtifact, SandboxAccess, SavedArtifact


def artifact_limits(settings: Settings) -> ArtifactLimits:
    return ArtifactLimits(
        max_bytes=settings.artifact_max_bytes,
        per_turn=settings.artifacts_per_turn,
        turn_bytes=settings.artifact_turn_bytes,
    )


class TurnFiles:
    """The files of `conversation_id` as the turn answering `message_id` uses them."""

    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        settings: Settings,
        conversation_id: str,
        message_id: int,
    ) -> None:
        self._sessionmaker = sessionmaker
        self._settings = settings
        self._conversation_id = conversation_id
        self._message_id = message_id
        self.limits = artifact_limits(settings)
        self.keeps_workspace = settings.sandbox_workspace_scope == "conversation"

    async def save_artifact(self, artifact: NewArtifact) -> SavedArtifact:
        async with self._sessionmaker() as session:
            row = await store.add(
                session,
                self._conversation_id,
                kind=store.OUTPUT,
                name=artifact.name,
                mime_type=artifact.mime_type,
                data=artifact.data,
                message_id=self._message_id,
            )
            await session.commit()
        return SavedArtifact(
            id=row.id,
            name=row.name,
            mime_type=row.mime_type,
            size=row.size,
            sha256=row.sha256,
            url=store.artifact_url(self._conversation_id, row.id),
        )

    async def inputs(self) -> Mapping[str, bytes]:
        async with self._sessionmaker() as session:
            return await store.inputs(session, self._conversation_id)

    async def load_workspace(self) -> bytes | None:
        async with self._sessionmaker() as session:
            found = await store.load_workspace(
                session,
                self._conversation_id,
                ttl_seconds=self._settings.sandbox_workspace_ttl_seconds,
            )
            await session.commit()  # an expired workspace is deleted
        return found

    async def save_workspace(self, archive: bytes) -> None:
        async with self._sessionmaker() as session:
            await store.save_workspace(session, self._conversation_id, archive)
            await session.commit()


def turn_access(
    access: SandboxAccess | None,
    sessionmaker: async_sessionmaker[AsyncSession],
    settings: Settings,
    conversation_id: str,
    message_id: int,
) -> SandboxAccess | None:
    """The process's sandbox access, bound to this turn's conversation files."""
    if access is None:
        return None
    files = TurnFiles(sessionmaker, settings, conversation_id, message_id)
    return replace(access, files=files)
