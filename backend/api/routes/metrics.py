"""Operator counters of this gateway process (admins only)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Request

from backend.api.deps import AdminUser
from backend.chat.sandbox import sandbox_status

router = APIRouter(tags=["operations"])


@router.get("/metrics")
async def metrics(_: AdminUser, request: Request) -> dict[str, Any]:
    """Pending browser requests of this process: waiting now, and answers resolved, expired
    and rejected since start (sum them across gateways and workers); whether this process can
    run skill scripts in the sandbox, and if not why."""
    runtime = request.app.state.chat
    settings = request.app.state.settings
    return {
        "mode": "redis" if settings.redis_url else "embedded",
        "pending_requests": asdict(runtime.registry.metrics()),
        "sandbox": await sandbox_status(request.app.state.sandbox, settings),
    }
