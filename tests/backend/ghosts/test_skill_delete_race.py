"""A skill delete racing a Ghost write that relies on the skill (PostgreSQL row locks)."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import text

from backend.crd.skill import SKILL_KIND
from backend.errors import Conflict, InvalidRequest
from backend.ghosts import service
from backend.ghosts.references import release_skill
from backend.ghosts.validation import parse_ghost
from backend.kinds import store
from backend.kinds.store import Scope
from backend.skills import service as skills
from tests.support.accounts import Account
from tests.support.ghosts import add_skill, ghost
from tests.support.wait import eventually

# SQLite serialises writers and has no row locks; the lock protocol is PostgreSQL's.
pytestmark = pytest.mark.parametrize("db_backend", ["postgresql"])


async def _lock_waiters(app: FastAPI) -> int:
    async with app.state.sessionmaker() as session:
        waiting = await session.scalar(
            text(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
        )
    return int(waiting or 0)


async def test_a_skill_delete_waits_for_the_ghost_write_and_then_sees_its_reference(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    await add_skill(client, alice.headers, "s")
    scope = Scope(alice.id, "dev")
    parsed = parse_ghost(ghost("g", skills=["s"]), scope)
    async with app.state.sessionmaker() as writer, app.state.sessionmaker() as deleter:
        action = await service.prepare(writer, scope, parsed, None)  # share-locks skill `s`
        assert action == "created"
        delete = asyncio.create_task(skills.delete(deleter, scope, "s"))
        await eventually(lambda: _lock_waiters(app))
        assert not delete.done()
        await service.write(writer, scope, parsed, None, action)
        await writer.commit()
        with pytest.raises(Conflict) as refused:
            await delete
    assert refused.value.code == "skill_referenced"
    assert refused.value.details["ghosts"] == ["dev/g"]


async def test_a_ghost_write_waits_for_a_skill_delete_and_then_finds_the_skill_gone(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    await add_skill(client, alice.headers, "s")
    scope = Scope(alice.id, "dev")
    parsed = parse_ghost(ghost("g", skills=["s"]), scope)
    async with app.state.sessionmaker() as deleter, app.state.sessionmaker() as writer:
        row = await store.get(deleter, SKILL_KIND, scope, "s")
        await release_skill(deleter, scope, "s", force=False)  # locks the skill row
        prepare = asyncio.create_task(service.prepare(writer, scope, parsed, None))
        await eventually(lambda: _lock_waiters(app))
        await deleter.delete(row)
        await deleter.commit()
        with pytest.raises(InvalidRequest) as refused:
            await prepare
    assert refused.value.code == "unknown_skills"
