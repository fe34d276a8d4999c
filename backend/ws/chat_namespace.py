"""The `/chat` Socket.IO namespace (class-based, python-socketio).

Events with a colon (`chat:send`) are dispatched to `on_chat_send`. Every handler answers with
an ack: `{"ok": true, ...}` or the REST error shape `{"ok": false, "error": {...}}`. What every
event passes before it gets here (frame shape, reserved names, rate limit, live authorization)
is `backend/ws/server.py`.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

import socketio
from pydantic import BaseModel, Field, ValidationError

from backend.chat import conversations
from backend.chat.runtime import ChatRuntime
from backend.db.types import NoNul
from backend.errors import InvalidRequest, ServiceUnavailable, SkillhiveError, Unauthorized
from backend.ws.live_auth import LiveAuth
from backend.ws.rooms import NAMESPACE, conversation_room, user_room
from chat_shell import RegistryUnavailable

log = logging.getLogger("skillhive.ws")


class _ConversationRef(BaseModel):
    conversation_id: Annotated[str, NoNul] = Field(min_length=1, max_length=64)


class _SkillResponse(BaseModel):
    request_id: Annotated[str, NoNul] = Field(min_length=1, max_length=64)
    success: bool
    result: Any = None
    error: str | None = Field(None, max_length=10_000)


class _Send(_ConversationRef):
    content: conversations.MessageText


def _error(exc: SkillhiveError) -> dict[str, Any]:
    return {"ok": False, **exc.to_dict()}


def _parse(model: type[BaseModel], data: Any) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = [{"loc": list(e["loc"]), "msg": e["msg"]} for e in exc.errors()]
        raise InvalidRequest("invalid event payload", details={"errors": errors}) from exc


class ChatNamespace(socketio.AsyncNamespace):  # type: ignore[misc]
    def __init__(self, runtime: ChatRuntime, live_auth: LiveAuth) -> None:
        super().__init__(NAMESPACE)
        self.runtime = runtime
        self.live_auth = live_auth

    async def trigger_event(self, event: str, *args: Any) -> Any:
        # `connect` and `disconnect` come from python-socketio only: the server refuses clients'
        handler_name = "on_" + event.replace(":", "_")
        if event not in ("connect", "disconnect") and not hasattr(self, handler_name):
            return {
                "ok": False,
                **InvalidRequest(f"unknown event {event[:64]!r}", code="unknown_event").to_dict(),
            }
        try:
            return await super().trigger_event(event.replace(":", "_"), *args)
        except socketio.exceptions.ConnectionRefusedError:
            raise  # python-socketio turns it into the client's connect error
        except SkillhiveError as exc:
            return _error(exc)
        except Exception:
            log.exception("socket.io handler %s failed", event)
            return {
                "ok": False,
                "error": {"code": "internal_error", "message": "internal error", "details": {}},
            }

    async def on_connect(self, sid: str, environ: dict[str, Any], auth: Any = None) -> None:
        token = auth.get("token") if isinstance(auth, dict) else None
        try:
            if not isinstance(token, str) or not token:
                raise Unauthorized("connect with auth: {token}", code="missing_token")
            grant = await self.live_auth.authenticate(token)
            self.live_auth.admit_socket(sid, grant)  # 429 past the user's connections
        except SkillhiveError as exc:
            # The client's connect_error gets {message, data: {"error": {code, message, details}}}
            raise socketio.exceptions.ConnectionRefusedError(exc.message, exc.to_dict()) from exc
        await self.enter_room(sid, user_room(grant.user_id))

    async def on_disconnect(self, sid: str, reason: str | None = None) -> None:
        self.live_auth.forget(sid)

    async def _user_id(self, sid: str) -> int:
        return self.live_auth.user_id(sid)

    async def _owned(
        self, sid: str, data: Any, model: type[BaseModel] = _ConversationRef
    ) -> tuple[int, Any]:
        payload = _parse(model, data)
        user_id = await self._user_id(sid)
        async with self.runtime.sessionmaker() as session:
            await conversations.get(session, user_id, payload.conversation_id)  # 404 if not theirs
        return user_id, payload

    async def on_conversation_join(self, sid: str, data: Any = None) -> dict[str, Any]:
        _, payload = await self._owned(sid, data)
        await self.enter_room(sid, conversation_room(payload.conversation_id))
        return {"ok": True}

    async def on_conversation_leave(self, sid: str, data: Any = None) -> dict[str, Any]:
        payload = _parse(_ConversationRef, data)
        await self.leave_room(sid, conversation_room(payload.conversation_id))
        return {"ok": True}

    async def on_chat_send(self, sid: str, data: Any = None) -> dict[str, Any]:
        payload = _parse(_Send, data)
        user_id = await self._user_id(sid)
        room = conversation_room(payload.conversation_id)

        async def join() -> None:
            # The sender hears its turn even if it never sent `conversation:join` (a naive
            # client); `send` calls this after its ownership check (404 first, as `_owned`).
            await self.enter_room(sid, room)

        message_id = await self.runtime.send(
            user_id, payload.conversation_id, payload.content, owned=join
        )
        return {"ok": True, "message_id": message_id}

    async def on_chat_cancel(self, sid: str, data: Any = None) -> dict[str, Any]:
        _, payload = await self._owned(sid, data)
        return {
            "ok": True,
            "cancelled": await self.runtime.transport.cancel(payload.conversation_id),
        }

    async def on_skill_response(self, sid: str, data: Any = None) -> dict[str, Any]:
        """The browser's answer to a `skill:request`; only the request's user can resolve it,
        once. The ack carries the outcome: resolved | not_found | already_resolved | expired."""
        payload = _parse(_SkillResponse, data)
        try:
            outcome = await self.runtime.transport.registry.resolve(
                await self._user_id(sid),
                payload.request_id,
                payload.success,
                payload.result,
                payload.error,
            )
        except RegistryUnavailable as exc:  # Redis unreachable: the browser may answer again
            log.warning("skill:response not delivered: %s", exc)
            raise ServiceUnavailable(
                "pending requests are unavailable; retry", code="pending_unavailable"
            ) from exc
        return {"ok": outcome == "resolved", "outcome": str(outcome)}
