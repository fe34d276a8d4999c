"""Skill search: exactly what the agent's `search_skills` sees, and a search over all one reads.

`GET /namespaces/{ns}/ghosts/{name}/skills/search` (and `/public/ghosts/{name}/...`) searches a
Ghost's skills with the ranking and threshold its turns use; `GET /skills/search` searches every
skill the caller can read (their own in any namespace, and the public ones). Public skills are
reported in namespace `public`.
"""

# No `from __future__ import annotations`: FastAPI resolves the dependency signatures at runtime.
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel

from backend.api.deps import CurrentUser, SessionDep, SettingsDep
from backend.api.errors import errors
from backend.api.resources import own_scope
from backend.crd.stored import STALE_GHOST
from backend.ghosts import PUBLIC_GHOSTS
from backend.ghosts.resolve import ghost_skills
from backend.ghosts.service import get_typed as get_ghost
from backend.kinds.store import Scope
from backend.skills.search.engine import SearchHit, search
from backend.skills.search.selection import ReadableSkills, SkillSource
from backend.skills.search.semantic import ranker_for

MAX_LIMIT = 50
DEFAULT_LIMIT = 5  # as search_skills

Q = Annotated[str, Query(min_length=1, max_length=500, description="What the task is about.")]
Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT)]


class SkillSearchItem(BaseModel):
    name: str
    namespace: str
    description: str
    score: float  # 0-1; results under the server's threshold are left out


class SkillSearchResult(BaseModel):
    items: list[SkillSearchItem]


async def _run(
    session: SessionDep, settings: SettingsDep, source: SkillSource, q: str, limit: int
) -> SkillSearchResult:
    hits: list[SearchHit] = await search(
        session,
        source,
        q,
        limit=limit,
        threshold=settings.skill_search_threshold,
        rerank=ranker_for(settings),
    )
    return SkillSearchResult(
        items=[
            SkillSearchItem(
                name=h.name, namespace=h.namespace, description=h.description, score=h.score
            )
            for h in hits
        ]
    )


def _public_ghost_scope(_: CurrentUser) -> Scope:
    return PUBLIC_GHOSTS


router = APIRouter(tags=["skill search"])


@router.get("/skills/search", responses=errors(422))
async def search_readable_skills(
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    q: Q,
    limit: Limit = DEFAULT_LIMIT,
) -> SkillSearchResult:
    """Every skill the caller can read, best match first."""
    return await _run(session, settings, ReadableSkills(user.id), q, limit)


@router.get(
    "/namespaces/{namespace}/ghosts/{name}/skills/search",
    responses=errors(404, STALE_GHOST, 422),
)
async def search_ghost_skills(
    name: str,
    scope: Annotated[Scope, Depends(own_scope)],
    session: SessionDep,
    settings: SettingsDep,
    q: Q,
    limit: Limit = DEFAULT_LIMIT,
) -> SkillSearchResult:
    """The Ghost's skills, ranked as its `search_skills` tool ranks them."""
    ghost = await get_ghost(session, scope, name)
    return await _run(session, settings, ghost_skills(scope, ghost.spec), q, limit)


@router.get("/public/ghosts/{name}/skills/search", responses=errors(404, STALE_GHOST, 422))
async def search_public_ghost_skills(
    name: str,
    scope: Annotated[Scope, Depends(_public_ghost_scope)],
    session: SessionDep,
    settings: SettingsDep,
    q: Q,
    limit: Limit = DEFAULT_LIMIT,
) -> SkillSearchResult:
    """A public Ghost's skills (public skills only), ranked as its `search_skills` ranks them."""
    ghost = await get_ghost(session, scope, name)
    return await _run(session, settings, ghost_skills(scope, ghost.spec), q, limit)
