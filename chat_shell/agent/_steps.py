"""The two steps of the agent loop, which make one shared graph serve every turn.

Everything turn-specific comes from the `TurnContext` in the runtime context: on each model
call the model, the system prompt (with the skills loaded so far) and the visible tools; on each
tool call the tool itself (tools are per turn, so none but the built-ins is registered with the
graph).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypedDict, cast

from langchain_core.messages import AIMessage, AnyMessage, RemoveMessage, ToolMessage
from langgraph.errors import GraphBubbleUp
from langgraph.graph import END
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command, Send

from chat_shell.agent._session import TurnContext
from chat_shell.contracts import ToolCallRecord, ToolEndEvent, ToolStartEvent
from chat_shell.errors import ChatShellError
from chat_shell.models import model_failure
from chat_shell.observe import tracer

AGENT_NAME = "skillhive"  # the name on the model's replies, as create_agent(name=...) set it
MODEL, TOOLS = "model", "tools"  # node names; token events come from MODEL's stream
_SUMMARY_CHARS = 500
# A reply whose tool calls are all malformed (truncated or non-JSON arguments) gets the errors
# and another model call, at most this many times in a row: the model usually repairs the
# call; one that cannot should not spend the turn's steps on it.
MALFORMED_RETRIES = 2


class TurnState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


async def call_model(state: TurnState, runtime: Runtime[TurnContext]) -> Command[Any]:
    """One model call with the turn's model, system prompt and visible tools; then each tool
    call of its reply runs as a task of its own (in parallel), a reply whose calls are all
    malformed is called again with their errors (`MALFORMED_RETRIES`), and a reply without any
    ends the turn. The node routes itself: a separate routing function would run in a worker
    thread."""
    session = runtime.context.session
    session.attach_writer(runtime.stream_writer)
    history = state["messages"]
    messages = _answer_invalid_tool_calls(history)
    system = session.system_message()
    tools = session.model_tools()
    model = session.model.bind_tools(tools, tool_choice=None) if tools else session.model
    prompt = [system, *messages]
    try:
        with tracer.start_as_current_span("model.call"):
            reply = await model.ainvoke(prompt)
    except (GraphBubbleUp, ChatShellError):
        raise
    except Exception as exc:
        key = session.request.model.api_key
        raise model_failure(exc, [key.get_secret_value()] if key else []) from exc
    if not isinstance(reply, AIMessage):  # a chat model's contract; a broken one is an error
        raise TypeError(f"the model answered {type(reply).__name__}, not an AIMessage")
    reply.name = AGENT_NAME
    session.record_model_reply(reply, prompt)
    goto: str | list[Send] = [Send(TOOLS, [call]) for call in reply.tool_calls] or END
    if (
        goto == END
        and reply.invalid_tool_calls
        and _malformed_in_a_row(history) < MALFORMED_RETRIES
    ):
        goto = MODEL  # which first answers the malformed calls (`_answer_invalid_tool_calls`)
    if messages is history:
        return Command(update={"messages": [reply]}, goto=goto)
    # The answers to malformed calls join the history, so the next call sees them too.
    update = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *messages, reply]
    return Command(update={"messages": update}, goto=goto)


def _malformed_in_a_row(messages: list[AnyMessage]) -> int:
    """How many of the last replies before this call made only malformed tool calls."""
    count = 0
    for message in reversed(messages):
        if isinstance(message, ToolMessage):
            continue  # the answers to those calls
        if (
            not isinstance(message, AIMessage)
            or message.tool_calls
            or not message.invalid_tool_calls
        ):
            break
        count += 1
    return count


def _answer_invalid_tool_calls(messages: list[AnyMessage]) -> list[AnyMessage]:
    """`messages`, with an error answer after each malformed tool call (arguments that are not a
    JSON object) not answered yet: a model must see an answer for every call it made. The
    same list when there is none."""
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    patched: list[AnyMessage] = []
    for message in messages:
        patched.append(message)
        if not isinstance(message, AIMessage):
            continue
        for call in message.invalid_tool_calls:
            call_id = call.get("id")
            if call_id is None or call_id in answered:
                continue
            name = call.get("name") or "unknown"
            text = f"Error: the arguments of this {name} call were malformed or truncated."
            patched.append(_error_message(call_id, name, text))
            answered.add(call_id)
    return messages if len(patched) == len(messages) else patched


async def wrap_tool_call(
    request: ToolCallRequest,
    handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
) -> ToolMessage | Command[Any]:
    """Run one tool call with the turn's tool of that name, reporting its start and end."""
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


def _summary(result: ToolMessage | Command[Any]) -> str:
    text = result.text if isinstance(result, ToolMessage) else ""
    return text if len(text) <= _SUMMARY_CHARS else text[: _SUMMARY_CHARS - 1] + "…"


def _error_message(call_id: str, name: str, text: str) -> ToolMessage:
    return ToolMessage(content=text, tool_call_id=call_id, name=name, status="error")
