"""The one place the turn machinery is built, for the gateway and for `skillhive worker`.

Embedded mode: a `LocalTransport` and a `TurnRunner` in the gateway. Scale-out mode: the gateway
holds a `RedisTransport` only (workers run the turns); a worker holds a `RedisTransport` and a
`TurnRunner`. Either way the runner publishes to its transport and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass

import redis.asyncio as aioredis
from cryptography.fernet import Fernet
from langchain_core.language_models import BaseChatModel
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from backend.chat.packages import DatabasePackageSource
from backend.chat.sandbox import sandbox_access
from backend.chat.transport import LocalTransport, RedisKeys, RedisTransport, TurnTransport
from backend.chat.turns import TurnRunner
from backend.config import Settings
from backend.ops.quotas import Quotas
from chat_shell import BubblewrapSandbox


@dataclass(frozen=True)
class TurnMachinery:
    transport: TurnTransport
    runner: TurnRunner | None  # None on a gateway in Redis mode: workers run the turns


def redis_transport(settings: Settings, redis: aioredis.Redis) -> RedisTransport:
    return RedisTransport(
        redis, RedisKeys(settings.redis_prefix), lock_ttl_s=settings.turn_lock_ttl_s
    )


def build_runner(
    settings: Settings,
    sessionmaker: async_sessionmaker[AsyncSession],
    cipher: Fernet,
    transport: TurnTransport,
    *,
    model: BaseChatModel | None = None,
    sandbox: BubblewrapSandbox | None = None,
    slots: int | None = None,
    quotas: Quotas | None = None,
) -> TurnRunner:
    return TurnRunner(
        sessionmaker=sessionmaker,
        settings=settings,
        cipher=cipher,
        package_source=DatabasePackageSource.from_settings(sessionmaker, settings),
        transport=transport,
        model=model,
        sandbox=sandbox_access(sandbox, settings) if sandbox is not None else None,
        slots=slots,
        quotas=quotas,
    )


def build_gateway(
    settings: Settings,
    sessionmaker: async_sessionmaker[AsyncSession],
    cipher: Fernet,
    redis: aioredis.Redis | None,
    *,
    model: BaseChatModel | None = None,
    sandbox: BubblewrapSandbox | None = None,
    quotas: Quotas | None = None,
) -> TurnMachinery:
    if redis is not None:
        return TurnMachinery(redis_transport(settings, redis), None)
    transport = LocalTransport()
    runner = build_runner(
        settings,
        sessionmaker,
        cipher,
        transport,
        model=model,
        sandbox=sandbox,
        slots=settings.embedded_turn_concurrency,  # the gateway's event loop runs them all
        quotas=quotas,
    )
    transport.attach(runner)
    return TurnMachinery(transport, runner)


def build_worker(
    settings: Settings,
    sessionmaker: async_sessionmaker[AsyncSession],
    cipher: Fernet,
    redis: aioredis.Redis,
    *,
    model: BaseChatModel | None = None,
    sandbox: BubblewrapSandbox | None = None,
    quotas: Quotas | None = None,
) -> tuple[RedisTransport, TurnRunner]:
    transport = redis_transport(settings, redis)
    runner = build_runner(
        settings, sessionmaker, cipher, transport, model=model, sandbox=sandbox, quotas=quotas
    )
    return transport, runner
