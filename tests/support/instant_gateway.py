"""A gateway whose every turn gets the same scripted answer, as its own process.

python -m tests.support.instant_gateway PORT      (settings from SKILLHIVE_* variables;
INSTANT_GATEWAY_DELAY_S: seconds each model call takes, as a remote model would, default 0)
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGenerationChunk

from backend.app import create_asgi_app
from chat_shell.offline import ScriptedChatModel

ANSWER = "An instant answer."


class DelayedModel(ScriptedChatModel):
    delay_s: float = 0.0

    async def _astream(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        await asyncio.sleep(self.delay_s)  # waiting on the network: the event loop is free
        async for chunk in super()._astream(messages, *args, **kwargs):
            yield chunk


def main() -> None:
    delay = float(os.environ.get("INSTANT_GATEWAY_DELAY_S", "0"))
    model = DelayedModel(script=[AIMessage(ANSWER)], cycle=True, record=False, delay_s=delay)
    app = create_asgi_app(chat_model=model)
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")


if __name__ == "__main__":
    main()
