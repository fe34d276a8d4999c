"""A migrated database with a session factory, users and skills, for the search tests."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from backend.auth import service as auth_service
from backend.config import Settings
from backend.kinds.store import Scope
from backend.skills import service
from backend.skills.service import PUBLIC_SCOPE
from tests.support import zips


@dataclass
class Store:
    sessionmaker: async_sessionmaker[AsyncSession]
    settings: Settings

    async def user(self, name: str) -> int:
        async with self.sessionmaker() as session:
            user = await auth_service.create_user(session, name)
            await session.commit()
            return user.id

    async def skill(
        self,
        scope: Scope,
        name: str,
        description: str,
        *,
        body: str = "Do the thing.",
        extra: str = "",
        labels: dict[str, str] | None = None,
        enabled: bool | None = None,
    ) -> None:
        md = f"---\nname: {name}\ndescription: {description}\n{extra}---\n\n{body}\n"
        data = zips.build({"SKILL.md": md}, folder=name)
        async with self.sessionmaker() as session:
            await service.create(session, self.settings, scope, data)
            if labels is not None or enabled is not None:
                await service.patch(session, scope, name, labels=labels, enabled=enabled)

    async def public_skill(self, name: str, description: str, **kwargs: object) -> None:
        await self.skill(PUBLIC_SCOPE, name, description, **kwargs)  # type: ignore[arg-type]
