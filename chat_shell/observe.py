"""What chat_shell reports about its own work to whoever hosts it (metrics; the host decides).

chat_shell never imports its host: the host installs an `Observer` once per process
(`set_observer`); until then every report is a no-op. Label values passed here are from fixed
sets (`ghost`/`skill`, a sandbox limit's name), never a tenant's names: hosts put them in
metrics labels as they are. Traces use the OpenTelemetry API directly (`tracer`), which is a
no-op until the host configures an SDK.
"""

from __future__ import annotations

from typing import Literal, Protocol

from opentelemetry import trace

McpScope = Literal["ghost", "skill"]

tracer = trace.get_tracer("chat_shell")


class Observer(Protocol):
    def mcp_call(self, scope: McpScope, *, error: bool) -> None: ...

    def sandbox_run(self, limits_hit: tuple[str, ...]) -> None: ...


class _Nothing:
    def mcp_call(self, scope: McpScope, *, error: bool) -> None:
        return None

    def sandbox_run(self, limits_hit: tuple[str, ...]) -> None:
        return None


_observer: Observer = _Nothing()


def set_observer(observer: Observer | None) -> None:
    """Install the process's observer (None: back to no reports)."""
    global _observer
    _observer = observer if observer is not None else _Nothing()


def observer() -> Observer:
    return _observer
