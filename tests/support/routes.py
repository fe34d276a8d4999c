"""Every test builds its own app, and FastAPI prepares each app's routes anew: when an app first
routes a request (or a test lists its routes), it builds for every API route it includes an
effective route (dependencies, body and response fields, the request handler), 0.3 s of CPU for
the API's ~90 routes, more than many a test itself takes.

`effective_routes_reused()` prepares each route of the API and chat routers, which are built
once per process (`backend/app.py`), once per process for each way it is included: a later app
including it the same way gets that preparation, exactly what FastAPI would build again. Routes
made per app (the web console's, closures over its settings) are prepared for each app as
before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from fastapi import APIRouter, routing

from backend.app import _api_router, _chat_router
from tests.support.openapi import inclusion_key


def _route_ids(router: APIRouter) -> set[int]:
    """The ids of the API routes of `router` and of the routers it includes."""
    ids: set[int] = set()
    for route in router.routes:
        if isinstance(route, routing._IncludedRouter):
            ids |= _route_ids(route.original_router)
        elif isinstance(route, routing.APIRoute):
            ids.add(id(route))
    return ids


@contextmanager
def effective_routes_reused() -> Iterator[None]:
    context_class: Any = routing._EffectiveRouteContext
    original = context_class.__dict__["from_api_route"]  # the classmethod itself
    build: Callable[..., Any] = context_class.from_api_route
    # The same route objects in every app of the process.
    shared = _route_ids(_api_router()) | _route_ids(_chat_router())
    prepared: dict[tuple[int, str], Any] = {}

    def reused(*, original_route: routing.APIRoute, include_context: Any) -> Any:
        # An app overriding dependencies gets its own: the prepared request handler looks
        # overrides up on the app it was prepared for (no test overrides any).
        provider = include_context.dependency_overrides_provider
        if id(original_route) not in shared or getattr(provider, "dependency_overrides", None):
            return build(original_route=original_route, include_context=include_context)
        key = (id(original_route), inclusion_key(include_context))
        if key not in prepared:
            prepared[key] = build(original_route=original_route, include_context=include_context)
        return prepared[key]

    context_class.from_api_route = reused
    try:
        yield
    finally:
        context_class.from_api_route = original
