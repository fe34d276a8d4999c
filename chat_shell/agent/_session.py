"""The state of one turn, handed to the (cached, shared) agent graph as its runtime context.

It owns what changes during a turn: active skills, the tools they brought, usage, tool records.
The middleware asks it for the system prompt and the visible tools on every model call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.tools import BaseTool

from chat_shell.contracts import (
    CatalogEntry,
    DoneEvent,
    Event,
    McpCallEvent,
    McpErrorEvent,
    SkillMatch,
    SkillSpec,
    ToolCallRecord,
    TurnRequest,
    Usage,
    UsageEvent,
)
from chat_shell.errors import InvalidTurnRequest
from chat_shell.offline import estimate_tokens, estimate_usage
from chat_shell.ports import FrontendChannel, PackageSource, SkillDirectory
from chat_shell.skills.active import ActiveSkills, last_loaded_records
from chat_shell.skills.allowed import tool_allowed
from chat_shell.skills.prompt import (
    EMPTY_LOADED_BLOCK,
    render_file_listing,
    render_stable_prompt,
    render_system_prompt,
)
from chat_shell.skills.provider import ProviderContext
from chat_shell.skills.registry import ProviderRegistry
from chat_shell.skills.toolset import create_provider_tools
from chat_shell.tools.builtin.load_skill import LOAD_SKILL, load_skill_schema
from chat_shell.tools.builtin.search_skills import SEARCH_SKILLS
from chat_shell.tools.builtin.skill_files import (
    LIST_SKILL_FILES,
    READ_SKILL_FILE,
    SkillFileReader,
    has_resources,
)
from chat_shell.tools.mcp import GHOST_SCOPE, McpServerConfig, McpSessionPool
from chat_shell.tools.mcp_code import CODE_TOOLS, McpCodeMode, McpFunction, as_functions
from chat_shell.tools.pending.base import PendingRequestRegistry
from chat_shell.tools.sandbox import SKILL_RUN, SandboxAccess, SkillRunner

Emit = Callable[[Event], None]
_BLOCK_OVERHEAD = estimate_tokens(EMPTY_LOADED_BLOCK + "\n\n")


@dataclass(frozen=True)
class TurnContext:
    """The graph's runtime context (LangGraph wants a dataclass, TypedDict or model)."""

    session: TurnSession


def turn_index(request: TurnRequest) -> int:
    if request.turn_index is not None:
        return request.turn_index
    return sum(1 for m in request.history if m.role == "user")


def substitution_values(request: TurnRequest) -> dict[str, Any]:
    """The `${{...}}` context: caller's values plus user, conversation and secrets."""
    ctx = request.context
    user = ctx.user.model_dump() if ctx.user else {"id": request.user_id, "name": ""}
    return {
        **ctx.values,
        "user": user,
        "conversation": {"id": request.conversation_id},
        "secrets": {k: v.get_secret_value() for k, v in ctx.secrets.items()},
    }


