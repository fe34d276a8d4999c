"""Operator counters of this gateway process (admins only)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel

from backend.api.deps import AdminUser
from backend.api.errors import errors

router = APIRouter(tags=["operations"])


class PendingRequests(BaseModel):
    pending: int
    resolved: int
    expired: int
    rejected: int


class Metrics(BaseModel):
    mode: Literal["redis", "embedded"]
    pending_requests: PendingRequests


@router.get("/metrics", responses=errors(403))
async def metrics(_: AdminUser, request: Request) -> Metrics:
    """Pending browser requests of this process: waiting now, and answers resolved, expired
    and rejected since start (sum them across gateways and workers)."""
    runtime = request.app.state.chat
    return Metrics(
        mode="redis" if request.app.state.settings.redis_url else "embedded",
        pending_requests=PendingRequests(**asdict(runtime.registry.metrics())),
    )
