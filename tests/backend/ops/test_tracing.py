"""One turn in Redis mode is one trace: gateway request -> stream entry -> worker -> model call.

The gateway app and the worker loop run as two components in this process, each with its own
Redis connection, database engine and event sinks, exactly as `skillhive worker` wires them:
the only thing linking their spans is the `traceparent` inside the stream entry. (The SDK's
in-memory exporter cannot collect spans from another OS process.)
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import redis.asyncio as aioredis
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from backend.app import create_app
from backend.chat.composition import build_worker
from backend.chat.transport import RedisKeys
from backend.config import Settings
from backend.db.engine import create_engine, create_sessionmaker
from backend.secrets.cipher import load_cipher
from backend.worker import TurnWorker
from tests.support.accounts import Account
from tests.support.ghosts import ghost
from tests.support.lifespan import running

_EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The process's tracer provider, recording in memory (installed once per process)."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


@pytest.fixture
async def redis_settings(settings: Settings, redis_url: str) -> AsyncIterator[Settings]:
    redis = aioredis.Redis.from_url(redis_url)
    stream = RedisKeys(settings.redis_prefix).stream
    await redis.delete(stream)
    yield settings.model_copy(update={"redis_url": redis_url})
    await redis.delete(stream)
    await redis.aclose()


@pytest.fixture
async def worker(redis_settings: Settings) -> AsyncIterator[TurnWorker]:
    """A worker as `skillhive worker` builds it, minus the process."""
    url = redis_settings.redis_url
    assert url is not None
    engine = create_engine(redis_settings.effective_database_url)
    sessionmaker = create_sessionmaker(engine)
    redis = aioredis.Redis.from_url(url)
    transport, runner = build_worker(
        redis_settings, sessionmaker, load_cipher(redis_settings), redis
    )
    turn_worker = TurnWorker(redis, runner, concurrency=2, keys=transport.keys)
    running = asyncio.create_task(turn_worker.run())
    try:
        yield turn_worker
    finally:
        turn_worker.stop()
        await running
        await transport.aclose()
        await redis.aclose()
        await engine.dispose()


async def test_a_turn_in_redis_mode_is_one_trace_from_gateway_through_worker(
    spans: InMemorySpanExporter,
    redis_settings: Settings,
    worker: TurnWorker,
    make_account: object,
) -> None:
    app = create_app(redis_settings)
    async with running(app):
        from backend.auth import service as auth_service

        async with app.state.sessionmaker() as session:
            user = await auth_service.create_user(session, "tracy")
            issued = await auth_service.issue_token(session, user, "t")
            await session.commit()
        h = Account(id=user.id, name="tracy", token=issued.secret).headers
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gw") as client:
            assert (
                await client.post("/api/v1/namespaces/dev/ghosts", json=ghost("g"), headers=h)
            ).status_code == 201
            created = await client.post("/api/v1/conversations", json={"ghost": "dev/g"}, headers=h)
            cid = created.json()["id"]
            spans.clear()
            answer = await client.post(
                f"/api/v1/conversations/{cid}/messages", json={"content": "hello"}, headers=h
            )
            assert answer.status_code == 200, answer.text
    finished = spans.get_finished_spans()
    by_name: dict[str, list[ReadableSpan]] = {}
    for span in finished:
        by_name.setdefault(span.name, []).append(span)
    send, received = by_name["chat.send"][0], by_name["dispatch.receive"][0]
    turn, model = by_name["chat.turn"][0], by_name["model.call"][0]
    trace_id = send.context.trace_id
    request = [s for s in finished if s.parent is None and s.context.trace_id == trace_id]
    assert [s.name for s in request] == ["POST /api/v1/conversations/{conversation_id}/messages"]
    assert {s.context.trace_id for s in (send, received, turn, model)} == {trace_id}
    # the worker's side continues the gateway's span it found in the stream entry
    assert received.parent is not None and received.parent.span_id == send.context.span_id
    assert turn.parent is not None and turn.parent.span_id == received.context.span_id
    assert model.parent is not None and model.parent.span_id == turn.context.span_id
