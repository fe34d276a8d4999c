"""`/openapi.json` tells a client generator the truth: every status it declares is answered, with
the declared body, and every answer is declared (the `client` fixture checks each response)."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from openapi_core.templating.responses.exceptions import ResponseNotFound
from openapi_core.validation.response.exceptions import (
    DataValidationError,
    InvalidData,
)
from sqlalchemy import select, update

from backend.api.errors import ERROR_DESCRIPTIONS
from backend.artifacts import store as artifact_store
from backend.auth.requests import RequestAuth
from backend.config import Settings
from backend.db.engine import create_engine, create_sessionmaker
from backend.db.models import Kind
from backend.ghosts import service as ghost_service
from tests.support import zips
from tests.support.accounts import Account
from tests.support.chat import LOOPBACK_ALLOW, held_turn, make_setup
from tests.support.errors import assert_error
from tests.support.ghosts import ghost
from tests.support.marketplace import MARKETPLACE, TOOLKIT_FILES, build_zip, plugin_zip
from tests.support.openai_server import FakeOpenAIServer, Reply
from tests.support.openapi import Contract
from tests.support.sources import SourceServer

API = "/api/v1"
NS = f"{API}/namespaces/dev"
PUBLIC = f"{API}/public"
ZIP = {"Content-Type": "application/zip"}
HUGE = 11 * 1024 * 1024  # over every body cap (archives 10 MiB, apply 4 MiB, Ghosts 1 MiB)


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The scripted model server is on loopback: reached through an explicit egress allow."""
    return settings.model_copy(
        update={"egress_allow": LOOPBACK_ALLOW, "skill_plan_execution": True}
    )


def expect(response: httpx.Response, status: int) -> httpx.Response:
    assert response.status_code == status, (response.request.url, response.text)
    return response


def oversized(headers: dict[str, str], media: str) -> dict[str, Any]:
    """Request kwargs for a body over the cap (refused from its Content-Length)."""
    return {"content": b"0" * HUGE, "headers": {**headers, "Content-Type": media}}


async def _skills(c: httpx.AsyncClient, base: str, writer: Account, other: Account) -> None:
    """Every status of one skill tree; `other` may not write it (public) or is another user."""
    h = writer.headers
    own = base.startswith(NS)
    archive = zips.skill("tool")
    expect(await c.post(base, content=archive, headers={**h, **ZIP}), 201)
    expect(await c.post(base, content=archive, headers={**h, **ZIP}), 409)
    expect(await c.post(base, content=b"x", headers={**h, "Content-Type": "text/plain"}), 415)
    expect(await c.post(base, content=b"not a zip", headers={**h, **ZIP}), 422)
    expect(await c.post(base, **oversized(h, "application/zip")), 413)
    expect(await c.get(base, headers=h), 200)
    expect(await c.get(f"{base}?limit=0", headers=h), 422)
    expect(await c.get(f"{base}/tool", headers=h), 200)
    expect(await c.get(f"{base}/nope", headers=h), 404)
    item = f"{base}/tool"
    expect(await c.put(item, content=archive, headers={**h, **ZIP}), 200)
    expect(await c.put(f"{base}/nope", content=archive, headers={**h, **ZIP}), 404)
    expect(await c.put(item, content=archive, headers={**h, **ZIP, "If-Match": '"9"'}), 412)
    expect(await c.put(item, content=b"x", headers={**h, "Content-Type": "text/plain"}), 415)
    expect(await c.put(item, content=zips.skill("other"), headers={**h, **ZIP}), 422)
    expect(await c.put(item, **oversized(h, "application/zip")), 413)
    expect(await c.patch(item, json={"labels": {"team": "a"}}, headers=h), 200)
    expect(await c.patch(f"{base}/nope", json={}, headers=h), 404)
    expect(await c.patch(item, json={}, headers={**h, "If-Match": '"9"'}), 412)
    expect(await c.patch(item, json={"enabled": "sometimes"}, headers=h), 422)
    package = expect(await c.get(f"{item}/package", headers=h), 200)
    etag = {**h, "If-None-Match": package.headers["etag"]}
    expect(await c.get(f"{item}/package", headers=etag), 304)
    expect(await c.get(f"{base}/nope/package", headers=h), 404)
    expect(await c.get(f"{item}/files/SKILL.md", headers=h), 200)
    expect(await c.get(f"{item}/files/missing.md", headers=h), 404)
    # versions: the PUT above made version 2
    expect(await c.get(f"{item}/versions", headers=h), 200)
    expect(await c.get(f"{base}/nope/versions", headers=h), 404)
    expect(await c.get(f"{item}/versions/1", headers=h), 200)
    expect(await c.get(f"{item}/versions/99", headers=h), 404)
    expect(await c.get(f"{item}/versions/{2**40}", headers=h), 422)
    old = expect(await c.get(f"{item}/versions/1/package", headers=h), 200)
    expect(
        await c.get(
            f"{item}/versions/1/package", headers={**etag, "If-None-Match": old.headers["etag"]}
        ),
        304,
    )
    expect(await c.get(f"{item}/versions/99/package", headers=h), 404)
    expect(await c.get(f"{item}/versions/-1/package", headers=h), 422)
    rollback = f"{item}/rollback"
    expect(await c.post(rollback, json={"version": 1}, headers=h), 200)
    expect(await c.post(rollback, json={"version": 99}, headers=h), 404)
    expect(await c.post(f"{base}/nope/rollback", json={"version": 1}, headers=h), 404)
    expect(await c.post(rollback, json={"version": 0}, headers=h), 422)
    expect(await c.post(rollback, json={"version": 1}, headers={**h, "If-Match": '"99"'}), 412)
    expect(await c.delete(f"{base}/nope", headers=h), 404)
    expect(await c.delete(f"{item}?force=maybe", headers=h), 422)
    if not own:
        expect(await c.post(base, content=archive, headers={**other.headers, **ZIP}), 403)
        expect(await c.put(item, content=archive, headers={**other.headers, **ZIP}), 403)
        expect(await c.patch(item, json={}, headers=other.headers), 403)
        expect(await c.delete(item, headers=other.headers), 403)
        expect(await c.post(rollback, json={"version": 1}, headers=other.headers), 403)
    else:
        bad = base.replace("/dev/", "/Bad_NS/")
        for path in ("", "/tool", "/tool/package", "/tool/files/SKILL.md", "/tool/versions"):
            expect(await c.get(bad + path, headers=h), 422)
    # a Ghost relies on the skill: 409 until forced
    ghosts = base.replace("/skills", "/ghosts")
    expect(await c.post(ghosts, json=ghost("relies", skills=["tool"]), headers=h), 201)
    expect(await c.delete(item, headers=h), 409)
    expect(await c.delete(f"{item}?force=true", headers=h), 204)


