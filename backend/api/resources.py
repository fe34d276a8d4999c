"""What the CRD routes (skills, Ghosts) share: whose objects a request sees, and the reply.

`/namespaces/{namespace}/...` is always the caller's own; `/public/...` is user 0's, readable by
every authenticated user and writable by admins only.
"""

# No `from __future__ import annotations`: FastAPI resolves the dependency signatures at runtime.
from collections.abc import Callable
from typing import Any

from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from backend.api.deps import AdminUser, CurrentUser
from backend.api.errors import errors
from backend.crd.common import name_problem
from backend.crd.ghost import Ghost
from backend.crd.skill import Skill
from backend.errors import InvalidRequest
from backend.kinds.store import Scope

ScopeDep = Callable[..., Scope]

_CONTINUE = "pass it back as `?continue=` for the next page; null on the last page"


class SkillList(BaseModel):
    items: list[Skill]
    continue_: str | None = Field(alias="continue", description=_CONTINUE)


class GhostList(BaseModel):
    items: list[Ghost]
    continue_: str | None = Field(alias="continue", description=_CONTINUE)


def valid_namespace(namespace: str) -> str:
    problem = name_problem(namespace)
    if problem is not None:
        raise InvalidRequest(f"namespace {problem}", code="invalid_namespace")
    return namespace


def own_scope(namespace: str, user: CurrentUser) -> Scope:
    return Scope(user.id, valid_namespace(namespace))


def public_scopes(scope: Scope) -> tuple[ScopeDep, ScopeDep]:
    """(read, write) dependencies resolving to the public `scope`."""

    def read(_: CurrentUser) -> Scope:
        return scope

    def write(_: AdminUser) -> Scope:
        return scope

    return read, write


QUOTA_SKILLS = (429, "a quota is reached (`quota_skills`, `quota_skill_bytes`)")
QUOTA_BYTES = (429, "the stored skill bytes quota is reached (`quota_skill_bytes`)")
IMPORT_IN_PROGRESS = (429, "an import of the caller's runs in this process (`import_in_progress`)")


def crd_errors(
    *statuses: int | tuple[int, str], own: bool, write: bool = False
) -> dict[int | str, dict[str, Any]]:
    """A CRD route's error statuses (see `errors`), plus: the namespace in the URL may be
    invalid (422) in the own tree; writing to the public tree is for admins (403)."""
    declared = errors(*((422,) if own else ()))
    declared.update(errors(403) if write and not own else {})
    declared.update(errors(*statuses))
    return declared


def crd_response(crd: dict[str, Any], status: int = 200) -> JSONResponse:
    """The stored CRD, with its resourceVersion as the ETag (If-Match takes it back)."""
    version = crd["metadata"]["resourceVersion"]
    return JSONResponse(crd, status_code=status, headers={"ETag": f'"{version}"'})
