"""A bench gateway (instant model) with traces recorded in memory when BENCH_TRACING=1.

python -m bench._observed_gateway PORT   (settings from SKILLHIVE_* variables; SKILLHIVE_METRICS
turns Prometheus recording on or off)
"""

from __future__ import annotations

import os
import sys

import uvicorn
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from backend.app import create_served_app
from bench._gateway import instant_model


class BoundedMemoryExporter(InMemorySpanExporter):
    """Keeps spans in memory like the SDK's, dropping old ones so a long run stays small."""

    def export(self, spans):  # type: ignore[no-untyped-def]
        result = super().export(spans)
        if len(self.get_finished_spans()) > 10_000:
            self.clear()
        return result


def main() -> None:
    port = int(sys.argv[1])
    if os.environ.get("BENCH_TRACING") == "1":
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(BoundedMemoryExporter()))
        trace.set_tracer_provider(provider)
    app = create_served_app(chat_model=instant_model())
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