@asynccontextmanager
async def import_running(
    c: httpx.AsyncClient, url: str, server: SourceServer, headers: dict[str, str]
) -> AsyncIterator[None]:
    """Inside the block an import of the caller's waits on the server's `/held`."""
    server.held.clear()
    server.requests.clear()
    task = asyncio.create_task(c.post(url, json={"url": server.url("/held")}, headers=headers))
    try:
        await server.reached("/held")
        yield
    finally:
        server.held.set()
        expect(await task, 422)  # the held answer is empty: not an archive


async def _imports(
    app: FastAPI, c: httpx.AsyncClient, base: str, writer: Account, other: Account
) -> None:
    """Every status of skill imports and syncs, against a file server on loopback."""
    h = writer.headers
    with SourceServer() as server:
        server.files["/s.zip"] = zips.skill("imported")
        server.files["/page"] = b"<html></html>"
        server.files["/big.zip"] = zips.skill("big", files={"b": random.Random(0).randbytes(9000)})
        imp = f"{base}/import"
        expect(await c.post(imp, json={"url": server.url("/s.zip")}, headers=h), 200)
        sync = f"{base}/imported/sync"
        expect(await c.post(sync, headers=h), 200)
        server.redirects["/s.zip"] = f"http://127.0.0.2:{server.port}/s.zip"  # egress refuses
        expect(await c.post(sync, headers=h), 422)
        server.redirects["/s.zip"] = server.url("/gone.zip")
        expect(await c.post(sync, headers=h), 502)
        expect(await c.post(f"{base}/nope/sync", headers=h), 404)
        uploaded = zips.skill("uploaded")
        expect(await c.post(base, content=uploaded, headers={**h, **ZIP}), 201)
        expect(await c.post(f"{base}/uploaded/sync", headers=h), 409)  # not imported
        expect(await c.post(imp, json={"url": server.url("/page")}, headers=h), 422)
        expect(await c.post(imp, json={"url": server.url("/gone.zip")}, headers=h), 502)
        saved = app.state.settings
        try:
            app.state.settings = saved.model_copy(update={"import_max_download_bytes": 5000})
            expect(await c.post(imp, json={"url": server.url("/big.zip")}, headers=h), 413)
            app.state.settings = saved.model_copy(update={"import_timeout_seconds": 0.5})
            expect(await c.post(imp, json={"url": server.url("/held")}, headers=h), 504)
            server.redirects["/s.zip"] = server.url("/held")
            expect(await c.post(sync, headers=h), 504)
        finally:
            app.state.settings = saved
            server.held.set()
        async with import_running(c, imp, server, h):
            expect(await c.post(imp, json={"url": server.url("/s.zip")}, headers=h), 429)
            expect(await c.post(sync, headers=h), 429)
        if base.startswith(NS):
            bad = base.replace("/dev/", "/Bad_NS/")
            expect(await c.post(f"{bad}/import", json={"url": "https://x"}, headers=h), 422)
            expect(await c.post(f"{bad}/imported/sync", headers=h), 422)
            del server.redirects["/s.zip"]
            server.files["/s.zip"] = zips.skill("imported", description="Changed, new version.")
            async with over_quota(c, other, writer, "skill_bytes"):
                expect(await c.post(sync, headers=h), 429)
        else:
            expect(await c.post(imp, json={"url": "https://x"}, headers=other.headers), 403)
            expect(await c.post(f"{base}/imported/sync", headers=other.headers), 403)


