"""Skill package versions: recorded on every package change, bytes stored once, pruned safely."""

from __future__ import annotations

import hashlib

import pytest
from fastapi import FastAPI
from sqlalchemy import func, select

from backend.config import Settings
from backend.db.models import SkillBlob
from backend.kinds import store
from backend.kinds.store import Scope
from backend.skills import service, versions
from backend.skills.versions import VersionNotFoundError
from tests.support import zips
from tests.support.accounts import Account


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def _blobs(app: FastAPI) -> set[str]:
    async with app.state.sessionmaker() as session:
        return set(await session.scalars(select(SkillBlob.sha256)))


async def _kind_id(app: FastAPI, scope: Scope, name: str) -> int:
    async with app.state.sessionmaker() as session:
        return (await store.get(session, service.SKILL_KIND, scope, name)).id


async def test_every_package_change_records_a_version_newest_first(
    app: FastAPI, settings: Settings, alice: Account
) -> None:
    scope = Scope(alice.id, "dev")
    first = zips.skill("demo")
    second = zips.skill("demo", description="Second.")
    async with app.state.sessionmaker() as session:
        await service.create(session, settings, scope, first)
        await service.replace(session, settings, scope, "demo", second, source={"type": "x"})
        await service.patch(session, scope, "demo", labels={"a": "b"}, enabled=None)
    kind_id = await _kind_id(app, scope, "demo")
    async with app.state.sessionmaker() as session:
        listed = await versions.list_versions(session, kind_id)
        v1 = await versions.crd_of(session, kind_id, 1)
        current, sha = await versions.package_of(session, kind_id, None)
    assert [(v.version, v.sha256, v.size, v.created_by) for v in listed] == [
        (2, _sha(second), len(second), alice.id),
        (1, _sha(first), len(first), alice.id),
    ]
    assert [v.source for v in listed] == [{"type": "x"}, {"type": "upload"}]
    assert v1["spec"]["description"] == "A demo skill."
    assert v1["metadata"]["resourceVersion"] == 1
    assert (current, sha) == (second, _sha(second))


async def test_identical_packages_are_stored_once_across_skills_and_versions(
    app: FastAPI, settings: Settings, alice: Account, bob: Account
) -> None:
    data = zips.skill("demo")
    async with app.state.sessionmaker() as session:
        for scope in (Scope(alice.id, "dev"), Scope(alice.id, "prod"), Scope(bob.id, "dev")):
            await service.create(session, settings, scope, data)
        await service.replace(session, settings, Scope(alice.id, "dev"), "demo", data)
        count = await session.scalar(
            select(func.count()).select_from(SkillBlob).where(SkillBlob.sha256 == _sha(data))
        )
    assert count == 1


async def test_rollback_is_a_new_version_sharing_the_old_bytes_and_keeping_labels(
    app: FastAPI, settings: Settings, alice: Account
) -> None:
    scope = Scope(alice.id, "dev")
    first, second = zips.skill("demo"), zips.skill("demo", description="B")
    before = await _blobs(app)
    async with app.state.sessionmaker() as session:
        await service.create(session, settings, scope, first)
        await service.replace(session, settings, scope, "demo", second)
        await service.patch(session, scope, "demo", labels={"team": "x"}, enabled=False)
        crd = await service.rollback(session, settings, scope, "demo", 1, actor=alice.id)
        stored = await service.package(session, scope, "demo")
    kind_id = await _kind_id(app, scope, "demo")
    async with app.state.sessionmaker() as session:
        listed = await versions.list_versions(session, kind_id)
    assert crd["spec"]["description"] == "A demo skill."
    assert crd["metadata"]["labels"] == {"team": "x"}
    assert crd["status"]["enabled"] is False
    assert crd["metadata"]["resourceVersion"] == 4
    assert stored.data == first
    assert listed[0].version == 3
    assert listed[0].source == {"type": "rollback", "version": 1}
    assert listed[0].sha256 == listed[2].sha256 == _sha(first)
    assert await _blobs(app) - before == {_sha(first), _sha(second)}


async def test_rolling_back_to_an_unknown_version_is_version_not_found_and_writes_nothing(
    app: FastAPI, settings: Settings, alice: Account
) -> None:
    scope = Scope(alice.id, "dev")
    async with app.state.sessionmaker() as session:
        await service.create(session, settings, scope, zips.skill("demo"))
    async with app.state.sessionmaker() as session:
        with pytest.raises(VersionNotFoundError) as caught:
            await service.rollback(session, settings, scope, "demo", 7)
    assert caught.value.code == "version_not_found"
    async with app.state.sessionmaker() as session:
        assert (await service.get(session, scope, "demo"))["metadata"]["resourceVersion"] == 1


async def _pinned_three() -> set[int]:
    return {3}


async def test_pruning_keeps_the_last_n_and_pinned_versions_and_only_unused_bytes_go(
    app: FastAPI, settings: Settings, alice: Account
) -> None:
    keep_two = settings.model_copy(update={"skill_versions_retain": 2})
    dev, prod = Scope(alice.id, "dev"), Scope(alice.id, "prod")
    a, b, c, d = (zips.skill("demo", description=f"Version {x}.") for x in "ABCD")
    before = await _blobs(app)
    async with app.state.sessionmaker() as session:
        await service.create(session, keep_two, dev, a)
        await service.create(session, keep_two, prod, a)  # another skill shares A's bytes
        await service.replace(session, keep_two, dev, "demo", b)
        await service.replace(session, keep_two, dev, "demo", c)  # prunes 1 (A): still used
        await service.replace(session, keep_two, dev, "demo", d)  # prunes 2 (B): unused
    kind_id = await _kind_id(app, dev, "demo")
    async with app.state.sessionmaker() as session:
        assert [v.version for v in await versions.list_versions(session, kind_id)] == [4, 3]
    assert await _blobs(app) - before == {_sha(a), _sha(c), _sha(d)}

    async with app.state.sessionmaker() as session:
        await versions.record(
            session,
            kind_id,
            {"pinned": "test"},
            sha256=_sha(d),
            size=len(d),
            data=None,
            created_by=None,
            source={"type": "test"},
            retain=1,
            pinned=_pinned_three,
        )
        await session.commit()
        assert [v.version for v in await versions.list_versions(session, kind_id)] == [5, 3]
    assert await _blobs(app) - before == {_sha(a), _sha(c), _sha(d)}


async def test_deleting_a_skill_deletes_only_the_bytes_nothing_else_uses(
    app: FastAPI, settings: Settings, alice: Account
) -> None:
    dev, prod = Scope(alice.id, "dev"), Scope(alice.id, "prod")
    shared, own = zips.skill("demo"), zips.skill("demo", description="Own.")
    before = await _blobs(app)
    async with app.state.sessionmaker() as session:
        await service.create(session, settings, dev, shared)
        await service.create(session, settings, prod, shared)
        await service.replace(session, settings, dev, "demo", own)
        await service.delete(session, dev, "demo")
    assert await _blobs(app) - before == {_sha(shared)}
