"""Turn events across processes: Redis pub/sub, one channel per conversation.

A worker publishes each event; the gateway holding an SSE stream subscribes before the turn
starts (the subscription is confirmed before `subscribe` returns, so no event slips past).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import redis.asyncio as aioredis

from backend.chat.events import EventData

PREFIX = "skillhive:conversation:"


def channel(conversation_id: str) -> str:
    return PREFIX + conversation_id


class RedisEventBus:
    def __init__(self, redis: aioredis.Redis) -> None:
        self.redis = redis

    async def emit(self, conversation_id: str, event: EventData) -> None:
        await self.redis.publish(channel(conversation_id), json.dumps(event, separators=(",", ":")))

    @asynccontextmanager
    async def subscribe(self, conversation_id: str) -> AsyncIterator[AsyncIterator[EventData]]:
        pubsub = self.redis.pubsub()
        try:
            await pubsub.subscribe(channel(conversation_id))
            while True:  # wait for the server's confirmation: from here on nothing is missed
                confirmation = await pubsub.get_message(timeout=5.0)
                if confirmation is not None and confirmation["type"] == "subscribe":
                    break

            async def events() -> AsyncIterator[EventData]:
                async for message in pubsub.listen():
                    if message["type"] == "message":
                        yield json.loads(message["data"])

            yield events()
        finally:
            await pubsub.aclose()  # type: ignore[no-untyped-call]
