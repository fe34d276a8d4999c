"""OpenTelemetry traces: one trace per turn, from the request through the worker.

Off by default: the API's tracer is a no-op until `configure` installs an SDK provider
(`SKILLHIVE_TRACING`, or the standard `OTEL_EXPORTER_OTLP_ENDPOINT`). The turn's context
crosses the Redis Stream inside its entry as W3C `traceparent` (`inject`/`extract`), so the
worker's spans join the gateway's trace. chat_shell adds model, tool, MCP, sandbox and browser
spans under whatever span is current (chat_shell/observe.py). HTTP server spans come from
FastAPI's own telemetry, which follows the installed provider.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from backend.config import Settings

log = logging.getLogger("skillhive.tracing")

tracer = trace.get_tracer("skillhive")

TRACE_FIELDS = ("traceparent", "tracestate")  # what a stream entry may carry


def enabled(settings: Settings) -> bool:
    return settings.tracing or bool(os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"))


def _otlp_exporter() -> SpanExporter | None:
    try:  # the `otlp` extra
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[import-not-found]
            OTLPSpanExporter,
        )
    except ImportError:
        log.warning("tracing is on but no OTLP exporter is installed: pip install skillhive[otlp]")
        return None
    exporter: SpanExporter = OTLPSpanExporter()  # reads OTEL_EXPORTER_OTLP_* itself
    return exporter


def configure(settings: Settings, service: str) -> None:
    """Install the process's tracer provider when tracing is on (once per process)."""
    if not enabled(settings) or isinstance(trace.get_tracer_provider(), TracerProvider):
        return
    exporter = _otlp_exporter()
    if exporter is None:
        return
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)


def inject() -> dict[str, str]:
    """The current context as W3C trace headers (empty when nothing is traced)."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier


def extract(carrier: Mapping[str, str]) -> Context:
    return propagate.extract(dict(carrier))
