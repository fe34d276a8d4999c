"""Ghosts: agent definitions stored as CRDs (validation, storage, resolution for chat, apply).

Public Ghosts belong to user 0 in namespace `public`, so a Ghost reference is always
`<namespace>/<name>` and `public/<name>` cannot name a user's own Ghost. Users may not write
into namespace `public`, Ghosts, skills or plugins (`check_user_namespace`): search shows public
skills in it, so a user's own would pass for public ones.
"""

from __future__ import annotations

from backend.db.models import SYSTEM_USER_ID
from backend.errors import InvalidRequest
from backend.kinds.store import Scope

PUBLIC_NAMESPACE = "public"
PUBLIC_GHOSTS = Scope(SYSTEM_USER_ID, PUBLIC_NAMESPACE)


def check_user_namespace(scope: Scope, what: str) -> None:
    """422 `invalid_namespace` when a user (not user 0) would write `what` ("Ghosts",
    "skills", ...) into namespace `public`; admins publish through the `/public/...` routes."""
    if scope.user_id != SYSTEM_USER_ID and scope.namespace == PUBLIC_NAMESPACE:
        raise InvalidRequest(
            f"namespace {PUBLIC_NAMESPACE!r} is reserved for public {what}",
            code="invalid_namespace",
            details={"namespace": PUBLIC_NAMESPACE},
        )
