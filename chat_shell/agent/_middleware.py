"""The middleware that makes one shared agent graph serve every turn.

Everything turn-specific comes from the `TurnContext` in the runtime context: on each model
call the model, the system prompt (with the skills loaded so far) and the visible tools; on each
tool call the tool itself (tools are per turn, so none is registered with the graph).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, cast

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from chat_shell.agent._session import TurnContext
from chat_shell.contracts import ToolCallRecord, ToolEndEvent, ToolStartEvent
from chat_shell.errors import ChatShellError
from chat_shell.models import model_failure
from chat_shell.observe import tracer

_SUMMARY_CHARS = 500


def _summary(result: ToolMessage | Command[Any]) -> str:
    text = result.text if isinstance(result, ToolMessage) else ""
    return text if len(text) <= _SUMMARY_CHARS else text[: _SUMMARY_CHARS - 1] + "…"


class TurnMiddleware(AgentMiddleware[AgentState[Any], TurnContext, Any]):
    async def awrap_model_call(
        self,
        request: ModelRequest[TurnContext],
        handler: Callable[[ModelRequest[TurnContext]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        session = request.runtime.context.session
        session.attach_writer(request.runtime.stream_writer)
        request = request.override(
            model=session.model,
            system_message=session.system_message(),
            tools=session.model_tools(),
        )
        try:
            with tracer.start_as_current_span("model.call"):
                response = await handler(request)
        except (GraphBubbleUp, ChatShellError):
            raise
        except Exception as exc:
            key = session.request.model.api_key
            raise model_failure(exc, [key.get_secret_value()] if key else []) from exc
        prompt = [request.system_message, *request.messages] if request.system_message else []
        for message in response.result:
            if isinstance(message, AIMessage):
                session.record_model_reply(message, prompt or request.messages)
        return response

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        session = cast(TurnContext, request.runtime.context).session
        session.attach_writer(request.runtime.stream_writer)
        call = request.tool_call
        call_id, name, args = call["id"] or "", call["name"], dict(call["args"])
        session.emit(ToolStartEvent(id=call_id, name=name, args=args))
        started = time.perf_counter()
        tool = session.find_tool(name)
        result: ToolMessage | Command[Any]
        if tool is None:
            result = _error_message(call_id, name, f"Error: tool {name!r} is not available now.")
        else:
            try:
                with tracer.start_as_current_span("tool.call", attributes={"tool.name": name}):
                    result = await handler(request.override(tool=tool))
            except GraphBubbleUp:
                raise
            except Exception as exc:  # a broken tool must not end the turn
                result = _error_message(call_id, name, f"Error: {type(exc).__name__}: {exc}")
            session.note_tool_use(name)
        duration_ms = (time.perf_counter() - started) * 1000
        failed = isinstance(result, ToolMessage) and result.status == "error"
        record = ToolCallRecord(
            id=call_id,
            name=name,
            args=args,
            result=_summary(result),
            duration_ms=duration_ms,
            error=failed,
        )
        session.tool_calls.append(record)
        session.emit(ToolEndEvent(**record.model_dump()))
        return result


def _error_message(call_id: str, name: str, text: str) -> ToolMessage:
    return ToolMessage(content=text, tool_call_id=call_id, name=name, status="error")
