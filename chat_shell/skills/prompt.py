"""System prompt assembly: the Ghost's prompt, the skill catalog, then the loaded skills.

The first two parts are stable for a whole conversation (sorted, deterministic), so providers'
prefix caching keeps working; loaded skills come after them. Everything that comes from a skill is
XML-escaped inside its own tags, so a hostile description cannot close a tag and speak as system.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from xml.sax.saxutils import escape, unescape

from chat_shell.contracts import SkillSpec

LOAD_SKILL_TOOL = "load_skill"

_CATALOG_INTRO = (
    "You have skills: packaged instructions (and sometimes tools) for specific tasks. Only their "
    "names and descriptions are listed below. When a request matches a skill's description, call "
    f"`{LOAD_SKILL_TOOL}` with its name before doing the task; its full instructions then appear "
    "at the end of this prompt inside <skill> tags and its tools become available."
)

_CATALOG_ENTRY = re.compile(
    r"<skill><name>(?P<name>[^<]*)</name><description>(?P<description>[^<]*)</description></skill>"
)
_LOADED_ENTRY = re.compile(r'<skill name="(?P<name>[^"]*)">')


def _attr(value: str) -> str:
    return escape(value, {'"': "&quot;"})


def render_catalog(skills: Iterable[SkillSpec]) -> str:
    entries = [
        f"<skill><name>{escape(s.name)}</name><description>{escape(s.description)}</description>"
        "</skill>"
        for s in sorted(skills, key=lambda s: s.name)
    ]
    return "<available_skills>\n" + "\n".join(entries) + "\n</available_skills>"


def render_stable_prompt(system_prompt: str, skills: Sequence[SkillSpec]) -> str:
    """The part that never changes within a conversation: Ghost prompt and skill catalog."""
    parts = [system_prompt.strip()] if system_prompt.strip() else []
    if skills:
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
