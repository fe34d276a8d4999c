"""Pinned skill versions: `name@3` in a Ghost's `spec.skills` (and `preloadSkills`).

A pin makes the Ghost's turns use that package version of the skill instead of the current
one, and keeps the version from being pruned (`pinned_versions`, read by every version write).
Everything that only needs to know *which* skills a Ghost uses reads bare names (`unpinned`);
only the turn (backend/chat/catalog.py) and validation look at the numbers. The syntax itself
is parsed in one place, `backend.crd.common.parse_skill_ref`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from backend.crd.common import SkillPin, parse_skill_ref
from backend.ghosts.references import referencing_ghosts
from backend.kinds.store import Scope

_LISTS = ("skills", "preloadSkills")


def refs(values: Iterable[str]) -> list[SkillPin]:
    """Stored (already validated) references, parsed."""
    return [parse_skill_ref(v) for v in values]


def names(values: Iterable[str]) -> list[str]:
    return [p.name for p in refs(values)]


def pins(spec: Mapping[str, Any]) -> dict[str, int]:
    """skill name -> the version `spec.skills` pins it to."""
    return {p.name: p.version for p in refs(spec.get("skills", ())) if p.version is not None}


def unpinned(ghost: dict[str, Any]) -> dict[str, Any]:
    """The Ghost CRD with bare skill names in its lists (a copy when one was pinned)."""
    spec = ghost["spec"]
    if not any("@" in ref for key in _LISTS for ref in spec.get(key, ())):
        return ghost
    bare = {key: names(spec[key]) for key in _LISTS if key in spec}
    return {**ghost, "spec": {**spec, **bare}}


async def pinned_versions(session: AsyncSession, skill: Scope, name: str) -> set[int]:
    """The versions of skill `name` in scope `skill` that some Ghost pins (never pruned)."""
    found: set[int] = set()
    for row in await referencing_ghosts(session, skill, name):
        version = pins(row.json.get("spec", {})).get(name)
        if version is not None:
            found.add(version)
    return found
