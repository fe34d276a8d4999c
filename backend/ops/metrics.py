"""Prometheus metrics of gateways and workers (`GET /metrics`, docs/configuration.md).

Every label value comes from a fixed set, whatever tenants name things: routes are templates,
models are the operator's names (else `custom`), skills are `public` or `user`, MCP servers
`ghost` or `skill`. No user id, user name or user skill name ever becomes a label value, so the
number of series is bounded by design (tests/backend/ops/test_metrics.py drives many users and
skills and checks it).

Process-wide metrics live in the library's default registry (multiprocess mode when
`PROMETHEUS_MULTIPROC_DIR` is set, for several uvicorn workers). Gauges of one process's own
objects (browser requests waiting, database connections in use) are read when scraped.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backend.config import Settings
from chat_shell import Event, McpScope, PendingRequestRegistry

CONTENT_TYPE = CONTENT_TYPE_LATEST

# --- fixed label sets ---------------------------------------------------------------------

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED_ROUTE = "unmatched"  # 404s of unknown paths: their path is the client's text
TURN_OUTCOMES = ("ok", "error", "cancelled", "turn_timeout", "quota_exceeded")
CUSTOM_MODEL = "custom"
SKILL_SCOPES = ("public", "user")
SANDBOX_LIMITS = frozenset({"wall_time", "cpu", "output", "workspace"})

_LATENCY = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
_TURN = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)

HTTP_REQUESTS = Counter(
    "skillhive_http_requests_total", "HTTP requests answered.", ["method", "route", "status"]
)
HTTP_DURATION = Histogram(
    "skillhive_http_request_duration_seconds",
    "Time to answer an HTTP request (to the end of a streamed body).",
    ["method", "route"],
    buckets=_LATENCY,
)
TURNS = Counter("skillhive_turns_total", "Chat turns ended, by outcome.", ["outcome"])
TURN_DURATION = Histogram(
    "skillhive_turn_duration_seconds", "Duration of a chat turn.", buckets=_TURN
)
TIME_TO_FIRST_TOKEN = Histogram(
    "skillhive_turn_time_to_first_token_seconds",
    "From a turn's start to its first answer token.",
    buckets=_TURN,
)
PROMPT_TOKENS = Counter(
    "skillhive_model_prompt_tokens_total",
    "Prompt tokens of model calls; skill=true once a skill was loaded in the turn.",
    ["model", "skill"],
)
COMPLETION_TOKENS = Counter(
    "skillhive_model_completion_tokens_total",
    "Completion tokens of model calls; skill=true once a skill was loaded in the turn.",
    ["model", "skill"],
)
MODEL_CALLS = Counter(
    "skillhive_model_calls_total",
    "Model calls; estimated=true when the provider reported no usage.",
    ["model", "estimated"],
)
SKILLS_LOADED = Counter("skillhive_skills_loaded_total", "Skills loaded by turns.", ["scope"])
MCP_CALLS = Counter("skillhive_mcp_calls_total", "MCP tool calls.", ["scope"])
MCP_ERRORS = Counter("skillhive_mcp_errors_total", "MCP tool calls that failed.", ["scope"])
SANDBOX_RUNS = Counter("skillhive_sandbox_runs_total", "Skill script runs in the sandbox.")
SANDBOX_LIMITS_HIT = Counter(
    "skillhive_sandbox_limits_hit_total", "Sandbox runs stopped by a limit.", ["limit"]
)
DISPATCH_LAG = Histogram(
    "skillhive_dispatch_stream_lag_seconds",
    "From a turn's entry in the Redis Stream to a worker starting it.",
    buckets=_LATENCY + (60, 120),
)
DISPATCH_RECLAIMS = Counter(
    "skillhive_dispatch_reclaims_total", "Turns reclaimed from a worker that stopped."
)
QUOTA_REJECTIONS = Counter(
    "skillhive_quota_rejections_total", "Requests and turns refused by a quota.", ["limit"]
)


def observe_stream_lag(entry_id: str) -> None:
    """A Redis Stream entry id starts with its milliseconds since the epoch."""
    millis = entry_id.partition("-")[0]
    if millis.isdigit():
        DISPATCH_LAG.observe(max(0.0, time.time() - int(millis) / 1000))


def _label(value: str, allowed: Iterable[str], other: str = "other") -> str:
    return value if value in allowed else other


def model_label(name: str, settings: Settings) -> str:
    """The model's name when the operator named it (`model`, `allowed_models`), else `custom`:
    a Ghost on its own endpoint may name its model anything."""
    known = {settings.model, "offline", *settings.allowed_models}
    return _label(name, known, CUSTOM_MODEL)


# --- chat_shell's reports ------------------------------------------------------------------


class PrometheusObserver:
    """`chat_shell.observe.Observer` writing these metrics."""

    def mcp_call(self, scope: McpScope, *, error: bool) -> None:
        label = _label(scope, ("ghost", "skill"))
        MCP_CALLS.labels(label).inc()
        if error:
            MCP_ERRORS.labels(label).inc()

    def sandbox_run(self, limits_hit: tuple[str, ...]) -> None:
        SANDBOX_RUNS.inc()
        for limit in limits_hit:
            SANDBOX_LIMITS_HIT.labels(_label(limit, SANDBOX_LIMITS)).inc()


# --- one turn ------------------------------------------------------------------------------


def outcome_of(code: str | None) -> str:
    """`ok` for a stored answer, the code when it is a known outcome, else `error`."""
    if code is None:
        return "ok"
    return code if code in TURN_OUTCOMES else "error"


@dataclass
class TurnObservation:
    """The metrics of one turn, fed its events (call site: backend/chat/turns.py)."""

    model: str  # already a label (model_label)
    public_skills: frozenset[str] = frozenset()
    enabled: bool = True  # SKILLHIVE_METRICS
    started: float = field(default_factory=time.perf_counter)
    first_token: bool = False
    skill_loaded: bool = False

    def event(self, event: Event) -> None:
        if not self.enabled:
            return
        if event.type == "token" and not self.first_token:
            self.first_token = True
            TIME_TO_FIRST_TOKEN.observe(time.perf_counter() - self.started)
        elif event.type == "skill_loaded":
            self.skill_loaded = True
            scope = "public" if event.name in self.public_skills else "user"
            SKILLS_LOADED.labels(scope).inc()
        elif event.type == "usage":
            skill = "true" if self.skill_loaded else "false"
            PROMPT_TOKENS.labels(self.model, skill).inc(event.prompt_tokens)
            COMPLETION_TOKENS.labels(self.model, skill).inc(event.completion_tokens)
            MODEL_CALLS.labels(self.model, "true" if event.estimated else "false").inc()

    def finish(self, error_code: str | None) -> None:
        if not self.enabled:
            return
        TURNS.labels(outcome_of(error_code)).inc()
        TURN_DURATION.observe(time.perf_counter() - self.started)


# --- HTTP ----------------------------------------------------------------------------------


def route_template(scope: Scope, prefixes: Iterable[str] = ()) -> str:
    """The template of the route that answered, never the path.

    FastAPI leaves the matched route in the scope with its path below the routers it was
    included with by prefix (`/conversations/{id}` under `/api/v1`): one of the app's static
    `prefixes` whose remainder the route matches is put back in front. Reading the OpenAPI
    document instead would build it on the first request, seconds of the event loop."""
    route = scope.get("route")
    path_format = getattr(route, "path_format", None)
    path_regex = getattr(route, "path_regex", None)
    if not isinstance(path_format, str) or not isinstance(path_regex, re.Pattern):
        return UNMATCHED_ROUTE  # nothing routed: an unknown path, the client's text
    path: str = scope["path"]
    for prefix in ("", *prefixes):
        if path.startswith(prefix) and path_regex.match(path[len(prefix) :]):
            return prefix + path_format
    return UNMATCHED_ROUTE


class HttpMetricsMiddleware:
    """Requests by route template and status; pure ASGI so SSE is timed to its end."""

    def __init__(self, app: ASGIApp, prefixes: Iterable[str] = ()) -> None:
        self.app = app
        self.prefixes = tuple(prefixes)  # static prefixes routers are included under

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            template = route_template(scope, self.prefixes)
            method = _label(scope["method"], METHODS)
            HTTP_REQUESTS.labels(method, template, str(status)).inc()
            HTTP_DURATION.labels(method, template).observe(time.perf_counter() - started)


# --- exposition ----------------------------------------------------------------------------


@dataclass
class ProcessSources:
    """This process's objects whose state is read at scrape time."""

    pending_requests: Callable[[], PendingRequestRegistry | None] = lambda: None
    engine: Callable[[], AsyncEngine | None] = lambda: None


