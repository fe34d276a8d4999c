"""Operator counters of this gateway process (admins only)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Request

from backend.api.deps import AdminUser

router = APIRouter(tags=["operations"])


@router.get("/metrics")
async def metrics(_: AdminUser, request: Request) -> dict[str, Any]:
    """Pending browser requests of this process: waiting now, and answers resolved, expired
    and rejected since start (sum them across gateways and workers)."""
    runtime = request.app.state.chat
    return {
        "mode": "redis" if request.app.state.settings.redis_url else "embedded",
        "pending_requests": asdict(runtime.registry.metrics()),
    }
