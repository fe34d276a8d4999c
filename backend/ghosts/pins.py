"""Pinned skill versions: `name@3` in a Ghost's `spec.skills` (and `preloadSkills`).

A pin makes the Ghost's turns use that package version of the skill instead of the current
one, and keeps the version from being pruned (`pinned_versions`, read by every version write).
Everything that only needs to know *which* skills a Ghost uses reads bare names (`names`, and
`ResolvedGhost.unpinned` for a turn); only the turn (backend/chat/catalog.py) and validation look
at the numbers. The syntax itself
is parsed in one place, `backend.crd.common.parse_skill_ref`.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy.ext.asyncio import AsyncSession

from backend.crd.common import SkillPin, parse_skill_ref
from backend.ghosts.references import referencing_ghosts
from backend.kinds.store import Scope


def refs(values: Iterable[str]) -> list[SkillPin]:
    """Stored (already validated) references, parsed."""
    return [parse_skill_ref(v) for v in values]


def names(values: Iterable[str]) -> list[str]:
    return [p.name for p in refs(values)]


def pins(skills: Iterable[str]) -> dict[str, int]:
    """skill name -> the version a Ghost's `spec.skills` pins it to."""
    return {p.name: p.version for p in refs(skills) if p.version is not None}


async def pinned_versions(session: AsyncSession, skill: Scope, name: str) -> set[int]:
    """The versions of skill `name` in scope `skill` that some Ghost pins (never pruned)."""
    found: set[int] = set()
    for row in await referencing_ghosts(session, skill, name):
        version = pins(row.json.get("spec", {}).get("skills", ())).get(name)
        if version is not None:
            found.add(version)
    return found
