"""Ghosts: agent definitions stored as CRDs (validation, storage, resolution for chat, apply).

Public Ghosts belong to user 0 in namespace `public`, so a Ghost reference is always
`<namespace>/<name>` and `public/<name>` cannot name a user's own Ghost (users may not use the
`public` namespace for Ghosts).
"""

from __future__ import annotations

from backend.db.models import SYSTEM_USER_ID
from backend.kinds.store import Scope

PUBLIC_NAMESPACE = "public"
PUBLIC_GHOSTS = Scope(SYSTEM_USER_ID, PUBLIC_NAMESPACE)
