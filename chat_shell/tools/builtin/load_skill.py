"""`load_skill(skill_name)`: the one tool the model always has when its Ghost has skills.

Loading only records the skill as active and prepares its tools; the instructions themselves
are injected into the system prompt by the middleware from the next model call on, so the tool
result stays short and a repeat call never repeats the text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from langchain_core.tools import BaseTool, StructuredTool, ToolException

from chat_shell.contracts import Event, SkillLoadedEvent
from chat_shell.skills.active import ActiveSkills
from chat_shell.skills.prompt import LOAD_SKILL_TOOL

DESCRIPTION = (
    "Load a skill from <available_skills> by its exact name. Its full instructions appear in the "
    "system prompt from your next step on, and its tools become available. Load a skill before "
    "doing a task it covers; loading an active skill again is harmless."
)


class SkillHost(Protocol):
    """What load_skill needs from the turn."""

    active: ActiveSkills

    async def prepare_skill(self, name: str) -> list[str]:
        """Set up the skill's tools for this turn; return their names."""
        ...

    def emit(self, event: Event) -> None: ...


async def load_skill(host: SkillHost, known: Sequence[str], skill_name: str) -> str:
    """Activate a skill for `host`; the tool result text. Unknown names raise `ToolException`."""
    if skill_name not in known:
        raise ToolException(f"Unknown skill {skill_name!r}. Available skills: {', '.join(known)}.")
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
        f"Skill {skill_name!r} loaded: its instructions are now in the system prompt inside "
        f'<skill name="{skill_name}">. Follow them.'
    )
    if tool_names:
        text += f" Its tools are now available: {', '.join(tool_names)}."
    if evicted:
        text += f" Unloaded to stay within the skills budget: {', '.join(evicted)}."
    return text


def create_load_skill_tool(host: SkillHost, skill_names: Sequence[str]) -> BaseTool:
    """The tool for one turn; the available names are an enum in its JSON schema."""
    known = sorted(skill_names)
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "skill_name": {
                "type": "string",
                "enum": known,
                "description": "The name of the skill to load.",
            }
        },
        "required": ["skill_name"],
    }

    async def run(skill_name: str = "", **_: Any) -> str:
        return await load_skill(host, known, skill_name)

    return StructuredTool(
        name=LOAD_SKILL_TOOL,
        description=DESCRIPTION,
        args_schema=schema,
        coroutine=run,
        handle_tool_error=True,
    )
