"""Operator counters of this gateway process (admins only), as JSON.

Deprecated: `GET /metrics` (Prometheus, backend/ops/metrics.py) has these counters and more.
Kept so existing dashboards keep working.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel

from backend.api.deps import AdminUser, TransportDep
from backend.api.errors import errors
from backend.chat.sandbox import sandbox_status

router = APIRouter(tags=["operations"])


class PendingRequests(BaseModel):
    pending: int
    resolved: int
    expired: int
    rejected: int


class Metrics(BaseModel):
    mode: Literal["redis", "embedded"]
    pending_requests: PendingRequests
    sandbox: dict[str, Any]  # availability (and why not), engine, who may run


@router.get("/metrics", responses=errors(403), deprecated=True)
async def metrics(_: AdminUser, request: Request, transport: TransportDep) -> Metrics:
    """Deprecated: scrape `GET /metrics` (Prometheus text format) instead.

    Pending browser requests of this process: waiting now, and answers resolved, expired
    and rejected since start (sum them across gateways and workers); whether this process can
    run skill scripts in the sandbox, and if not why."""
    settings = request.app.state.settings
    return Metrics(
        mode="redis" if settings.redis_url else "embedded",
        pending_requests=PendingRequests(**asdict(transport.registry.metrics())),
        sandbox=await sandbox_status(request.app.state.sandbox, settings),
    )
