"""`ScriptedChatModel`: a test double that replies from a script and records every call
(tests, benchmarks and demos)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    SystemMessage,
)
from pydantic import Field

from chat_shell._local_model import LocalToolChatModel, ToolSchemas


@dataclass
class RecordedCall:
    """What one model call really received."""

    messages: list[BaseMessage]
    tools: ToolSchemas

    @property
    def system(self) -> str:
        return next((m.text for m in self.messages if isinstance(m, SystemMessage)), "")

    @property
    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.tools]

    def tool_schema(self, name: str) -> dict[str, Any]:
        schema: dict[str, Any] = next(
            t["function"] for t in self.tools if t["function"]["name"] == name
        )
        return schema


Step = AIMessage | Callable[[list[BaseMessage]], AIMessage]


class ScriptedChatModel(LocalToolChatModel):
    """Replies from a script (messages, or functions of the input) and records every call.

    For tests, benchmarks and demos. With `cycle`, the script repeats forever.
    """

    script: list[Any] = Field(
        default_factory=list
    )  # Steps; unvalidated, pydantic mangles callables
    cycle: bool = False
    calls: list[RecordedCall] = Field(default_factory=list)
    record: bool = True

    def reply(self, messages: list[BaseMessage], tools: ToolSchemas) -> AIMessage:
        if self.record:
            self.calls.append(RecordedCall(list(messages), tools))
        if not self.script:
            raise AssertionError("the scripted model's script is exhausted")
        step: Step = self.script.pop(0)
        if self.cycle:
            self.script.append(step)
        return step(messages) if callable(step) else step
