"""Metrics on their own port (`SKILLHIVE_METRICS_PORT`, `SKILLHIVE_WORKER_METRICS_PORT`).

The library's small threaded HTTP server, bound to `SKILLHIVE_METRICS_HOST`: a scrape never
waits on the event loop, and the port can stay private to the cluster (no auth on it).
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, start_http_server
from sqlalchemy.ext.asyncio import AsyncEngine

from backend.config import Settings
from backend.ops.metrics import ProcessSources, PrometheusObserver, exposition_registry
from chat_shell import PendingRequestRegistry, set_observer


def observe_chat_shell() -> None:
    """chat_shell's reports (MCP calls, sandbox runs) go to this process's metrics."""
    set_observer(PrometheusObserver())


def serve_metrics(host: str, port: int, registry: CollectorRegistry) -> Callable[[], None]:
    """Start serving `registry` on host:port; returns the function that stops it."""
    server, thread = start_http_server(port, addr=host, registry=registry)

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

    return stop


def start_worker_metrics(
    settings: Settings, pending: PendingRequestRegistry, engine: AsyncEngine
) -> Callable[[], None] | None:
    """A worker's metrics endpoint, when `SKILLHIVE_WORKER_METRICS_PORT` is set."""
    if not settings.metrics:
        return None
    observe_chat_shell()
    if settings.worker_metrics_port is None:
        return None
    sources = ProcessSources(pending_requests=lambda: pending, engine=lambda: engine)
    return serve_metrics(
        settings.metrics_host, settings.worker_metrics_port, exposition_registry(sources)
    )