class _ProcessCollector(Collector):
    def __init__(self, sources: ProcessSources) -> None:
        self.sources = sources

    def collect(self) -> Iterator[Metric]:
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            shared = CollectorRegistry()
            multiprocess.MultiProcessCollector(shared)  # type: ignore[no-untyped-call]
            yield from shared.collect()
        else:
            yield from REGISTRY.collect()
        registry = self.sources.pending_requests()
        if registry is not None:
            counts = registry.metrics()
            yield GaugeMetricFamily(
                "skillhive_browser_requests_pending",
                "Browser requests this process waits for now.",
                value=counts.pending,
            )
            answered = CounterMetricFamily(
                "skillhive_browser_requests",
                "Browser requests of this process ended, by result.",
                labels=["result"],
            )
            for result in ("resolved", "expired", "rejected"):
                answered.add_metric([result], getattr(counts, result))
            yield answered
        engine = self.sources.engine()
        if engine is not None:
            checkedout = getattr(engine.sync_engine.pool, "checkedout", None)
            if callable(checkedout):
                yield GaugeMetricFamily(
                    "skillhive_db_pool_connections_in_use",
                    "Database connections of this process checked out of its pool.",
                    value=checkedout(),
                )


def exposition_registry(sources: ProcessSources) -> CollectorRegistry:
    """What one scrape of this process shows: the shared metrics and its own gauges."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_ProcessCollector(sources))
    return registry


def render(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)
