"""Liveness (`/healthz`) and readiness (`/readyz`: database, and Redis when configured).

`/readyz` also reports the sandbox under `details`: informative, never failing readiness (a
process without bubblewrap serves everything except running skill scripts).
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy import text

from backend.chat.sandbox import sandbox_status

router = APIRouter(tags=["health"])

CHECK_TIMEOUT_S = 2.0


class Health(BaseModel):
    status: Literal["ok"]


class Check(BaseModel):
    ok: bool
    error: str | None = None  # the exception's class name only


class Readiness(BaseModel):
    status: Literal["ok", "unavailable"]
    checks: dict[str, Check]


async def _check(probe: Any) -> dict[str, Any]:
    try:
        await asyncio.wait_for(probe, CHECK_TIMEOUT_S)
    except Exception as exc:
        # The class name only: messages can carry connection strings.
        return {"ok": False, "error": type(exc).__name__}
    return {"ok": True}


async def _database(request: Request) -> None:
    async with request.app.state.engine.connect() as conn:
        await conn.execute(text("SELECT 1"))


@router.get("/healthz")
async def healthz() -> Health:
    return Health(status="ok")


@router.get(
    "/readyz",
    response_model=Readiness,
    responses={503: {"model": Readiness, "description": "a dependency is unreachable"}},
)
async def readyz(request: Request) -> JSONResponse:
    checks = {"database": await _check(_database(request))}
    redis = request.app.state.redis
    if redis is not None:
        checks["redis"] = await _check(redis.ping())
    ready = all(c["ok"] for c in checks.values())
    details = {
        "sandbox": await sandbox_status(request.app.state.sandbox, request.app.state.settings)
    }
    return JSONResponse(
        {"status": "ok" if ready else "unavailable", "checks": checks, "details": details},
        status_code=200 if ready else 503,
    )
