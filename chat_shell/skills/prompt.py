"""System prompt assembly: the Ghost's prompt, the skill catalog, then the loaded skills.

The first two parts are stable for a whole conversation (sorted, deterministic), so providers'
prefix caching keeps working; loaded skills come after them. Everything that comes from a skill is
XML-escaped inside its own tags, so a hostile description cannot close a tag and speak as system.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Protocol
from xml.sax.saxutils import escape, unescape

from chat_shell.contracts import SkillSpec

LOAD_SKILL_TOOL = "load_skill"
SEARCH_SKILLS_TOOL = "search_skills"

_CATALOG_INTRO = (
    "You have skills: packaged instructions (and sometimes tools) for specific tasks. Only their "
    "names and descriptions are listed below. When a request matches a skill's description, call "
    f"`{LOAD_SKILL_TOOL}` with its name before doing the task; its full instructions then appear "
    "at the end of this prompt inside <skill> tags and its tools become available."
)

_SEARCH_INTRO = (
    "You have many skills: packaged instructions (and sometimes tools) for specific tasks. Only "
    "a few are listed below: preloaded ones, recently used ones and the best matches for the "
    f"latest request. When a task may need a skill not listed, call `{SEARCH_SKILLS_TOOL}` with "
    "a short description of the task; it returns matching skills, or none when nothing fits. "
    f"Call `{LOAD_SKILL_TOOL}` with a skill's name before doing the task; its full instructions "
    "then appear at the end of this prompt inside <skill> tags and its tools become available."
)

_CATALOG_ENTRY = re.compile(
    r"<skill><name>(?P<name>[^<]*)</name><description>(?P<description>[^<]*)</description></skill>"
)
_LOADED_ENTRY = re.compile(r'<skill name="(?P<name>[^"]*)">')


def _attr(value: str) -> str:
    return escape(value, {'"': "&quot;"})


class Listed(Protocol):
    """What the catalog shows of a skill (a `SkillSpec` or a `CatalogEntry`)."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...


def render_catalog(skills: Iterable[Listed]) -> str:
    entries = [
        f"<skill><name>{escape(s.name)}</name><description>{escape(s.description)}</description>"
        "</skill>"
        for s in sorted(skills, key=lambda s: s.name)
    ]
    return "<available_skills>\n" + "\n".join(entries) + "\n</available_skills>"


def render_stable_prompt(
    system_prompt: str, skills: Sequence[Listed], *, search: bool = False
) -> str:
    """The part that stays for the turn: Ghost prompt and skill catalog. A full catalog never
    changes within a conversation; a compact one (`search`) follows the latest request."""
    parts = [system_prompt.strip()] if system_prompt.strip() else []
    if search:
        parts += [_SEARCH_INTRO, render_catalog(skills)]
    elif skills:
        parts += [_CATALOG_INTRO, render_catalog(skills)]
    return "\n\n".join(parts)


def render_loaded_skill(skill: SkillSpec) -> str:
    return f'<skill name="{_attr(skill.name)}">\n{escape(skill.prompt.strip())}\n</skill>'


def render_system_prompt(stable: str, loaded: Sequence[SkillSpec]) -> str:
    if not loaded:
        return stable
    block = "\n".join(render_loaded_skill(s) for s in loaded)
    return f"{stable}\n\n<loaded_skills>\n{block}\n</loaded_skills>"


def parse_catalog(prompt: str) -> dict[str, str]:
    """Skill name -> description, read back from a rendered prompt (for the offline model)."""
    return {
        unescape(m["name"]): unescape(m["description"]) for m in _CATALOG_ENTRY.finditer(prompt)
    }


def parse_loaded_names(prompt: str) -> list[str]:
    """Names of the skills whose instructions a rendered prompt carries."""
    _, _, loaded = prompt.rpartition("<loaded_skills>")
    return [unescape(m["name"], {"&quot;": '"'}) for m in _LOADED_ENTRY.finditer(loaded)]
