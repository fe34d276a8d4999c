"""`search_skills(query, limit)`: find the Ghost's skills that the compact catalog does not list.

Offered only when the catalog in the prompt lists part of the Ghost's skills. The host answers
through its `SkillDirectory`, the same search backend's API serves; the results are names the
model can pass to `load_skill`. Like load_skill, one tool object serves every turn and finds its
turn through the injected runtime.
"""

# No `from __future__ import annotations`: LangChain resolves the tool function's type hints
# on every call, and string annotations would be compiled anew each time.

from collections.abc import Sequence
from typing import Any, Protocol, cast

from langchain.tools import ToolRuntime
from langchain_core.tools import BaseTool, StructuredTool, ToolException

from chat_shell.contracts import SkillMatch
from chat_shell.skills.prompt import SEARCH_SKILLS_TOOL

DEFAULT_LIMIT = 5
MAX_LIMIT = 20
MAX_QUERY_CHARS = 500
DESCRIPTION_CHARS = 300  # of each result: enough to choose, short enough to list many

DESCRIPTION = (
    "Search all of your skills by what the task is about (a few words, e.g. 'make slides from "
    "notes'). Returns matching skills, best first, with their descriptions; load one with "
    "load_skill. An empty result means no skill fits: go on without one."
)


class SkillSearcher(Protocol):
    async def search_skills(self, query: str, limit: int) -> Sequence[SkillMatch]: ...


class SearcherContext(Protocol):
    @property
    def session(self) -> SkillSearcher: ...


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= DESCRIPTION_CHARS else text[: DESCRIPTION_CHARS - 1] + "…"


async def search_skills(host: SkillSearcher, query: str, limit: int = DEFAULT_LIMIT) -> str:
    """The tool result text for a search."""
    query = " ".join(str(query).split())[:MAX_QUERY_CHARS]
    if not query:
        raise ToolException("Give a query: a few words saying what the task is about.")
    limit = max(1, min(int(limit), MAX_LIMIT))
    matches = await host.search_skills(query, limit)
    if not matches:
        return f"No skill fits {query!r}. Continue without a skill."
    lines = [f"- {m.name}: {_short(m.description)}" for m in matches]
    return "Skills that fit, best first (load one with load_skill):\n" + "\n".join(lines)


PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What the task is about, in a few words."},
        "limit": {
            "type": "integer",
            "description": f"How many skills to return at most (1-{MAX_LIMIT}).",
            "minimum": 1,
            "maximum": MAX_LIMIT,
            "default": DEFAULT_LIMIT,
        },
    },
    "required": ["query"],
}


async def _run(runtime: ToolRuntime, query: str, limit: int = DEFAULT_LIMIT) -> str:
    return await search_skills(cast(SearcherContext, runtime.context).session, query, limit)


SEARCH_SKILLS: BaseTool = StructuredTool(
    name=SEARCH_SKILLS_TOOL,
    description=DESCRIPTION,
    args_schema=PARAMETERS,
    coroutine=_run,
    handle_tool_error=True,
)
