"""What the CRD routes (skills, Ghosts) share: whose objects a request sees, and the reply.

`/namespaces/{namespace}/...` is always the caller's own; `/public/...` is user 0's, readable by
every authenticated user and writable by admins only.
"""

# No `from __future__ import annotations`: FastAPI resolves the dependency signatures at runtime.
from collections.abc import Callable
from typing import Any

from fastapi.responses import JSONResponse

from backend.api.deps import AdminUser, CurrentUser
from backend.crd.common import name_problem
from backend.errors import InvalidRequest
from backend.kinds.store import Scope

ScopeDep = Callable[..., Scope]


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


def crd_response(crd: dict[str, Any], status: int = 200) -> JSONResponse:
    """The stored CRD, with its resourceVersion as the ETag (If-Match takes it back)."""
    version = crd["metadata"]["resourceVersion"]
    return JSONResponse(crd, status_code=status, headers={"ETag": f'"{version}"'})
