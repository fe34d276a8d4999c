"""Admission control: how many turns one user may have running at once, across the cluster.

A user's running turns are their conversations whose turn claim (the per-conversation lock of
`backend.chat.dispatch` / `backend.chat.stream`) is held. Admission runs inside the send, after
the claim is taken and before the user message is stored, so a refusal writes nothing (the
dispatcher drops the claim). Each admitted conversation is remembered per user; it stops
counting as soon as its claim is gone. That is the release: however the turn ends (answer,
error, cancel, deadline) its claim is released, and a dead worker's claim expires with its TTL,
so admission needs no release step of its own that a crash could skip.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

import redis.asyncio as aioredis

from backend.errors import SkillhiveError

KEY_PREFIX = "skillhive:admission:"  # under SKILLHIVE_REDIS_PREFIX when built by the runtime
UNLIMITED = 2**31 - 1
# The per-user set is dropped this long after its last admission (members are pruned sooner).
KEY_TTL_S = 24 * 3600


class TooManyTurns(SkillhiveError):
    status_code = 429
    code = "too_many_turns"


def too_many_turns(limit: int, retry_after: int) -> TooManyTurns:
    return TooManyTurns(
        f"at most {limit} turns may run at once per user; wait for one to end",
        details={"limit": limit, "retry_after": retry_after},
    )


SETTING = -1  # `admit`'s limit: the setting's (an admin's per-user override replaces it)


class Admission(Protocol):
    async def admit(self, user_id: int, conversation_id: str, limit: int | None = SETTING) -> None:
        """Count `conversation_id`'s turn (its claim is held) or raise `TooManyTurns`;
        `limit` None: no limit for this user."""
        ...


class LocalAdmission:
    """Embedded mode: turns run in this process; `running` tells whether a claim is held."""

    def __init__(self, limit: int, retry_after: int, running: Callable[[str], bool]) -> None:
        self.limit = limit
        self.retry_after = retry_after
        self.running = running
        self._admitted: dict[int, set[str]] = {}

    async def admit(self, user_id: int, conversation_id: str, limit: int | None = SETTING) -> None:
        limit = self.limit if limit == SETTING else limit
        # No await in here: check and add are one step for the event loop.
        admitted = self._admitted.setdefault(user_id, set())
        admitted.intersection_update({c for c in admitted if self.running(c)})
        others = admitted - {conversation_id}
        if limit is not None and len(others) >= limit:
            raise too_many_turns(limit, self.retry_after)
        admitted.add(conversation_id)


# KEYS[1]: the user's set (member: conversation id). ARGV: conversation id, limit, the claim
# key prefix, now, the set's TTL. Members whose claim is gone are pruned first; 1 = admitted.
_ADMIT = """
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
local others = 0
for _, member in ipairs(members) do
  if redis.call('EXISTS', ARGV[3] .. member) == 0 then
    redis.call('ZREM', KEYS[1], member)
  elseif member ~= ARGV[1] then
    others = others + 1
  end
end
if others >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[5])
return 1
"""


class RedisAdmission:
    """Scale-out mode: one Lua script per send, so concurrent gateways cannot over-admit."""

    def __init__(
        self,
        redis: aioredis.Redis,
        limit: int,
        retry_after: int,
        claim_prefix: str,
        key_prefix: str = KEY_PREFIX,
    ) -> None:
        self.limit = limit
        self.retry_after = retry_after
        self.claim_prefix = claim_prefix
        self.key_prefix = key_prefix
        self._admit = redis.register_script(_ADMIT)

    async def admit(self, user_id: int, conversation_id: str, limit: int | None = SETTING) -> None:
        limit = self.limit if limit == SETTING else limit
        most = UNLIMITED if limit is None else limit
        admitted = await self._admit(
            keys=[f"{self.key_prefix}{user_id}"],
            args=[conversation_id, most, self.claim_prefix, time.time(), KEY_TTL_S],
        )
        if not admitted:
            raise too_many_turns(most, self.retry_after)
