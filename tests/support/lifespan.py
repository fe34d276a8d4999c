"""Running an app's lifespan in a test, with room for a machine busy with parallel test workers."""

from __future__ import annotations

from asgi_lifespan import LifespanManager
from fastapi import FastAPI

# asgi-lifespan's default is 5 s. Start-up opens databases, runs checks and starts background
# tasks; with four test workers on two cores it has taken longer. This bounds a hang, not speed.
TIMEOUT_S = 60.0


def running(app: FastAPI) -> LifespanManager:
    """`async with running(app):` starts the app (lifespan start-up) and shuts it down after."""
    return LifespanManager(app, startup_timeout=TIMEOUT_S, shutdown_timeout=TIMEOUT_S)