async def _ghosts(c: httpx.AsyncClient, base: str, writer: Account, other: Account) -> None:
    h = writer.headers
    own = base.startswith(NS)
    body = ghost("g", skills=["skillhive-skill-authoring"])
    text = {**h, "Content-Type": "text/plain"}
    expect(await c.post(base, json=body, headers=h), 201)
    expect(await c.post(base, json=body, headers=h), 409)
    expect(await c.post(base, content=b"{}", headers=text), 415)
    expect(await c.post(base, json=ghost("g", skills=["nope"]), headers=h), 422)
    expect(await c.post(base, **oversized(h, "application/json")), 413)
    expect(await c.get(base, headers=h), 200)
    expect(await c.get(f"{base}?limit=0", headers=h), 422)
    expect(await c.get(f"{base}/g", headers=h), 200)
    expect(await c.get(f"{base}/nope", headers=h), 404)
    expect(await c.put(f"{base}/g", json=body, headers=h), 200)
    expect(await c.put(f"{base}/nope", json=ghost("nope"), headers=h), 404)
    expect(await c.put(f"{base}/g", json=body, headers={**h, "If-Match": '"9"'}), 412)
    expect(await c.put(f"{base}/g", content=b"{}", headers=text), 415)
    expect(await c.put(f"{base}/g", json=ghost("other"), headers=h), 422)
    expect(await c.put(f"{base}/g", **oversized(h, "application/json")), 413)
    expect(await c.delete(f"{base}/g", headers={**h, "If-Match": '"9"'}), 412)
    expect(await c.delete(f"{base}/nope", headers=h), 404)
    if not own:
        expect(await c.post(base, json=body, headers=other.headers), 403)
        expect(await c.put(f"{base}/g", json=body, headers=other.headers), 403)
        expect(await c.delete(f"{base}/g", headers=other.headers), 403)
    else:
        bad = base.replace("/dev/", "/Bad_NS/")
        for response in (
            await c.get(f"{bad}/g", headers=h),
            await c.delete(f"{bad}/g", headers=h),
        ):
            expect(response, 422)
    expect(await c.delete(f"{base}/g", headers=h), 204)


@asynccontextmanager
async def stale_ghost(app: FastAPI, namespace: str, name: str) -> AsyncIterator[None]:
    """The Ghost's row as an older, looser version might have stored it (then restored)."""
    where = (Kind.kind == "Ghost", Kind.namespace == namespace, Kind.name == name)
    async with app.state.sessionmaker() as session:
        saved = await session.scalar(select(Kind.json).where(*where))
        assert saved is not None
        stale = {**saved, "spec": {**saved["spec"], "retentionTurns": "many"}}
        await session.execute(update(Kind).where(*where).values(json=stale))
        await session.commit()
    try:
        yield
    finally:
        async with app.state.sessionmaker() as session:
            await session.execute(update(Kind).where(*where).values(json=saved))
            await session.commit()


def bare_toolkit() -> bytes:
    """The ui-toolkit plugin without its one skill."""
    files = {p: t for p, t in TOOLKIT_FILES.items() if "/skills/" not in p}
    return plugin_zip(files, "partner/ui-toolkit/")


@asynccontextmanager
async def naming_toolkit_skill(
    c: httpx.AsyncClient, base: str, h: dict[str, str]
) -> AsyncIterator[None]:
    """A Ghost naming the ui-toolkit plugin's skill while the block runs."""
    ghosts = base.replace("/plugins", "/ghosts")
    expect(await c.post(ghosts, json=ghost("webber", skills=["ui-toolkit/web"]), headers=h), 201)
    try:
        yield
    finally:
        expect(await c.delete(f"{ghosts}/webber", headers=h), 204)


