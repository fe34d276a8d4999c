"""`LocalToolChatModel`: the streaming, tool-calling base of chat models that need no network.

It turns whatever reply a subclass decides into a real token stream (text split at whitespace,
tool calls as tool-call chunks, usage on the last chunk), natively async so no thread hop per
chunk. Subclasses: `ScriptedChatModel` (chat_shell/_scripted.py), `OfflineChatModel`
(chat_shell/offline.py).
"""

from __future__ import annotations

import json
import re
from abc import abstractmethod
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from chat_shell._tokens import estimate_tokens

ToolSchemas = list[dict[str, Any]]


def estimate_usage(messages: Sequence[BaseMessage], reply: AIMessage) -> UsageMetadata:
    """The offline estimate of one model call: what local models report, and what a turn
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
    # A malformed call streams its raw arguments, as a provider's does: the merged reply holds
    # it as an invalid tool call again.
    messages += [
        AIMessageChunk(
            content="",
            id=reply.id,
            tool_call_chunks=[{"name": c["name"], "args": c["args"], "id": c["id"], "index": i}],
        )
        for i, c in enumerate(reply.invalid_tool_calls, start=len(reply.tool_calls))
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