class TurnSession:
    def __init__(
        self,
        request: TurnRequest,
        *,
        model: BaseChatModel,
        package_source: PackageSource,
        frontend: FrontendChannel,
        registry: ProviderRegistry,
        stack: AsyncExitStack,
        pending_requests: PendingRequestRegistry | None = None,
        sandbox: SandboxAccess | None = None,
        directory: SkillDirectory | None = None,
    ) -> None:
        self.request = request
        self.model = model
        self._pending: list[Event] = []
        self._writer: Emit | None = None
        self._source = package_source
        self._frontend = frontend
        self._registry = registry
        self._stack = stack
        self._pending_requests = pending_requests
        self._pool: McpSessionPool | None = None
        self._directory = directory
        self._sandbox = sandbox
        self.mcp_code: McpCodeMode | None = None  # set by start() in code mode
        self.skills = {s.name: s for s in request.skills}
        if len(self.skills) != len(request.skills):
            raise InvalidTurnRequest("two skills share a name")
        catalog = request.catalog
        if catalog is None:
            catalog = [CatalogEntry(name=s.name, description=s.description) for s in request.skills]
        self.searchable = request.skill_search
        self._costs = {n: _cost(s) for n, s in self.skills.items()}
        self.active = ActiveSkills.restore(
            last_loaded_records(request.history),
            costs=self._costs,
            budget=request.loaded_skills_token_budget,
            turn=turn_index(request),
            retention=request.retention_turns,
            pinned=request.preload_skills,
        )
        self._stable_prompt = render_stable_prompt(
            request.system_prompt, catalog, search=self.searchable
        )
        self._prompt_cache: tuple[tuple[str, ...], SystemMessage] | None = None
        self.skill_names = sorted({e.name for e in catalog} | set(self.skills))
        has_skills = bool(self.skill_names) or self.searchable
        enum = None if self.searchable else self.skill_names
        self._load_skill_schema = load_skill_schema(enum) if has_skills else None
        self._base_tools: list[BaseTool] = [LOAD_SKILL] if has_skills else []
        if self.searchable:
            self._base_tools.append(SEARCH_SKILLS)
        self._skill_tools: dict[str, asyncio.Task[list[BaseTool]]] = {}
        self._tool_skill: dict[str, str] = {}
        self.usage = Usage()
        self.tool_calls: list[ToolCallRecord] = []
        self.final_text = ""
        for notice in request.notices:
            self.emit(notice)
        self.skill_files = SkillFileReader(package_source, request.skill_file_read_bytes)
        self.skill_runner = (
            SkillRunner(sandbox, package_source, stack)
            if sandbox and (self.skill_names or self.searchable)
            else None
        )

    def emit(self, event: Event) -> None:
        """Report an event: straight into the graph's stream once it runs, else held back."""
        if self._writer is not None:
            self._writer(event)
        else:
            self._pending.append(event)

    def attach_writer(self, writer: Emit) -> None:
        """Called from inside the graph, where LangGraph's stream writer is at hand."""
        self._writer = writer

    def take_pending(self) -> list[Event]:
        pending, self._pending = self._pending, []
        return pending

    async def start(self) -> None:
        """Connect the Ghost's MCP servers and set up the tools of skills active from the start."""
        self._base_tools += await self._connect_mcp(self.request.mcp_servers)
        if self.request.mcp_tool_mode == "code":
            await self._start_code_mode()
        runnable: list[SkillSpec | CatalogEntry] = [
            *self.request.skills,
            *(self.request.catalog or []),
        ]
        runner = self.skill_runner
        if runner and await runner.offered(runnable, searchable=self.searchable):
            self._base_tools.append(SKILL_RUN)
        await asyncio.gather(*(self.prepare_skill(n) for n in self.active.names()))

    def input_messages(self) -> list[BaseMessage]:
        messages: list[BaseMessage] = [
            HumanMessage(m.content) if m.role == "user" else AIMessage(m.content)
            for m in self.request.history
            if m.content
        ]
        messages.append(HumanMessage(self.request.user_message))
        return messages

    def system_message(self) -> SystemMessage:
        names = tuple(self.active.names())
        if self._prompt_cache is None or self._prompt_cache[0] != names:
            loaded = [self.skills[n] for n in names]
            prompt = render_system_prompt(self._stable_prompt, loaded)
            self._prompt_cache = (names, SystemMessage(prompt))
        return self._prompt_cache[1]

    def visible_tools(self) -> list[BaseTool]:
        """The tools the model sees. In code mode the MCP tools are left out and, while there
        are any, list_mcp_servers, search_mcp_tools and execute_code stand in for them."""
        tools = self._direct_tools()
        if self.mcp_code is None or self._pool is None:
            return tools
        pooled = {id(t) for t in self._pool.tools}
        kept = [t for t in tools if id(t) not in pooled]
        if len(kept) < len(tools):
            names = {t.name for t in kept}
            kept += [t for t in CODE_TOOLS if t.name not in names]
        return kept

    def mcp_functions(self) -> list[McpFunction]:
        """The MCP tools direct mode would show now, as code mode's functions."""
        pool = self._pool
        if pool is None:
            return []
        found = ((t, pool.server_of(t)) for t in self._direct_tools())
        return as_functions((t, key[1]) for t, key in found if key is not None)

    def _direct_tools(self) -> list[BaseTool]:
        """load_skill and the Ghost's tools, the file tools while an active skill has files,
        then the tools of active skills (first name wins).

        MCP precedence skill > Ghost: while a skill is active, the Ghost's server of the same name
        as one of the skill's is replaced by the skill's (its tools are hidden).
        """
        hidden = {id(t) for t in self._shadowed_ghost_tools()}
        tools = {t.name: t for t in self._base_tools if id(t) not in hidden}
        if any(has_resources(self.skills[n]) for n in self.active.names()):
            for tool in (LIST_SKILL_FILES, READ_SKILL_FILE):  # level 3: a skill's own files
                tools.setdefault(tool.name, tool)
        for name in self.active.names():
            for tool in self._ready_tools(name):
                tools.setdefault(tool.name, tool)
        return list(tools.values())

    def model_tools(self) -> list[BaseTool | dict[str, Any]]:
        """The visible tools as offered to the model: load_skill by its per-turn schema."""
        return [
            self._load_skill_schema if t is LOAD_SKILL and self._load_skill_schema else t
            for t in self.visible_tools()
        ]

    async def find_skill(self, name: str) -> bool:
        """Whether `name` is a skill this turn may load; fetches its definition when needed.

        With a full catalog only its names count; with a compact one any skill of the Ghost's,
        as the directory knows them.
        """
        if name in self.skills:
            return True
        if self._directory is None or (not self.searchable and name not in self.skill_names):
            return False
        spec = await self._directory.get(name)
        if spec is None or spec.name != name:
            return False
        if name not in self.skills:  # a parallel load may have fetched it meanwhile
            self.skills[name] = spec
            self._costs[name] = _cost(spec)
        return True

    async def search_skills(self, query: str, limit: int) -> list[SkillMatch]:
        if self._directory is None:
            return []
        return await self._directory.search(query, limit)

    def find_tool(self, name: str) -> BaseTool | None:
        return next((t for t in self.visible_tools() if t.name == name), None)

    async def prepare_skill(self, name: str) -> list[str]:
        """Create the skill's provider tools and connect its MCP servers, once per turn.

        Parallel calls for one skill share the same work (and all see its tools).
        """
        task = self._skill_tools.get(name)
        if task is None:
            task = self._skill_tools[name] = asyncio.create_task(self._create_skill_tools(name))
        return [t.name for t in await task]

    def _ready_tools(self, skill: str) -> list[BaseTool]:
        task = self._skill_tools.get(skill)
        if task is None or not task.done() or task.cancelled() or task.exception():
            return []
        return task.result()

    async def _create_skill_tools(self, name: str) -> list[BaseTool]:
        skill = self.skills[name]
        context = ProviderContext(
            user_id=self.request.user_id,
            conversation_id=self.request.conversation_id,
            skill_name=name,
            frontend=self._frontend,
            pending_requests=self._pending_requests,
        )
        tools, errors = await create_provider_tools(
            skill, registry=self._registry, source=self._source, context=context
        )
        for error in errors:
            self.emit(error)
        tools += await self._connect_mcp(
            _skill_servers(skill), scope=name, reserved={t.name for t in tools}
        )
        if skill.allowed_tools is not None:  # outside the skill's allowlist: never offered
            tools = [t for t in tools if tool_allowed(t.name, self._server(t), skill.allowed_tools)]
        self._tool_skill.update((t.name, name) for t in tools)
        return tools

    def note_tool_use(self, tool_name: str) -> None:
        """Using a skill's tool counts as using the skill (retention, LRU)."""
        if (skill := self._tool_skill.get(tool_name)) is not None:
            self.active.touch(skill)

    def record_model_reply(self, message: AIMessage, prompt: Sequence[BaseMessage] = ()) -> None:
        """Count the call's usage; a provider that reported none gets the offline estimate
        of `prompt` and the reply, marked `estimated`."""
        self.final_text = message.text
        estimated = (usage := message.usage_metadata) is None
        if usage is None:
            usage = estimate_usage(prompt, message)
        prompt_tokens, completion = usage["input_tokens"], usage["output_tokens"]
        self.usage = Usage(
            prompt_tokens=self.usage.prompt_tokens + prompt_tokens,
            completion_tokens=self.usage.completion_tokens + completion,
        )
        self.emit(
            UsageEvent(
                prompt_tokens=prompt_tokens, completion_tokens=completion, estimated=estimated
            )
        )

    def done_event(self) -> DoneEvent:
        return DoneEvent(
            text=self.final_text,
            loaded_skills=self.active.records(),
            usage=self.usage,
            tool_calls=self.tool_calls,
        )

    async def _start_code_mode(self) -> None:
        access = self._sandbox
        if access is None or not (await access.sandbox.availability()).available:
            self.emit(
                McpErrorEvent(
                    server="",
                    code="mcp_code_unavailable",
                    message="MCP code mode needs the sandbox, which is not available here; "
                    "MCP tools are offered directly this turn",
                )
            )
            return
        self.mcp_code = McpCodeMode(
            access,
            self._stack,
            functions=self.mcp_functions,
            failures=lambda: self._pool.failures if self._pool else [],
            emit=self._code_call,
        )

    def _code_call(self, event: Event) -> None:
        """An MCP call from sandboxed code: reported, and it counts as using its skill."""
        if isinstance(event, McpCallEvent):
            self.note_tool_use(event.tool)
        self.emit(event)

    def _server(self, tool: BaseTool) -> str | None:
        key = self._pool.server_of(tool) if self._pool else None
        return key[1] if key else None

    def _shadowed_ghost_tools(self) -> list[BaseTool]:
        if self._pool is None:
            return []
        servers = {n for s in self.active.names() for n in self.skills[s].mcp_servers}
        return self._pool.shadowed(servers) if servers else []

    async def _connect_mcp(
        self,
        servers: dict[str, McpServerConfig],
        *,
        scope: str = GHOST_SCOPE,
        reserved: set[str] | None = None,
    ) -> list[BaseTool]:
        if not servers:
            return []
        if self._pool is None:  # only turns that use MCP pay for a pool
            pool = McpSessionPool(
                egress=self.request.egress,
                connect_timeout_s=self.request.mcp_connect_timeout_s,
                call_timeout_s=self.request.mcp_call_timeout_s,
            )
            self._pool = await self._stack.enter_async_context(pool)
        # The pool knows its own names (and which of them a skill's servers may take over).
        pooled = {id(t) for t in self._pool.tools}
        taken = {t.name for t in self.visible_tools() if id(t) not in pooled} | (reserved or set())
        tools, failures = await self._pool.connect(
            servers, substitution_values(self.request), scope=scope, reserved_names=taken
        )
        for failure in failures:
            self.emit(
                McpErrorEvent(server=failure.server, code=failure.code, message=failure.message)
            )
        return tools


def _cost(skill: SkillSpec) -> int:
    # Cheap on purpose (runs for every skill every turn): rendering would escape every body.
    listing = render_file_listing(skill) if skill.files else ""
    return estimate_tokens(skill.name + skill.prompt + listing) + _BLOCK_OVERHEAD


def _skill_servers(skill: SkillSpec) -> dict[str, McpServerConfig]:
    # Trust follows the skill, whatever the payload says: only public skills may start processes.
    return {
        name: config.model_copy(update={"trusted": skill.public})
        for name, config in skill.mcp_servers.items()
    }