async def _plugins(
    app: FastAPI, c: httpx.AsyncClient, base: str, writer: Account, other: Account
) -> None:
    """Every status of one plugin tree and of the Ghost commands route beside it."""
    h = writer.headers
    own = base.startswith(NS)
    plugin = plugin_zip(TOOLKIT_FILES, "partner/ui-toolkit/")
    remote_only = {**MARKETPLACE, "plugins": MARKETPLACE["plugins"][2:]}
    nothing = build_zip({".claude-plugin/marketplace.json": json.dumps(remote_only)})
    expect(await c.post(base, content=plugin, headers={**h, **ZIP}), 201)
    expect(await c.post(base, content=nothing, headers={**h, **ZIP}), 200)
    expect(await c.post(base, content=plugin, headers={**h, **ZIP}), 200)  # unchanged
    expect(await c.post(f"{base}/ui-toolkit/sync", headers=h), 409)  # uploaded, no URL
    web = f"{base.replace('/plugins', '/skills')}/ui-toolkit/web"  # a plugin's skill
    expect(await c.put(web, content=zips.skill("web"), headers={**h, **ZIP}), 409)
    async with naming_toolkit_skill(c, base, h):  # an update dropping it: 409
        expect(await c.post(base, content=bare_toolkit(), headers={**h, **ZIP}), 409)
    expect(await c.post(base, content=b"x", headers={**h, "Content-Type": "text/plain"}), 415)
    expect(await c.post(base, content=b"not a zip", headers={**h, **ZIP}), 422)
    expect(await c.post(base, **oversized(h, "application/zip")), 413)
    expect(await c.get(base, headers=h), 200)
    expect(await c.get(f"{base}?limit=0", headers=h), 422)
    expect(await c.get(f"{base}/ui-toolkit", headers=h), 200)
    expect(await c.get(f"{base}/nope", headers=h), 404)
    expect(await c.delete(f"{base}/nope", headers=h), 404)
    ghosts = base.replace("/plugins", "/ghosts")
    expect(await c.post(ghosts, json=ghost("kit", plugins=["ui-toolkit"]), headers=h), 201)
    expect(await c.get(f"{ghosts}/kit/commands", headers=h), 200)
    async with stale_ghost(app, "dev" if own else "public", "kit"):
        assert_error(await c.get(f"{ghosts}/kit/commands", headers=h), 409, "stored_crd_invalid")
    expect(await c.get(f"{ghosts}/nope/commands", headers=h), 404)
    expect(await c.delete(f"{base}/ui-toolkit", headers=h), 409)
    if not own:
        expect(await c.post(base, content=plugin, headers={**other.headers, **ZIP}), 403)
        expect(await c.delete(f"{base}/ui-toolkit", headers=other.headers), 403)
    else:
        bad = base.replace("/dev/", "/Bad_NS/")
        for path in (
            bad,
            f"{bad}/ui-toolkit",
            f"{bad.replace('/plugins', '/ghosts')}/kit/commands",
        ):
            expect(await c.get(path, headers=h), 422)
        expect(await c.delete(f"{bad}/ui-toolkit", headers=h), 422)
    expect(await c.delete(f"{ghosts}/kit", headers=h), 204)
    expect(await c.delete(f"{base}/ui-toolkit", headers=h), 204)


async def _plugin_imports(
    app: FastAPI, c: httpx.AsyncClient, base: str, writer: Account, other: Account
) -> None:
    """Every status of plugin imports from a URL, against a file server on loopback."""
    h = writer.headers
    imp = f"{base}/import"
    with SourceServer() as server:
        server.files["/p.zip"] = plugin_zip(TOOLKIT_FILES, "partner/ui-toolkit/")
        gone = {"name": "gone", "source": {"source": "url", "url": server.url("/gone.zip")}}
        market = {"name": "m", "plugins": [gone]}
        server.files["/m.zip"] = build_zip({".claude-plugin/marketplace.json": json.dumps(market)})
        server.files["/page"] = b"<html></html>"
        expect(await c.post(imp, json={"url": server.url("/p.zip")}, headers=h), 201)
        sync = f"{base}/ui-toolkit/sync"
        expect(await c.post(sync, headers=h), 200)
        expect(await c.post(f"{base}/nope/sync", headers=h), 404)
        server.redirects["/p.zip"] = f"http://127.0.0.2:{server.port}/p.zip"  # egress refuses
        expect(await c.post(sync, headers=h), 422)
        server.redirects["/p.zip"] = server.url("/gone.zip")
        expect(await c.post(sync, headers=h), 502)
        del server.redirects["/p.zip"]
        expect(await c.post(imp, json={"url": server.url("/m.zip")}, headers=h), 200)
        server.files["/bare.zip"] = bare_toolkit()
        async with naming_toolkit_skill(c, base, h):
            expect(await c.post(imp, json={"url": server.url("/bare.zip")}, headers=h), 409)
        expect(await c.post(imp, json={"url": server.url("/page")}, headers=h), 422)
        expect(await c.post(imp, json={"url": server.url("/gone.zip")}, headers=h), 502)
        saved = app.state.settings
        try:
            app.state.settings = saved.model_copy(update={"import_max_download_bytes": 100})
            expect(await c.post(imp, json={"url": server.url("/p.zip")}, headers=h), 413)
            expect(await c.post(sync, headers=h), 413)
            app.state.settings = saved.model_copy(update={"import_timeout_seconds": 0.5})
            expect(await c.post(imp, json={"url": server.url("/held")}, headers=h), 504)
            server.redirects["/p.zip"] = server.url("/held")
            expect(await c.post(sync, headers=h), 504)
        finally:
            app.state.settings = saved
            server.held.set()
            server.redirects.pop("/p.zip", None)
        async with import_running(c, imp, server, h):
            expect(await c.post(imp, json={"url": server.url("/p.zip")}, headers=h), 429)
            plugin = server.files["/p.zip"]
            expect(await c.post(base, content=plugin, headers={**h, **ZIP}), 429)
            expect(await c.post(sync, headers=h), 429)
        if base.startswith(NS):
            bad = base.replace("/dev/", "/Bad_NS/")
            expect(await c.post(f"{bad}/import", json={"url": "https://x"}, headers=h), 422)
            expect(await c.post(f"{bad}/ui-toolkit/sync", headers=h), 422)
        else:
            expect(await c.post(imp, json={"url": "https://x"}, headers=other.headers), 403)
            expect(await c.post(sync, headers=other.headers), 403)
    expect(await c.delete(f"{base}/ui-toolkit", headers=h), 204)


