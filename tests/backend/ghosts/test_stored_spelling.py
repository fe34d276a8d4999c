"""Ghosts stored before camelCase (`spec.preload_skills`) read, serve and update as today's."""

from __future__ import annotations

import httpx
from fastapi import FastAPI
from sqlalchemy import select, update

from backend.db.models import Kind
from backend.ghosts.resolve import resolve_ghost
from tests.support.accounts import Account
from tests.support.ghosts import add_skill, create, ghost, own


async def _store_old_spelling(app: FastAPI, name: str) -> None:
    async with app.state.sessionmaker() as session:
        row = await session.scalar(select(Kind).where(Kind.kind == "Ghost", Kind.name == name))
        assert row is not None
        spec = dict(row.json["spec"])
        spec["preload_skills"] = spec.pop("preloadSkills")
        await session.execute(
            update(Kind).where(Kind.id == row.id).values(json={**row.json, "spec": spec})
        )
        await session.commit()


async def test_an_old_row_is_served_resolved_and_updated_in_camel_case(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    await add_skill(client, alice.headers, "pdf")
    await add_skill(client, alice.headers, "docx")
    body = ghost("old", skills=["pdf", "docx"], preloadSkills=["pdf", "docx"])
    assert (await create(client, alice.headers, body)).status_code == 201
    await _store_old_spelling(app, "old")

    got = (await client.get(f"{own()}/old", headers=alice.headers)).json()
    assert got["spec"]["preloadSkills"] == ["pdf", "docx"] and "preload_skills" not in got["spec"]
    listed = (await client.get(own(), headers=alice.headers)).json()["items"]
    assert listed[0]["spec"]["preloadSkills"] == ["pdf", "docx"]
    async with app.state.sessionmaker() as session:
        resolved = await resolve_ghost(session, alice.id, "dev/old")  # what a chat turn reads
    assert resolved.spec.preload_skills == ["pdf", "docx"]

    same = await client.put(f"{own()}/old", json=body, headers=alice.headers)
    assert same.status_code == 200 and same.json()["metadata"]["resourceVersion"] == 1

    forced = await client.delete(
        "/api/v1/namespaces/dev/skills/pdf?force=true", headers=alice.headers
    )
    assert forced.status_code == 204, forced.text
    after = (await client.get(f"{own()}/old", headers=alice.headers)).json()
    assert after["spec"]["skills"] == ["docx"] and after["spec"]["preloadSkills"] == ["docx"]
    async with app.state.sessionmaker() as session:
        stored = await session.scalar(select(Kind.json).where(Kind.name == "old"))
    assert stored is not None and "preload_skills" not in stored["spec"]
