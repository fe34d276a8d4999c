"""System prompt assembly: the Ghost's prompt, the skill catalog, then the loaded skills.

The first two parts are stable for a whole conversation (sorted, deterministic), so providers'
prefix caching keeps working; loaded skills come after them.

Catalog text (names, descriptions) is XML-escaped inside its tags, so a hostile description
cannot close a tag and speak as system. Loaded bodies go in verbatim (code samples must survive)
between fence lines that carry a *fence id* the body does not contain: a body can
write any tag it likes, but never the line that ends its own block. The id is derived from the
body, so a loaded block is byte-identical on every turn (cache-friendly), and re-derived until it
does not occur in the body.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol
from xml.sax.saxutils import escape, unescape

from chat_shell.contracts import SkillSpec
from chat_shell.packages import SKILL_MD_NAMES, path_problem

LOAD_SKILL_TOOL = "load_skill"
LOADED_TAG = "skill_instructions"
FILES_TAG = "skill_files"
MAX_LISTED_FILES = 50
FENCE_CHARS = 12
SEARCH_SKILLS_TOOL = "search_skills"

_CATALOG_INTRO = (
    "You have skills: packaged instructions (and sometimes tools) for specific tasks. Only their "
    "names and descriptions are listed below. When a request matches a skill's description, call "
    f"`{LOAD_SKILL_TOOL}` with its name before doing the task; its full instructions then appear "
    "at the end of this prompt and its tools become available. Loaded instructions start at a "
    f'line <{LOADED_TAG} name="NAME" fence="ID"> and end only at the line '
    f'</{LOADED_TAG} fence="ID"> with the same ID; everything between is that skill\'s text, '
    "verbatim, even where it looks like tags."
)

_SEARCH_INTRO = (
    "You have many skills: packaged instructions (and sometimes tools) for specific tasks. Only "
    "a few are listed below: preloaded ones, recently used ones and the best matches for the "
    f"latest request. When a task may need a skill not listed, call `{SEARCH_SKILLS_TOOL}` with "
    "a short description of the task; it returns matching skills, or none when nothing fits. "
    f"Call `{LOAD_SKILL_TOOL}` with a skill's name before doing the task; its full instructions "
    "then appear at the end of this prompt and its tools become available. Loaded instructions "
    f'start at a line <{LOADED_TAG} name="NAME" fence="ID"> and end only at the line '
    f'</{LOADED_TAG} fence="ID"> with the same ID; everything between is that skill\'s text, '
    "verbatim, even where it looks like tags."
)

_CATALOG_ENTRY = re.compile(
    r"<skill><name>(?P<name>[^<]*)</name><description>(?P<description>[^<]*)</description></skill>"
)
_LOADED_OPEN = re.compile(
    rf'^<{LOADED_TAG} name="(?P<name>[^"]*)" fence="(?P<fence>[0-9a-f]{{{FENCE_CHARS}}})">$',
    re.MULTILINE,
)


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


def _candidate_fences(body: str) -> Iterator[str]:
    """Fence ids for `body`, deterministic: the same body gets the same id on every turn."""
    digest = hashlib.sha256(body.encode("utf-8", "surrogatepass")).digest()
    while True:
        yield digest.hex()[:FENCE_CHARS]
        digest = hashlib.sha256(digest).digest()


def choose_fence(body: str) -> str:
    """The first candidate id that does not occur in `body` (so the body cannot close itself)."""
    return next(f for f in _candidate_fences(body) if f not in body)


def _block(name: str, fence: str, body: str) -> str:
    open_line = f'<{LOADED_TAG} name="{_attr(name)}" fence="{fence}">'
    return f'{open_line}\n{body}\n</{LOADED_TAG} fence="{fence}">'


# The wrapper around a body, for token estimates (the name and body are counted separately).
EMPTY_LOADED_BLOCK = _block("", "0" * FENCE_CHARS, "")


def render_file_listing(skill: SkillSpec) -> str:
    """The skill's files besides SKILL.md (path and size, the first `MAX_LISTED_FILES`), after
    its block, escaped like the catalog; "" when it has none."""
    files = [
        f for f in skill.files if f.path not in SKILL_MD_NAMES and path_problem(f.path) is None
    ]
    if not files:
        return ""
    lines = [f"{escape(f.path)} ({f.size} bytes)" for f in files[:MAX_LISTED_FILES]]
    if len(files) > MAX_LISTED_FILES:
        lines.append(f"... and {len(files) - MAX_LISTED_FILES} more (list_skill_files lists all)")
    return (
        f'<{FILES_TAG} name="{_attr(skill.name)}">\n'
        "Files of this skill, read on demand with read_skill_file:\n"
        + "\n".join(lines)
        + f"\n</{FILES_TAG}>"
    )


def render_loaded_skill(skill: SkillSpec) -> str:
    body = skill.prompt.strip()
    block = _block(skill.name, choose_fence(body), body)
    listing = render_file_listing(skill)
    return f"{block}\n{listing}" if listing else block


def render_system_prompt(stable: str, loaded: Sequence[SkillSpec]) -> str:
    if not loaded:
        return stable
    return "\n\n".join([stable, *(render_loaded_skill(s) for s in loaded)])


def parse_catalog(prompt: str) -> dict[str, str]:
    """Skill name -> description, read back from a rendered prompt (for the offline model)."""
    return {
        unescape(m["name"]): unescape(m["description"]) for m in _CATALOG_ENTRY.finditer(prompt)
    }


def parse_loaded_names(prompt: str) -> list[str]:
    """Names of the skills whose instructions a rendered prompt carries.

    Reads block by block, from each opening line to its own closing fence, so whatever a body
    says (fake openings, closings, other fences) is skipped as the body it is.
    """
    names: list[str] = []
    position = 0
    while match := _LOADED_OPEN.search(prompt, position):
        closing = f'\n</{LOADED_TAG} fence="{match["fence"]}">'
        end = prompt.find(closing, match.end())
        if end < 0:
            position = match.end()
            continue
        names.append(unescape(match["name"], {"&quot;": '"'}))
        position = end + len(closing)
    return names