async def _apply(c: httpx.AsyncClient, alice: Account, monkeypatch: pytest.MonkeyPatch) -> None:
    h = alice.headers
    doc = ghost("applied", skills=["skillhive-skill-authoring"])
    expect(await c.post(f"{API}/apply", json=[doc], headers=h), 200)
    expect(
        await c.post(f"{API}/apply", content=b"x", headers={**h, "Content-Type": "text/csv"}), 415
    )
    expect(await c.post(f"{API}/apply", json=[{"kind": "Skill"}], headers=h), 422)
    expect(await c.post(f"{API}/apply", **oversized(h, "application/json")), 413)
    public = ghost("p", namespace="public")
    expect(await c.post(f"{API}/apply", json=[public], headers=h), 403)
    stale = ghost("applied")
    stale["metadata"]["resourceVersion"] = 9
    expect(await c.post(f"{API}/apply", json=[stale], headers=h), 412)
    # another request creates the Ghost between apply's read and its insert
    with monkeypatch.context() as patched:

        async def nothing_there(*_: Any) -> None:
            return None

        patched.setattr(ghost_service, "find", nothing_there)
        expect(await c.post(f"{API}/apply", json=[doc], headers=h), 409)


async def _accounts(c: httpx.AsyncClient, alice: Account, admin: Account) -> None:
    a, r = alice.headers, admin.headers
    expect(await c.get(f"{API}/me", headers=a), 200)
    expect(await c.get(f"{API}/tokens", headers=a), 200)
    token = expect(await c.post(f"{API}/tokens", json={"name": "ci"}, headers=a), 201)
    expect(await c.post(f"{API}/tokens", json={"name": ""}, headers=a), 422)
    expect(await c.delete(f"{API}/tokens/{token.json()['id']}", headers=a), 204)
    expect(await c.delete(f"{API}/tokens/99999", headers=a), 404)
    expect(await c.delete(f"{API}/tokens/first", headers=a), 422)
    expect(await c.get(f"{API}/users", headers=r), 200)
    expect(await c.get(f"{API}/users", headers=a), 403)
    created = expect(await c.post(f"{API}/users", json={"name": "carol"}, headers=r), 201)
    expect(await c.post(f"{API}/users", json={"name": "carol"}, headers=r), 409)
    expect(await c.post(f"{API}/users", json={"name": "x", "role": "king"}, headers=r), 422)
    expect(await c.post(f"{API}/users", json={"name": "dave"}, headers=a), 403)
    carol = f"{API}/users/{created.json()['id']}"
    expect(await c.patch(carol, json={"is_active": False}, headers=r), 200)
    expect(await c.patch(f"{API}/users/99999", json={}, headers=r), 404)
    expect(await c.patch(f"{API}/users/{admin.id}", json={"role": "user"}, headers=r), 422)
    expect(await c.patch(carol, json={}, headers=a), 403)
    expect(await c.get(f"{API}/metrics", headers=r), 200)
    expect(await c.get(f"{API}/metrics", headers=a), 403)
    expect(await c.get("/metrics", headers=r), 200)
    expect(await c.get("/metrics", headers=a), 403)
    expect(await c.get("/metrics"), 401)
    expect(await c.get(f"{API}/usage?group_by=day", headers=a), 200)
    expect(await c.get(f"{API}/usage?group_by=user", headers=r), 200)
    expect(await c.get(f"{API}/usage?user=root", headers=a), 403)
    expect(await c.get(f"{API}/usage?user=nobody", headers=r), 404)
    expect(await c.get(f"{API}/usage?group_by=week", headers=a), 422)
    expect(await c.get(f"{API}/secrets", headers=a), 200)
    expect(await c.put(f"{API}/secrets/KEY", json={"value": "v"}, headers=a), 201)
    expect(await c.put(f"{API}/secrets/KEY", json={"value": "w"}, headers=a), 204)
    expect(await c.put(f"{API}/secrets/1KEY", json={"value": "v"}, headers=a), 422)
    expect(await c.delete(f"{API}/secrets/KEY", headers=a), 204)
    expect(await c.delete(f"{API}/secrets/KEY", headers=a), 404)
    expect(await c.get("/healthz"), 200)
    expect(await c.get("/readyz"), 200)


@asynccontextmanager
async def over_quota(
    c: httpx.AsyncClient, admin: Account, user: Account, *limits: str
) -> AsyncIterator[None]:
    """`user`'s `limits` at 0 inside the block, back to their defaults after it."""
    url = f"{API}/users/{user.id}"
    zero = {"quotas": dict.fromkeys(limits, 0)}
    expect(await c.patch(url, json=zero, headers=admin.headers), 200)
    try:
        yield
    finally:
        default = {"quotas": dict.fromkeys(limits, "default")}
        expect(await c.patch(url, json=default, headers=admin.headers), 200)


