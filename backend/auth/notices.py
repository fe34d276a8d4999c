"""Notices that a token or a user stopped being authorized.

REST needs none (it checks the database on every request); open Socket.IO sockets do: the routes
that revoke a token or deactivate a user send a notice, and every gateway ends the sockets that
relied on it (`backend/ws/live_auth.py`). With Redis the notice travels on the channel
`channel(prefix)` names.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Protocol, cast

from fastapi import Request


def channel(prefix: str) -> str:
    """The Redis channel of notices, under SKILLHIVE_REDIS_PREFIX like every shared key."""
    return f"{prefix}auth-ended"


@dataclass(frozen=True)
class AuthEnded:
    token_id: int | None = None
    user_id: int | None = None

    def encode(self) -> str:
        return json.dumps({"token_id": self.token_id, "user_id": self.user_id})

    @classmethod
    def decode(cls, raw: str | bytes) -> AuthEnded | None:
        """None for anything but a notice this module encoded."""
        try:
            data = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        ids = [data.get("token_id"), data.get("user_id")]
        if not all(i is None or type(i) is int for i in ids) or ids == [None, None]:
            return None
        return cls(token_id=ids[0], user_id=ids[1])


class AuthNotices(Protocol):
    async def ended(self, notice: AuthEnded) -> None:
        """Tell every gateway (after the change is committed); never raises."""
        ...


def auth_notices(request: Request) -> AuthNotices:
    return cast(AuthNotices, request.app.state.auth_notices)
