"""Turn dispatch through a Redis Stream (scale-out mode): the gateway side and the shared keys.

The gateway claims the conversation (`SET NX`), stores the user message, and appends only ids to
the stream; `skillhive worker` processes (backend/worker.py) consume it in a consumer group.
"""

from __future__ import annotations

import uuid
from typing import Any

import redis.asyncio as aioredis

from backend.chat.dispatch import StoreUserMessage, turn_in_progress
from backend.ops.tracing import inject

STREAM = "skillhive:turns"
GROUP = "skillhive-workers"
CANCEL_CHANNEL = "skillhive:cancel"
# Held from the send until a worker finishes the turn; workers keep extending it while they run.
LOCK_TTL_S = 120
STREAM_MAXLEN = 100_000  # trimmed approximately: acknowledged history is not needed

# Release a key only if it still holds what we put there (never someone else's newer claim).
RELEASE_IF_VALUE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def lock_key(conversation_id: str) -> str:
    return f"skillhive:turn-lock:{conversation_id}"


class RedisStreamDispatcher:
    def __init__(self, redis: aioredis.Redis) -> None:
        self.redis = redis
        self._release = redis.register_script(RELEASE_IF_VALUE)

    async def submit(self, conversation_id: str, store_user_message: StoreUserMessage) -> int:
        key = lock_key(conversation_id)
        claim = f"claim:{uuid.uuid4().hex}"
        if not await self.redis.set(key, claim, nx=True, ex=LOCK_TTL_S):
            raise turn_in_progress(conversation_id)
        try:
            message_id = await store_user_message()
        except BaseException:
            await self._release(keys=[key], args=[claim])
            raise
        # From here the lock names the message, so the worker that answers it can release it.
        await self.redis.set(key, str(message_id), xx=True, ex=LOCK_TTL_S)
        fields: dict[Any, Any] = {"conversation_id": conversation_id, "message_id": str(message_id)}
        fields.update(inject())  # ops: the trace context rides in the entry (W3C traceparent)
        await self.redis.xadd(
            STREAM,
            fields,
            maxlen=STREAM_MAXLEN,
            approximate=True,
        )
        return message_id

    async def cancel(self, conversation_id: str) -> bool:
        if not await self.redis.exists(lock_key(conversation_id)):
            return False
        await self.redis.publish(CANCEL_CHANNEL, conversation_id)
        return True

    async def aclose(self) -> None:
        return None