async def _quotas(
    c: httpx.AsyncClient, alice: Account, admin: Account, install: dict[str, str]
) -> None:
    """Every quota at 0 for alice: each creating route answers 429."""
    h = alice.headers
    created = await c.post(f"{API}/conversations", json={"ghost": "dev/finder"}, headers=h)
    one = f"{API}/conversations/{expect(created, 201).json()['id']}"
    limits = ("turns_per_minute", "skill_bytes", "skills", "ghosts", "conversations")
    quotas = {"quotas": dict.fromkeys(limits, 0)}
    expect(await c.patch(f"{API}/users/{alice.id}", json=quotas, headers=admin.headers), 200)
    expect(await c.post(f"{one}/messages", json={"content": "x"}, headers=h), 429)
    expect(await c.post(f"{API}/conversations", json={"ghost": "dev/finder"}, headers=h), 429)
    expect(await c.post(f"{NS}/skills", content=zips.skill("more"), headers={**h, **ZIP}), 429)
    archive = zips.skill("pdf-tools")
    expect(await c.put(f"{NS}/skills/pdf-tools", content=archive, headers={**h, **ZIP}), 429)
    expect(await c.post(f"{NS}/ghosts", json=ghost("more"), headers=h), 429)
    expect(await c.post(f"{API}/apply", json=[ghost("more")], headers=h), 429)
    expect(await c.post(f"{NS}/skills/pdf-tools/rollback", json={"version": 1}, headers=h), 429)
    expect(await c.post(f"{NS}/skills/install", json=install, headers=h), 429)
    plugin = plugin_zip(TOOLKIT_FILES, "partner/ui-toolkit/")
    expect(await c.post(f"{NS}/plugins", content=plugin, headers={**h, **ZIP}), 429)
    with SourceServer() as server:
        server.files["/p.zip"] = plugin
        imported = await c.post(
            f"{NS}/plugins/import", json={"url": server.url("/p.zip")}, headers=h
        )
        expect(imported, 429)


async def _search(app: FastAPI, c: httpx.AsyncClient, alice: Account, admin: Account) -> None:
    h = alice.headers
    expect(await c.get(f"{API}/skills/search?q=tool", headers=h), 200)
    expect(await c.get(f"{API}/skills/search", headers=h), 422)
    expect(await c.post(f"{NS}/ghosts", json=ghost("finder"), headers=h), 201)
    expect(await c.get(f"{NS}/ghosts/finder/skills/search?q=x", headers=h), 200)
    expect(await c.get(f"{NS}/ghosts/nope/skills/search?q=x", headers=h), 404)
    expect(await c.get(f"{NS}/ghosts/finder/skills/search", headers=h), 422)
    async with stale_ghost(app, "dev", "finder"):
        expect(await c.get(f"{NS}/ghosts/finder/skills/search?q=x", headers=h), 409)
    expect(await c.post(f"{PUBLIC}/ghosts", json=ghost("finder"), headers=admin.headers), 201)
    expect(await c.get(f"{PUBLIC}/ghosts/finder/skills/search?q=x", headers=h), 200)
    expect(await c.get(f"{PUBLIC}/ghosts/nope/skills/search?q=x", headers=h), 404)
    expect(await c.get(f"{PUBLIC}/ghosts/finder/skills/search?q=x&limit=0", headers=h), 422)
    async with stale_ghost(app, "public", "finder"):
        expect(await c.get(f"{PUBLIC}/ghosts/finder/skills/search?q=x", headers=h), 409)


PLANNED = (
    "allowed-tools: echo\n"
    "mcpServers:\n  fx: {type: http, url: 'http://127.0.0.1:9/mcp'}\n"
    "plan:\n  - {tool: echo, arguments: {message: '{{prompt}}'}}\n"
)


async def _plans(c: httpx.AsyncClient, alice: Account) -> None:
    h = alice.headers
    archive = zips.skill("planned", extra=PLANNED)
    expect(
        await c.post(
            f"{NS}/skills", files={"file": ("p.zip", archive, "application/zip")}, headers=h
        ),
        201,
    )
    expect(
        await c.post(f"{NS}/ghosts", json=ghost("planner", allowPlanExecution=True), headers=h), 201
    )
    plan = f"{NS}/skills/planned/plan"
    expect(await c.post(plan, json={"request": "hi"}, headers=h), 200)
    expect(await c.post(plan, json={}, headers=h), 422)
    expect(await c.post(f"{NS}/skills/nope/plan", json={"request": "hi"}, headers=h), 404)
    step = {"tool": "echo", "arguments": {"message": "hi"}}
    run = {"plan": [step], "ghost": "planner"}
    executed = expect(await c.post(f"{plan}/execute", json=run, headers=h), 200)
    assert executed.json()["steps"][0]["error"]["code"] == "plan_tool_unavailable"
    expect(await c.post(f"{plan}/execute", json={**run, "ghost": "finder"}, headers=h), 403)
    expect(await c.post(f"{plan}/execute", json={**run, "plan": []}, headers=h), 422)
    expect(await c.post(f"{NS}/skills/nope/plan/execute", json=run, headers=h), 404)


