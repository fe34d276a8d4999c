"""A second OS process that answers pending requests, like a gateway receiving `skill:response`.

    python -m tests.support.pending_peer REDIS_URL PREFIX

Prints `{"worker_id": ...}` once ready, then for every stdin line `[[user_id, request_id,
success, result, error], ...]` resolves all of them at once and prints `{"outcomes": [...]}`.
"""

from __future__ import annotations

import asyncio
import json
import sys

from chat_shell.ports import InMemoryFrontendChannel
from chat_shell.tools.pending_requests import RedisPendingRequestRegistry


def say(message: object) -> None:
    print(json.dumps(message), flush=True)


async def main(url: str, prefix: str) -> None:
    registry = RedisPendingRequestRegistry.from_url(url, InMemoryFrontendChannel(), prefix=prefix)
    async with registry:
        say({"worker_id": registry.worker_id})
        while line := await asyncio.to_thread(sys.stdin.readline):
            answers = json.loads(line)
            outcomes = await asyncio.gather(*(registry.resolve(*answer) for answer in answers))
            say({"outcomes": [str(outcome) for outcome in outcomes]})


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
