"""The FastAPI application factory (the gateway process)."""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import socketio
from fastapi import APIRouter, FastAPI
from langchain_core.language_models import BaseChatModel
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from backend.api.access_log import AccessLogMiddleware
from backend.api.body_limits import BodyLimitMiddleware
from backend.api.console import console_router
from backend.api.errors import errors, install_error_handlers
from backend.api.routes import (
    apply,
    artifacts,
    conversations,
    ghosts,
    health,
    me,
    metrics,
    plugins,
    prometheus,
    secrets,
    skill_install,
    skill_plans,
    skill_search,
    skills,
    tokens,
    usage,
    users,
)
from backend.api.security_headers import SecurityHeadersMiddleware
from backend.auth import service as auth_service
from backend.auth.requests import RequestAuth
from backend.auth.tokens import MIN_BOOTSTRAP_TOKEN_LENGTH
from backend.chat.runtime import ChatRuntime
from backend.chat.sandbox import create_sandbox
from backend.config import Settings, get_settings, unknown_env_variables
from backend.db.engine import create_auth_engine, create_engine, create_sessionmaker
from backend.ops import metrics as ops_metrics
from backend.ops import tracing
from backend.ops.memory import freeze_startup_objects
from backend.ops.serve import observe_chat_shell, serve_metrics
from backend.plugins.remote import SourceFetcher
from backend.redis_client import create_redis
from backend.secrets.cipher import load_cipher
from backend.skills.builtin import sync_builtin_skills
from backend.skills.importing.slots import ImportSlots
from backend.ws.chat_namespace import ChatNamespace
from backend.ws.rooms import SocketIORooms
from backend.ws.server import socketio_server

log = logging.getLogger("skillhive")

API_PREFIX = "/api/v1"


