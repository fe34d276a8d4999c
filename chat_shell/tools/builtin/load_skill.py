"""`load_skill(skill_name)`: the one tool the model always has when its Ghost has skills.

Loading only records the skill as active and prepares its tools; the instructions themselves
are injected into the system prompt by the middleware from the next model call on, so the tool
result stays short and a repeat call never repeats the text.

One tool object serves every turn (registered once in the shared graph, so LangGraph analyses
it once); it finds its turn through the injected runtime. What differs per turn, the enum of
skill names, lives in the schema shown to the model (`load_skill_schema`). When the catalog
lists only part of the Ghost's skills (`search_skills` is offered), the name is a plain string,
checked against the Ghost's skills when the tool runs.
"""

# No `from __future__ import annotations` here: LangChain resolves the tool function's type hints
# on every call, and string annotations would be compiled anew each time.

from collections.abc import Sequence
from typing import Any, Protocol, cast

from langchain.tools import ToolRuntime
from langchain_core.tools import BaseTool, StructuredTool, ToolException

from chat_shell.contracts import Event, SkillLoadedEvent
from chat_shell.skills.active import ActiveSkills
from chat_shell.skills.prompt import LOAD_SKILL_TOOL, LOADED_TAG

DESCRIPTION = (
    "Load a skill from <available_skills> by its exact name. Its full instructions appear in the "
    "system prompt from your next step on, and its tools become available. Load a skill before "
    "doing a task it covers; loading an active skill again is harmless."
)
SEARCH_DESCRIPTION = (
    "Load a skill by its exact name, as listed in <available_skills> or returned by "
    "search_skills. Its full instructions appear in the system prompt from your next step on, and "
    "its tools become available. Load a skill before doing a task it covers; loading an active "
    "skill again is harmless."
)


class SkillHost(Protocol):
    """What load_skill needs from the turn."""

    active: ActiveSkills

    @property
    def skill_names(self) -> Sequence[str]:
        """The names the catalog lists, sorted."""
        ...

    @property
    def searchable(self) -> bool:
        """Whether the catalog lists only part of the Ghost's skills (search_skills finds more)."""
        ...

    async def find_skill(self, name: str) -> bool:
        """Whether the Ghost has a skill `name` it may load (fetching its definition if needed)."""
        ...

    async def prepare_skill(self, name: str) -> list[str]:
        """Set up the skill's tools for this turn; return their names."""
        ...

    def emit(self, event: Event) -> None: ...


class HostContext(Protocol):
    """The graph's runtime context, as far as load_skill is concerned."""

    @property
    def session(self) -> SkillHost: ...


async def load_skill(host: SkillHost, skill_name: str) -> str:
    """Activate a skill for `host`; the tool result text. Unknown names raise `ToolException`."""
    if not await host.find_skill(skill_name):
        if host.searchable:
            raise ToolException(
                f"Unknown skill {skill_name!r}. Call search_skills to find the right name."
            )
        available = ", ".join(host.skill_names)
        raise ToolException(f"Unknown skill {skill_name!r}. Available skills: {available}.")
    if skill_name in host.active:
        host.active.touch(skill_name)
        return (
            f"Skill {skill_name!r} is already active: its instructions are in the system prompt. "
            "Continue with the task."
        )
    tool_names = await host.prepare_skill(skill_name)
    if skill_name in host.active:  # a parallel call loaded it while its tools were prepared
        host.active.touch(skill_name)
        return f"Skill {skill_name!r} is already active."
    evicted = host.active.load(skill_name)
    host.emit(SkillLoadedEvent(name=skill_name))
    text = (
        f"Skill {skill_name!r} loaded: its instructions are now in the system prompt, in its "
        f"<{LOADED_TAG}> block. Follow them."
    )
    if tool_names:
        text += f" Its tools are now available: {', '.join(tool_names)}."
    if evicted:
        text += f" Unloaded to stay within the skills budget: {', '.join(evicted)}."
    return text


def _parameters(skill_names: Sequence[str] | None) -> dict[str, Any]:
    name: dict[str, Any] = {"type": "string", "description": "The name of the skill to load."}
    if skill_names is not None:
        name["enum"] = list(skill_names)
    return {"type": "object", "properties": {"skill_name": name}, "required": ["skill_name"]}


def load_skill_schema(skill_names: Sequence[str] | None) -> dict[str, Any]:
    """The tool as the model sees it (OpenAI function format): the names as an enum, or with
    None (the catalog is partial) a plain string."""
    return {
        "type": "function",
        "function": {
            "name": LOAD_SKILL_TOOL,
            "description": DESCRIPTION if skill_names is not None else SEARCH_DESCRIPTION,
            "parameters": _parameters(skill_names),
        },
    }


async def _run(skill_name: str, runtime: ToolRuntime) -> str:
    return await load_skill(cast(HostContext, runtime.context).session, skill_name)


LOAD_SKILL: BaseTool = StructuredTool(
    name=LOAD_SKILL_TOOL,
    description=DESCRIPTION,
    # A JSON schema, not a model: arguments reach `_run` as given (names are checked there) and
    # the injected runtime is never pushed through pydantic.
    args_schema=_parameters(None),
    coroutine=_run,
    handle_tool_error=True,
)
