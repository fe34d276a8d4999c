"""Local chat models that need no network: a streaming, tool-calling base and two models.

`LocalToolChatModel` turns whatever reply a subclass decides into a real token stream (text split
at whitespace, tool calls as tool-call chunks, usage on the last chunk), natively async so no
thread hop per chunk. On it: `ScriptedChatModel` (tests, benchmarks) and `OfflineChatModel`
(the embedded default and demos).
"""

from __future__ import annotations

import json
import re
from abc import abstractmethod
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from chat_shell.skills.prompt import LOAD_SKILL_TOOL, parse_catalog, parse_loaded_names

ToolSchemas = list[dict[str, Any]]


def estimate_tokens(text: str) -> int:
    """A cheap token estimate (about four characters per token)."""
    return (len(text) + 3) // 4


def estimate_usage(messages: Sequence[BaseMessage], reply: AIMessage) -> UsageMetadata:
    """The offline estimate of one model call: what offline models report, and what a turn
    counts (marked estimated) when a provider reports nothing."""
    prompt = estimate_tokens("".join(m.text for m in messages))
    completion = estimate_tokens(
        reply.text + "".join(json.dumps(c["args"]) for c in reply.tool_calls)
    )
    return UsageMetadata(
        input_tokens=prompt, output_tokens=completion, total_tokens=prompt + completion
    )


def _chunks(reply: AIMessage, usage: UsageMetadata) -> list[ChatGenerationChunk]:
    pieces = re.findall(r"\S+\s*|\s+", reply.text)
    messages = [AIMessageChunk(content=p, id=reply.id) for p in pieces]
    messages += [
        AIMessageChunk(
            content="",
            id=reply.id,
            tool_call_chunks=[
                {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i}
            ],
        )
        for i, c in enumerate(reply.tool_calls)
    ]
    messages.append(
        AIMessageChunk(content="", id=reply.id, usage_metadata=usage, chunk_position="last")
    )
    return [ChatGenerationChunk(message=m) for m in messages]


class LocalToolChatModel(BaseChatModel):
    """Base of deterministic local models: subclasses decide the reply, this class streams it."""

    @property
    def _llm_type(self) -> str:
        return "skillhive-local"

    @abstractmethod
    def reply(self, messages: list[BaseMessage], tools: ToolSchemas) -> AIMessage:
        """The whole answer to `messages`, given the OpenAI-format schemas of the bound tools."""

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _answer(
        self, messages: list[BaseMessage], kwargs: dict[str, Any]
    ) -> tuple[AIMessage, UsageMetadata]:
        reply = self.reply(messages, list(kwargs.get("tools", [])))
        return reply, estimate_usage(messages, reply)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply, usage = self._answer(messages, kwargs)
        message = reply.model_copy(update={"usage_metadata": usage})
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for chunk in _chunks(*self._answer(messages, kwargs)):
            if run_manager:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in _chunks(*self._answer(messages, kwargs)):
            if run_manager:
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._generate(messages, stop, None, **kwargs)


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


_STOPWORDS = frozenset(
    "about after again also and any are can could does for from have help how into just like make "
    "more need please should some than that the their them then there these this those use used "
    "user using want what when where which while will with would you your".split()
)


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) >= 3} - _STOPWORDS


def _skill_enum(tools: ToolSchemas) -> list[str]:
    for tool in tools:
        function = tool.get("function", {})
        if function.get("name") == LOAD_SKILL_TOOL:
            return list(function["parameters"]["properties"]["skill_name"].get("enum", []))
    return []


class OfflineChatModel(LocalToolChatModel):
    """Skillhive's offline model: loads the skill the user's words point at, then says what it is.

    It reads only what a real model reads: the prompt (catalog, loaded skills) and the bound tools.
    """

    def reply(self, messages: list[BaseMessage], tools: ToolSchemas) -> AIMessage:
        system = next((m.text for m in messages if isinstance(m, SystemMessage)), "")
        loaded = parse_loaded_names(system)
        last = messages[-1] if messages else None
        if isinstance(last, HumanMessage):
            catalog = parse_catalog(system)
            names = _skill_enum(tools) or sorted(catalog)  # a partial catalog has no enum
            skill = self._pick_skill(last.text, catalog, names, loaded)
            if skill is not None:
                call = {"name": LOAD_SKILL_TOOL, "args": {"skill_name": skill}}
                return AIMessage(
                    content="", tool_calls=[{**call, "id": f"offline_{len(messages)}"}]
                )
        question = next((m.text for m in reversed(messages) if isinstance(m, HumanMessage)), "")
        return AIMessage(content=self._answer_text(question, loaded, isinstance(last, ToolMessage)))

    @staticmethod
    def _pick_skill(
        text: str, catalog: dict[str, str], names: list[str], loaded: list[str]
    ) -> str | None:
        words = _words(text)
        scores = {
            name: 3 * len(_words(name.replace("-", " ").replace("_", " ")) & words)
            + len(_words(catalog.get(name, "")) & words)
            for name in sorted(names)
            if name not in loaded
        }
        best = max(scores.items(), key=lambda kv: kv[1], default=(None, 0))
        return best[0] if best[1] > 0 else None

    @staticmethod
    def _answer_text(question: str, loaded: list[str], after_tool: bool) -> str:
        text = (
            "This is Skillhive's offline model: no language model is configured, so I cannot "
            "really answer."
        )
        if loaded:
            text += f" Active skills: {', '.join(loaded)}."
        elif after_tool:
            text += " I tried to load a skill for this."
        if question:
            text += f' You said: "{question.strip()[:200]}"'
        return text