async def _chat(
    app: FastAPI,
    c: httpx.AsyncClient,
    alice: Account,
    admin: Account,
    openai_server: FakeOpenAIServer,
) -> None:
    setup = await make_setup(c, alice, openai_server)
    h = alice.headers
    conversations = f"{API}/conversations"
    expect(await c.post(conversations, json={"ghost": "dev/nope"}, headers=h), 404)
    expect(await c.post(conversations, json={"ghost": "x"}, headers=h), 422)
    cid = await setup.conversation(c)
    one = f"{conversations}/{cid}"
    expect(await c.get(conversations, headers=h), 200)
    expect(await c.get(f"{conversations}?limit=0", headers=h), 422)
    expect(await c.get(one, headers=h), 200)
    expect(await c.get(f"{conversations}/nope", headers=h), 404)
    renamed = expect(await c.patch(one, json={"title": "  Renamed  "}, headers=h), 200)
    assert renamed.json()["title"] == "Renamed"
    expect(await c.patch(one, json={"title": " "}, headers=h), 422)
    expect(await c.patch(f"{conversations}/nope", json={"title": "x"}, headers=h), 404)
    openai_server.script(Reply(text="Hello."))
    answer = expect(await c.post(f"{one}/messages", json={"content": "hi"}, headers=h), 200)
    assert answer.json()["content"] == "Hello."
    openai_server.script(Reply(text="Streamed."))
    sse = {**h, "Accept": "text/event-stream"}
    async with c.stream("POST", f"{one}/messages", json={"content": "again"}, headers=sse) as s:
        expect(s, 200)
        events = [line async for line in s.aiter_lines() if line.startswith("event: ")]
    assert events[-1] == "event: done"
    expect(await c.post(f"{one}/messages", json={"content": ""}, headers=h), 422)
    expect(await c.post(f"{conversations}/nope/messages", json={"content": "x"}, headers=h), 404)
    async with held_turn(c, setup, openai_server, cid, "held") as running:
        busy = await c.post(f"{one}/messages", json={"content": "x"}, headers=h)
        assert_error(busy, 409, "turn_in_progress")
        other = await setup.conversation(c)
        # An admin's per-user override: the held turn is the caller's one.
        user = f"{API}/users/{alice.id}"
        one_turn = {"quotas": {"concurrent_turns": 1}}
        expect(await c.patch(user, json=one_turn, headers=admin.headers), 200)
        try:
            again = await c.post(
                f"{conversations}/{other}/messages", json={"content": "x"}, headers=h
            )
        finally:
            default = {"quotas": {"concurrent_turns": "default"}}
            expect(await c.patch(user, json=default, headers=admin.headers), 200)
        assert_error(again, 429, "too_many_turns")
        assert again.headers["retry-after"] == str(app.state.settings.retry_after_seconds)
        expect(await c.post(f"{one}/cancel", headers=h), 200)
    await running
    expect(await c.post(f"{conversations}/nope/cancel", headers=h), 404)
    expect(await c.get(f"{one}/messages", headers=h), 200)
    expect(await c.get(f"{one}/messages?continue=abc", headers=h), 422)
    expect(await c.get(f"{conversations}/nope/messages", headers=h), 404)
    expect(await c.delete(f"{conversations}/nope", headers=h), 404)
    expect(await c.delete(one, headers=h), 204)


async def _artifacts(
    c: httpx.AsyncClient, app: FastAPI, alice: Account, bob: Account
) -> dict[str, str]:
    """Every status of artifacts and installs; the install request, for `_quotas`."""
    h = alice.headers
    model = {"name": "scripted", "baseUrl": "http://127.0.0.1:9/v1"}
    crd = ghost("holder", model=model)
    expect(await c.post(f"{NS}/ghosts", json=crd, headers=h), 201)
    cid = expect(await c.post(f"{API}/conversations", json={"ghost": "dev/holder"}, headers=h), 201)
    one = f"{API}/conversations/{cid.json()['id']}"
    async with app.state.sessionmaker() as session:
        row = await artifact_store.add(
            session,
            cid.json()["id"],
            kind=artifact_store.OUTPUT,
            name="tool.zip",
            mime_type="application/zip",
            data=zips.skill("installed"),
        )
        await session.commit()
    expect(await c.get(f"{one}/artifacts", headers=h), 200)
    expect(await c.get(f"{one}/artifacts?limit=0", headers=h), 422)
    expect(await c.get(f"{API}/conversations/nope/artifacts", headers=h), 404)
    expect(await c.get(f"{one}/artifacts/{row.id}", headers=h), 200)
    expect(await c.get(f"{one}/artifacts/nope", headers=h), 404)
    expect(await c.get(f"{one}/artifacts/a%00b", headers=h), 422)  # `TextId`: no NUL
    nul = f"{API}/conversations/a%00b"
    expect(await c.get(nul, headers=h), 422)
    expect(await c.delete(nul, headers=h), 422)
    expect(await c.post(f"{nul}/cancel", headers=h), 422)
    files = {"file": ("data.txt", b"a,b", "text/plain")}
    expect(await c.post(f"{one}/files", files=files, headers=h), 201)
    expect(await c.post(f"{one}/files", files=files, headers=bob.headers), 404)
    expect(await c.post(f"{one}/files?name=..", content=b"x", headers=h), 422)
    expect(await c.get(f"{one}/files", headers=h), 200)
    expect(await c.get(f"{one}/files?limit=0", headers=h), 422)
    expect(await c.get(f"{API}/conversations/nope/files", headers=h), 404)
    install = {"conversation": cid.json()["id"], "artifact": row.id}
    expect(await c.post(f"{NS}/skills/install", json=install, headers=h), 201)
    expect(await c.post(f"{NS}/skills/install", json=install, headers=h), 409)
    expect(await c.post(f"{NS}/skills/install", json=install, headers=bob.headers), 404)
    expect(await c.post(f"{NS}/skills/install", json={"conversation": "x"}, headers=h), 422)
    return install


