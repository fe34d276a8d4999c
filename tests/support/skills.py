"""Shared helpers for the skill API tests."""

from __future__ import annotations

import httpx
from fastapi import FastAPI
from sqlalchemy import func, select

from backend.db.models import Kind, SkillVersion


async def upload(
    client: httpx.AsyncClient,
    headers: dict[str, str],
    data: bytes,
    *,
    namespace: str = "dev",
    query: str = "",
) -> httpx.Response:
    return await client.post(
        f"/api/v1/namespaces/{namespace}/skills{query}",
        files={"file": ("skill.zip", data, "application/zip")},
        headers=headers,
    )


async def user_rows(app: FastAPI) -> tuple[int, int]:
    """(skill rows, skills with a stored package) owned by real users, built-ins not counted."""
    async with app.state.sessionmaker() as session:
        kinds = await session.scalar(
            select(func.count()).select_from(Kind).where(Kind.user_id != 0)
        )
        binaries = await session.scalar(
            select(func.count(SkillVersion.kind_id.distinct()))
            .join(Kind, Kind.id == SkillVersion.kind_id)
            .where(Kind.user_id != 0)
        )
    return int(kinds or 0), int(binaries or 0)
