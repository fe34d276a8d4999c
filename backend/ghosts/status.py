"""What a served Ghost says in `status`: warnings about the skills it lists.

Computed each time a Ghost is served, never stored: enabling or disabling a skill changes it.
A listed skill that is disabled is still accepted on write (it may be enabled again), but the
Ghost's turns do not offer it, so the answer says so (`skill_disabled`) instead of staying silent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from backend.crd.ghost import current_spelling
from backend.db.models import SYSTEM_USER_ID, Kind
from backend.ghosts import pins
from backend.ghosts.resolve import skill_rows
from backend.kinds.store import Scope


def _disabled(name: str, row: Kind, preloaded: bool) -> str:
    effect = "this Ghost's turns do not offer it" + (" nor preload it" if preloaded else "")
    if row.user_id == SYSTEM_USER_ID:
        return (
            f"public skill {name!r} is disabled by an admin, so {effect}; remove it from "
            "spec.skills or ask an admin to enable it"
        )
    return (
        f"skill {name!r} in namespace {row.namespace!r} is disabled, so {effect}; enable it "
        f"with PATCH /api/v1/namespaces/{row.namespace}/skills/{name} "
        '{"enabled": true} or remove it from spec.skills'
    )


def warnings(crd: Mapping[str, Any], skills: Mapping[str, Kind]) -> list[dict[str, Any]]:
    """The warnings of a Ghost whose skill names resolve to `skills` (name -> skill row)."""
    spec = crd["spec"]
    preload = set(pins.names(spec.get("preloadSkills", ())))
    found: list[dict[str, Any]] = []
    for name in pins.names(spec.get("skills", ())):
        row = skills.get(name)
        if row is not None and row.json["status"].get("enabled", True) is False:
            message = _disabled(name, row, name in preload)
            found.append({"code": "skill_disabled", "message": message, "skill": name})
    return found


async def served_many(
    session: AsyncSession, ghosts: Sequence[tuple[Scope, dict[str, Any]]]
) -> list[dict[str, Any]]:
    """Each stored Ghost (with its owner scope) as served: today's spelling plus `status`."""
    current = [(scope, current_spelling(crd)) for scope, crd in ghosts]
    names: dict[Scope, set[str]] = {}
    for scope, crd in current:
        names.setdefault(scope, set()).update(pins.names(crd["spec"].get("skills", ())))
    rows = {scope: await skill_rows(session, scope, sorted(n)) for scope, n in names.items()}
    return [{**crd, "status": {"warnings": warnings(crd, rows[scope])}} for scope, crd in current]


async def served(session: AsyncSession, scope: Scope, crd: dict[str, Any]) -> dict[str, Any]:
    return (await served_many(session, [(scope, crd)]))[0]