def _each_operation(contract: Contract) -> Iterator[tuple[str, str]]:
    """(METHOD, URL) of every documented operation, with placeholder path parameters."""
    values = {"namespace": "dev", "name": "x", "token_id": "1", "user_id": "1", "path": "a.md"}
    for path, operations in contract.app.openapi()["paths"].items():
        url = path
        for key, value in values.items():
            url = url.replace(f"{{{key}}}", value)
        url = url.replace("{conversation_id}", "c")
        for method in operations:
            yield method.upper(), url


@contextmanager
def dead_database(app: FastAPI, tmp_path: Any) -> Iterator[None]:
    """Point the app (its main pool and its auth pool) at a database that cannot be opened."""
    saved = app.state.engine, app.state.sessionmaker, app.state.auth
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path}/missing/dir/db.sqlite")
    dead = create_sessionmaker(engine)
    app.state.engine, app.state.sessionmaker, app.state.auth = engine, dead, RequestAuth(dead, dead)
    try:
        yield
    finally:
        app.state.engine, app.state.sessionmaker, app.state.auth = saved


async def test_every_documented_status_is_answered_with_its_documented_body(
    app: FastAPI,
    client: httpx.AsyncClient,
    contract: Contract,
    alice: Account,
    bob: Account,
    admin: Account,
    openai_server: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
) -> None:
    await _accounts(client, alice, admin)
    await _skills(client, f"{NS}/skills", alice, admin)
    await _skills(client, f"{PUBLIC}/skills", admin, alice)
    await _imports(app, client, f"{NS}/skills", alice, admin)
    await _imports(app, client, f"{PUBLIC}/skills", admin, alice)
    await _ghosts(client, f"{NS}/ghosts", alice, admin)
    await _ghosts(client, f"{PUBLIC}/ghosts", admin, alice)
    await _plugins(app, client, f"{NS}/plugins", alice, admin)
    await _plugins(app, client, f"{PUBLIC}/plugins", admin, alice)
    await _plugin_imports(app, client, f"{NS}/plugins", alice, admin)
    await _plugin_imports(app, client, f"{PUBLIC}/plugins", admin, alice)
    await _apply(client, alice, monkeypatch)
    await _chat(app, client, alice, admin, openai_server)
    await _search(app, client, alice, admin)
    install = await _artifacts(client, app, alice, bob)
    await _plans(client, alice)
    await _quotas(client, alice, admin, install)
    for method, url in _each_operation(contract):
        if url.startswith(API):
            assert_error(await client.request(method, url), 401, "missing_token")
        if url.startswith(API) and method in ("POST", "PUT", "PATCH"):  # every body is capped
            big = oversized(alice.headers, "application/json")
            expect(await client.request(method, url, **big), 413)
    with dead_database(app, tmp_path):
        expect(await client.get("/readyz"), 503)
        expect(await client.get("/metrics", headers=admin.headers), 503)
        for method, url in _each_operation(contract):
            if url.startswith(API):
                response = await client.request(method, url, headers=alice.headers)
                assert_error(response, 503, "dependency_unavailable")
                assert response.headers["retry-after"] == "2", (method, url)

    never_answered = contract.documented() - contract.seen
    assert not never_answered, (sorted(never_answered), sorted(contract.seen)[:5])


def test_the_document_declares_the_error_envelope_and_nothing_of_fastapis_default(
    app: FastAPI,
) -> None:
    document = app.openapi()
    text = json.dumps(document)
    assert "HTTPValidationError" not in text and '"detail"' not in text
    envelope = {"$ref": "#/components/schemas/ErrorResponse"}
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            if path.startswith(API):
                assert {"401", "503"} <= set(responses), (method, path)
            for status, response in responses.items():
                if int(status) >= 400 and path != "/readyz":
                    schema = response["content"]["application/json"]["schema"]
                    assert schema == envelope, (method, path, status)
                json_body = response.get("content", {}).get("application/json")
                if json_body is not None:
                    assert json_body.get("schema"), (method, path, status)
    body = document["components"]["schemas"]["ErrorBody"]
    assert set(body["required"]) == {"code", "message", "details"}
    assert set(ERROR_DESCRIPTIONS) >= {401, 403, 404, 409, 412, 413, 415, 422}


def test_the_check_refuses_an_undeclared_status_and_a_body_of_the_wrong_shape(
    app: FastAPI, contract: Contract
) -> None:
    request = httpx.Request("PUT", "http://testserver/api/v1/secrets/KEY")
    ok = httpx.Response(201, request=request)
    contract.check(request, ok, b"")
    # what the route was documented as before: 200 with a JSON body
    undeclared = httpx.Response(200, json={}, request=request)
    with pytest.raises(ResponseNotFound):
        contract.check(request, undeclared, undeclared.content)
    fastapi_default = {"detail": [{"loc": ["body"], "msg": "x", "type": "missing"}]}
    wrong = httpx.Response(422, json=fastapi_default, request=request)
    with pytest.raises((InvalidData, DataValidationError)):
        contract.check(request, wrong, wrong.content)
