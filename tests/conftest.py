"""Fixtures shared by the whole suite: real services, one clean database per test, the app."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from backend.app import create_app
from backend.auth import service as auth_service
from backend.config import Settings
from tests.support import services
from tests.support.accounts import Account
from tests.support.lifespan import running
from tests.support.mcp_servers import fixture_http  # noqa: F401 (fixture: chat_shell and backend)
from tests.support.openai_server import FakeOpenAIServer
from tests.support.openapi import Contract, documents_reused
from tests.support.redis_server import redis_server  # noqa: F401 (fixture: backend and console)
from tests.support.redis_server import shutdown as shutdown_redis
from tests.support.routes import effective_routes_reused

BACKENDS = ["sqlite", "postgresql"]

# The fast tier (`./scripts/test --fast`, i.e. `-m "not slow"`; under a minute) leaves out, besides
# tests marked `slow` by hand: PostgreSQL runs (SQLite runs stay), Redis, the app's start-up (the
# `app` fixture: every API test), live servers, terminals, child processes and process clusters,
# Node, MCP servers, the sandbox and the deployment files. Marked here, from what a test uses.
SLOW_FIXTURES = frozenset(
    {"redis_url", "postgres_admin_url", "server_url", "connect", "app", "server", "terminal"}
)
SLOW_PATHS = (
    "tests/backend/load/",
    "tests/backend/chat/test_scale_out.py",
    "tests/backend/chat/test_socketio_chat.py",
    "tests/backend/test_heartbeat.py",
    "tests/backend/skills/test_corpus.py",
    "tests/chat_shell/agent/test_mcp_tools.py",
    "tests/chat_shell/tools/mcp_code/",
    "tests/backend/ops/test_memory.py",
    "tests/chat_shell/sandbox/",
    "tests/chat_shell/tools/mcp/test_pool_",
    "tests/chat_shell/tools/sandbox/",
    "tests/test_deploy_files.py",
    "tests/test_readme_quickstart.py",
)

# Run alone, after the parallel run (`./scripts/test`): the load tests and process clusters, whose
# bounds (every answer stored, fair slots, heartbeats) assume the machine is not also running three
# other test processes.
EXCLUSIVE_PATHS = (
    "tests/backend/load/",
    "tests/backend/chat/test_scale_out.py",
    "tests/backend/test_heartbeat.py",
    "tests/console/test_console_scale_out.py",
)


def _relative(item: pytest.Item, root: Path) -> str:
    return item.path.relative_to(root).as_posix() if item.path.is_relative_to(root) else ""


def _is_slow(item: pytest.Item, root: Path) -> bool:
    callspec = getattr(item, "callspec", None)
    if callspec is not None and callspec.params.get("db_backend") == "postgresql":
        return True
    if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    return _relative(item, root).startswith(SLOW_PATHS)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = config.rootpath
    for item in items:
        if _is_slow(item, root):
            item.add_marker(pytest.mark.slow)
        if _relative(item, root).startswith(EXCLUSIVE_PATHS):
            item.add_marker(pytest.mark.exclusive)


@pytest.fixture(scope="session", autouse=True)
def _no_user_cli_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The CLI's config file (`skillhive login`) is never the developer's own in tests."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))
        yield


@pytest.fixture(scope="session", autouse=True)
def _openapi_documents_reused() -> Iterator[None]:
    with documents_reused():
        yield


@pytest.fixture(scope="session", autouse=True)
def _effective_routes_reused() -> Iterator[None]:
    with effective_routes_reused():
        yield


@pytest.fixture(scope="session")
def services_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("services")


@pytest.fixture(scope="session")
def postgres_admin_url() -> Iterator[str]:
    url, handle = services.start_postgres()
    services.prepare_postgres_template(url)
    yield url
    if handle is not None:
        handle.cleanup()  # stop and delete now, not in an atexit hook after logging closed
        shutil.rmtree(handle.pgdata.parent, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_url(services_dir: Path) -> Iterator[str]:
    url, handle = services.start_redis(services_dir)
    yield url
    if handle is not None:
        shutdown_redis(handle)


@pytest.fixture(scope="session")
def sqlite_template(services_dir: Path) -> Path:
    return services.prepare_sqlite_template(services_dir / "template.db")


@pytest.fixture(scope="session")
def seeded_sqlite_template(sqlite_template: Path, services_dir: Path) -> Path:
    return services.prepare_seeded_sqlite_template(sqlite_template, services_dir / "seeded.db")


@pytest.fixture(scope="session")
def _openai_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def openai_server(_openai_server: FakeOpenAIServer) -> FakeOpenAIServer:
    """The scripted OpenAI-compatible server, with an empty script and no recorded requests."""
    _openai_server.script()
    return _openai_server


@pytest.fixture(params=BACKENDS)
def db_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def database_url(db_backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A clean, migrated database on the backend this test instance runs on.

    For a test using the `app` fixture, the built-in skills are already in it, as that app's
    start-up would have written them (it finds them unchanged): most of a test app's start-up.
    """
    seeded = "app" in request.fixturenames
    if db_backend == "postgresql":
        admin_url = request.getfixturevalue("postgres_admin_url")
        with services.postgres_database(admin_url, seeded=seeded) as url:
            yield url
    else:
        template = request.getfixturevalue(
            "seeded_sqlite_template" if seeded else "sqlite_template"
        )
        with services.sqlite_database(template, tmp_path) as url:
            yield url


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(database_url=database_url, data_dir=tmp_path / "data")


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[FastAPI]:
    application = create_app(settings)
    async with running(application):
        yield application


@pytest.fixture
def contract(app: FastAPI) -> Contract:
    return Contract(app)


@pytest.fixture
async def client(app: FastAPI, contract: Contract) -> AsyncIterator[httpx.AsyncClient]:
    """Every response it gets must match `/openapi.json` (else the request raises)."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport,
        base_url="http://testserver",
        event_hooks={"response": [contract.hook]},
    ) as c:
        yield c


@pytest.fixture
def make_account(app: FastAPI) -> Any:
    """`await make_account("alice", admin=False)` creates a user with a fresh token."""

    async def make(name: str, *, admin: bool = False) -> Account:
        async with app.state.sessionmaker() as session:
            user = await auth_service.create_user(session, name, admin=admin)
            issued = await auth_service.issue_token(session, user, "test")
            await session.commit()
            return Account(id=user.id, name=name, token=issued.secret)

    return make


@pytest.fixture
async def alice(make_account: Any) -> Account:
    account: Account = await make_account("alice")
    return account


@pytest.fixture
async def bob(make_account: Any) -> Account:
    account: Account = await make_account("bob")
    return account


@pytest.fixture
async def admin(make_account: Any) -> Account:
    account: Account = await make_account("root", admin=True)
    return account