async def bootstrap_admin(
    settings: Settings, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    """First start: user `admin` owning SKILLHIVE_BOOTSTRAP_ADMIN_TOKEN, if no admin exists."""
    if settings.bootstrap_admin_token is None:
        return
    secret = settings.bootstrap_admin_token.get_secret_value()
    if len(secret) < MIN_BOOTSTRAP_TOKEN_LENGTH:
        raise RuntimeError(
            f"SKILLHIVE_BOOTSTRAP_ADMIN_TOKEN must be at least {MIN_BOOTSTRAP_TOKEN_LENGTH} "
            "characters of random text"
        )
    async with sessionmaker() as session:
        if await auth_service.any_admin_exists(session):
            return
        user = await auth_service.create_user(session, "admin", admin=True)
        await auth_service.issue_token(session, user, "bootstrap", secret=secret)
        await session.commit()
    log.info("bootstrap: created admin user 'admin' with the configured token")


# Every API route authenticates, and reads the database.
_API_RESPONSES = errors(401, 503)


@functools.cache
def _chat_router() -> APIRouter:
    """The chat turn's routes, the busiest of the API, which the app includes before any other
    router. FastAPI matches an app's routers in order, and before it looks into an included
    router it walks that router's routes and, recursively, its included routers' (to see
    whether they changed): behind the API router, every turn's request walked all of the API's
    routes first. No other path starts with `/api/v1/conversations`, so the order changes no
    match. Built once per process, as `_api_router`."""
    chat = APIRouter(prefix=API_PREFIX, responses=_API_RESPONSES)
    chat.include_router(conversations.router)
    return chat


@functools.cache
def _api_router() -> APIRouter:
    """Built once per process: it depends on no setting, and FastAPI prepares every route of a
    router (dependencies, response models) when it is included, which each app would repeat
    for the API router's routes. An app including it prepares its own copies as before."""
    api = APIRouter(prefix=API_PREFIX, responses=_API_RESPONSES)
    # Routes are matched in order, each router's all of them (FastAPI does not skip a router by
    # its prefix): fixed paths before the trees whose names would match them.
    api.include_router(skill_search.router)  # before the CRD trees: `/skills/search` is fixed
    for module in (me, tokens, users, secrets, artifacts, metrics, usage):
        api.include_router(module.router)
    api.include_router(skill_install.router)  # before the CRD tree: `/skills/install` is fixed
    api.include_router(skill_plans.router)
    api.include_router(skills.namespaced)
    api.include_router(skills.public)
    api.include_router(ghosts.namespaced)
    api.include_router(ghosts.public)
    for router in (
        plugins.namespaced,
        plugins.public,
        plugins.ghost_namespaced,
        plugins.ghost_public,
    ):
        api.include_router(router)
    api.include_router(apply.router)
    return api


def create_app(
    settings: Settings | None = None, *, chat_model: BaseChatModel | None = None
) -> FastAPI:
    """The FastAPI app; `app.state.sio` is its Socket.IO server (see `create_asgi_app`).

    `chat_model` replaces the model every turn would build from settings (tests, benchmarks).
    """
    settings = settings or get_settings()
    sio = socketio_server(settings)
    sandbox = create_sandbox(settings)
    runtime = ChatRuntime(settings, model=chat_model, sandbox=sandbox)
    sio.register_namespace(ChatNamespace(runtime, sio.live_auth))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        for name in unknown_env_variables():
            log.warning("unknown setting %s ignored (see docs/configuration.md)", name)
        app.state.cipher = load_cipher(settings)  # refuses to start without a key in production
        engine: AsyncEngine = create_engine(
            settings.effective_database_url,
            pool_size=settings.database_pool_size,
            pool_timeout=settings.database_pool_timeout,
            busy_timeout=settings.database_busy_timeout,
        )
        auth_engine = create_auth_engine(
            settings.effective_database_url,
            engine,
            pool_size=settings.database_auth_pool_size,
            pool_timeout=settings.database_pool_timeout,
            busy_timeout=settings.database_busy_timeout,
        )
        app.state.engine = engine
        app.state.sessionmaker = create_sessionmaker(engine)
        app.state.auth = RequestAuth(create_sessionmaker(auth_engine), app.state.sessionmaker)
        app.state.redis = create_redis(settings.redis_url) if settings.redis_url else None
        stop_metrics = None
        if settings.metrics and settings.metrics_port is not None:  # ops: their own address
            stop_metrics = serve_metrics(
                settings.metrics_host, settings.metrics_port, app.state.metrics_registry
            )
        try:
            await bootstrap_admin(settings, app.state.sessionmaker)
            await sync_builtin_skills(app.state.sessionmaker, settings)
            await runtime.start(
                app.state.sessionmaker,
                app.state.cipher,
                app.state.redis,
                listeners=[SocketIORooms(sio).deliver],
            )
            sio.live_auth.start(app.state.sessionmaker, app.state.redis)
            yield
        finally:
            if stop_metrics is not None:
                stop_metrics()
            await sio.live_auth.aclose()
            await runtime.aclose()
            app.state.sandbox.close()
            if app.state.redis is not None:
                await app.state.redis.aclose()
            await app.state.auth.aclose()
            await auth_engine.dispose()
            await engine.dispose()

    app = FastAPI(
        title="Skillhive",
        version="0.1.0",
        summary="Backend for AI agents that learn skills on demand",
        lifespan=lifespan,
        docs_url=None,  # the console serves /docs without a CDN (backend/api/console.py)
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.sio = sio
    app.state.chat = runtime
    app.state.sandbox = sandbox
    # marketplace entries with a remote source are fetched as URL imports are (egress, limits)
    app.state.plugin_fetcher = SourceFetcher(lambda: app.state.settings)
    app.state.import_slots = ImportSlots(
        settings.import_concurrency, retry_after_s=settings.retry_after_seconds
    )
    app.state.auth_notices = sio.live_auth  # routes that end authorization tell open sockets
    # ops: what a scrape of this process shows (backend/ops/metrics.py)
    app.state.metrics_registry = ops_metrics.exposition_registry(
        ops_metrics.ProcessSources(
            pending_requests=lambda: runtime.transport.registry if runtime.started else None,
            engine=lambda: getattr(app.state, "engine", None),
        )
    )
    if settings.metrics:
        observe_chat_shell()
    tracing.configure(settings, "skillhive-gateway")  # FastAPI then traces every request
    install_error_handlers(app)
    app.add_middleware(BodyLimitMiddleware, settings=settings)
    if settings.metrics:
        app.add_middleware(ops_metrics.HttpMetricsMiddleware, prefixes=[API_PREFIX])
    app.add_middleware(SecurityHeadersMiddleware)  # on every answer, errors included
    app.add_middleware(AccessLogMiddleware)  # added last: outermost, it logs every answer
    app.include_router(_chat_router())  # first: `_chat_router`
    app.include_router(health.router)
    if settings.metrics and settings.metrics_port is None:  # else on their own port, or off
        app.include_router(prometheus.router)
    app.include_router(_api_router())
    app.include_router(console_router(settings))  # the web console at `/`
    return app


def create_asgi_app(settings: Settings | None = None, **kwargs: Any) -> socketio.ASGIApp:
    """What uvicorn serves: Socket.IO at `/socket.io/`, everything else to FastAPI."""
    app = create_app(settings, **kwargs)
    return socketio.ASGIApp(app.state.sio, other_asgi_app=app)


def create_served_app(**kwargs: Any) -> socketio.ASGIApp:
    """`skillhive serve`'s app (uvicorn calls it in each worker process): `create_asgi_app`,
    then the process's objects so far frozen out of full garbage collections
    (`backend/ops/memory.py`)."""
    app = create_asgi_app(**kwargs)
    freeze_startup_objects()
    return app
