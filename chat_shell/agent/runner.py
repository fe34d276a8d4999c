"""`run_turn`: run one chat turn and stream its events.

The turn runs in its own task that feeds a queue: events raised deep inside tools (tool_start,
skill_loaded, mcp_error) reach the caller as they happen, not at the next token. Cancelling the
caller's task cancels the turn, closes its MCP sessions, yields `error(cancelled)` and then
re-raises the cancellation.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langgraph.errors import GraphRecursionError

from chat_shell.agent.graph import agent_graph
from chat_shell.agent.session import Emit, TurnContext, TurnSession, turn_index
from chat_shell.contracts import ErrorEvent, Event, StartEvent, TokenEvent, TurnRequest
from chat_shell.errors import ChatShellError, RecursionLimitReached, TurnCancelled
from chat_shell.models import create_chat_model
from chat_shell.ports import FrontendChannel, PackageSource
from chat_shell.skills.registry import ProviderRegistry, default_registry

logger = logging.getLogger(__name__)


async def run_turn(
    request: TurnRequest,
    *,
    package_source: PackageSource,
    frontend: FrontendChannel,
    model: BaseChatModel | None = None,
    providers: ProviderRegistry | None = None,
) -> AsyncIterator[Event]:
    """Yield `start`, then progress events, then exactly one `done` or `error`.

    `model` overrides the one built from `request.model` (tests, custom hosts); `providers`
    defaults to the process-wide registry of tool providers.
    """
    queue: asyncio.Queue[Event | None] = asyncio.Queue()
    turn = asyncio.create_task(
        _drive(
            request,
            queue,
            package_source=package_source,
            frontend=frontend,
            model=model,
            registry=providers or default_registry,
        )
    )
    try:
        while (event := await queue.get()) is not None:
            yield event
    except asyncio.CancelledError:
        await _stop(turn)
        error = TurnCancelled("the turn was cancelled")
        yield ErrorEvent(code=error.code, message=error.message)
        raise
    finally:
        await _stop(turn)


async def _stop(turn: asyncio.Task[None]) -> None:
    if not turn.done():
        turn.cancel()
    await asyncio.wait({turn})


async def _drive(
    request: TurnRequest,
    queue: asyncio.Queue[Event | None],
    *,
    package_source: PackageSource,
    frontend: FrontendChannel,
    model: BaseChatModel | None,
    registry: ProviderRegistry,
) -> None:
    emit: Emit = queue.put_nowait
    emit(StartEvent(conversation_id=request.conversation_id, turn_index=turn_index(request)))
    try:
        async with AsyncExitStack() as stack:  # closes the turn's MCP sessions, also on cancel
            session = TurnSession(
                request,
                model=model or create_chat_model(request.model),
                package_source=package_source,
                frontend=frontend,
                registry=registry,
                emit=emit,
                stack=stack,
            )
            await session.start()
            await _stream_graph(session, emit)
            emit(session.done_event())
    except GraphRecursionError:
        limit = request.recursion_limit
        error: ChatShellError = RecursionLimitReached(
            f"the turn stopped after {limit} agent steps without a final answer "
            "(recursion limit); ask again more specifically or raise the limit"
        )
        emit(ErrorEvent(code=error.code, message=error.message))
    except ChatShellError as exc:
        emit(ErrorEvent(code=exc.code, message=exc.message))
    except Exception as exc:
        logger.exception("turn of conversation %s failed", request.conversation_id)
        emit(ErrorEvent(code="internal_error", message=f"{type(exc).__name__}: {exc}"))
    finally:
        queue.put_nowait(None)  # end of stream


async def _stream_graph(session: TurnSession, emit: Emit) -> None:
    stream = agent_graph().astream(
        {"messages": session.input_messages()},
        config={"recursion_limit": session.request.recursion_limit},
        context=TurnContext(session),
        stream_mode="messages",
    )
    async for item in stream:
        chunk, metadata = cast(tuple[BaseMessage, dict[str, Any]], item)
        if (
            isinstance(chunk, AIMessageChunk | AIMessage)
            and metadata.get("langgraph_node") == "model"
            and (delta := chunk.text)
        ):
            emit(TokenEvent(delta=delta))
