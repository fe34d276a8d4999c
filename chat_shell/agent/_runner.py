"""`run_turn`: run one chat turn and stream its events.

Tokens come from LangGraph's `messages` stream; everything the turn reports from inside the
graph (tool_start, skill_loaded, mcp_error, ...) goes through its `custom` stream, so it reaches
the caller when it happens, in order with the tokens, without a second task or queue.
Cancelling the caller's task cancels the turn, closes its MCP sessions, yields
`error(cancelled)` and then re-raises the cancellation.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AsyncExitStack, aclosing
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk
from langgraph.errors import GraphRecursionError

from chat_shell.agent._graph import agent_graph
from chat_shell.agent._session import TurnContext, TurnSession, turn_index
from chat_shell.agent._steps import MODEL
from chat_shell.contracts import ErrorEvent, Event, StartEvent, TokenEvent, TurnRequest
from chat_shell.errors import ChatShellError, RecursionLimitReached, TurnCancelled
from chat_shell.models import open_chat_model
from chat_shell.ports import FrontendChannel, PackageSource, SkillDirectory
from chat_shell.skills.registry import ProviderRegistry, default_registry
from chat_shell.tools.pending.base import PendingRequestRegistry
from chat_shell.tools.sandbox import SandboxAccess

logger = logging.getLogger(__name__)


async def run_turn(
    request: TurnRequest,
    *,
    package_source: PackageSource,
    frontend: FrontendChannel,
    model: BaseChatModel | None = None,
    providers: ProviderRegistry | None = None,
    pending_requests: PendingRequestRegistry | None = None,
    sandbox: SandboxAccess | None = None,
    skills: SkillDirectory | None = None,
) -> AsyncGenerator[Event, None]:
    """Yield `start`, then progress events, then exactly one `done` or `error`.

    `model` overrides the one built from `request.model` (tests, custom hosts); `providers`
    defaults to the process-wide registry of tool providers; `pending_requests` is where skill
    tools wait for the browser (without one, such tools report that the browser is unreachable);
    `sandbox` lets active skills run commands (`skill_run`, offered only where it works).
    `skills` searches and fetches the Ghost's skills the request does not carry in full.
    """
    yield StartEvent(conversation_id=request.conversation_id, turn_index=turn_index(request))
    try:
        async with AsyncExitStack() as stack:  # closes the turn's MCP sessions, also on cancel
            if model is None:
                model = await stack.enter_async_context(
                    open_chat_model(request.model, request.egress)
                )
            session = TurnSession(
                request,
                model=model,
                package_source=package_source,
                frontend=frontend,
                registry=providers or default_registry,
                stack=stack,
                pending_requests=pending_requests,
                sandbox=sandbox,
                directory=skills,
            )
            await session.start()
            for event in session.take_pending():
                yield event
            async for event in _stream_graph(session):
                yield event
            yield session.done_event()
    except asyncio.CancelledError:
        cancelled = TurnCancelled("the turn was cancelled")
        yield ErrorEvent(code=cancelled.code, message=cancelled.message)
        raise
    except GraphRecursionError:
        limit = RecursionLimitReached(
            f"the turn stopped after {request.recursion_limit} agent steps without a final "
            "answer (recursion limit); ask again more specifically or raise the limit"
        )
        yield ErrorEvent(code=limit.code, message=limit.message)
    except ChatShellError as exc:
        yield ErrorEvent(code=exc.code, message=exc.message)
    except Exception as exc:
        logger.exception("turn of conversation %s failed", request.conversation_id)
        # The type only: the text may quote an upstream's answer or a URL with credentials.
        yield ErrorEvent(code="internal_error", message=type(exc).__name__)


async def _stream_graph(session: TurnSession) -> AsyncIterator[Event]:
    stream = cast(
        AsyncGenerator[tuple[str, Any], None],
        agent_graph().astream(
            {"messages": session.input_messages()},
            config={"recursion_limit": session.request.recursion_limit},
            context=TurnContext(session),
            stream_mode=["messages", "custom"],
        ),
    )
    # aclosing: a caller that stops listening must stop the graph's running tasks now.
    async with aclosing(stream):
        async for mode, payload in stream:
            if mode == "custom":
                yield payload
                continue
            chunk, metadata = payload
            if (
                isinstance(chunk, AIMessageChunk | AIMessage)
                and metadata.get("langgraph_node") == MODEL
                and (delta := chunk.text)
            ):
                yield TokenEvent.model_construct(delta=delta)  # hot path; a str needs no check
