"""Shared helpers for the Ghost API tests."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import func, select

from backend.db.models import Kind
from tests.support import zips
from tests.support.skills import upload


def ghost(name: str = "helper", *, namespace: str | None = None, **spec: Any) -> dict[str, Any]:
    """A Ghost CRD body; `spec` keys are given as on the wire (camelCase)."""
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {
        "apiVersion": "skillhive.io/v1",
        "kind": "Ghost",
        "metadata": metadata,
        "spec": {"systemPrompt": "You help.", **spec},
    }


def own(namespace: str = "dev") -> str:
    return f"/api/v1/namespaces/{namespace}/ghosts"


PUBLIC = "/api/v1/public/ghosts"


async def create(
    client: httpx.AsyncClient, headers: dict[str, str], body: Any, *, base: str | None = None
) -> httpx.Response:
    return await client.post(base or own(), json=body, headers=headers)


async def add_skill(
    client: httpx.AsyncClient, headers: dict[str, str], name: str, *, base: str | None = None
) -> None:
    if base is None:
        response = await upload(client, headers, zips.skill(name))
    else:
        response = await client.post(
            base, files={"file": ("s.zip", zips.skill(name))}, headers=headers
        )
    assert response.status_code == 201, response.text


async def ghost_rows(app: FastAPI) -> int:
    async with app.state.sessionmaker() as session:
        count = await session.scalar(
            select(func.count()).select_from(Kind).where(Kind.kind == "Ghost")
        )
    return int(count or 0)
