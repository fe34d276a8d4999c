"""Hold the API to its own OpenAPI document: every response a test sees must be documented.

`Contract.check` validates one response (status, content type, body schema) against
`app.openapi()` with openapi-core, and records which (method, route, status) it saw. The `client`
fixture runs it on every response, so the whole suite keeps `/openapi.json` true; the contract
test also checks the other way round (every documented status is really answered).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import fastapi.applications
import httpx
from fastapi import FastAPI, routing
from openapi_core import OpenAPI
from openapi_core.testing import MockRequest, MockResponse

# Validating the document itself is slow; every app of the suite has the same one.
_SPECS: dict[str, OpenAPI] = {}

STREAMED = "text/event-stream"  # checked by status and content type; the body is left unread


def _patterns(app: FastAPI, document: dict[str, Any]) -> dict[str, re.Pattern[str]]:
    """Documented path template -> the app's own regex for it, path convertors included (a
    `{path:path}` spans slashes, a `{name:skill}` may hold a plugin's `<plugin>/<skill>`)."""
    routes = {
        c.path_format: c.path_regex
        for c in routing.iter_route_contexts(app.routes)
        if isinstance(c.original_route, routing.APIRoute)
    }
    assert set(document["paths"]) <= set(routes), set(document["paths"]) - set(routes)
    return {template: routes[template] for template in document["paths"]}


# What `fastapi.openapi.utils.get_openapi` reads of one API route (the rest derives from these).
_ROUTE_FIELDS = (
    "path_format", "methods", "endpoint", "include_in_schema", "name", "operation_id",
    "summary", "description", "response_description", "deprecated", "tags", "status_code",
    "response_model", "response_class", "responses", "openapi_extra", "callbacks",
    "dependencies", "stream_item_type", "generate_unique_id_function",
)  # fmt: skip


def _routes_key(routes: Sequence[Any]) -> tuple[Any, ...]:
    """Everything of `routes` the generated document depends on. Endpoints are compared as
    objects (the same function, not one of the same name); the rest by `repr`."""
    key = []
    for context in routing.iter_route_contexts(routes):
        if not isinstance(context.original_route, routing.APIRoute):
            continue  # not documented (the docs pages)
        if not context.include_in_schema:
            continue  # not documented (the web console's files: new closures for each app)
        values = [getattr(context, name) for name in _ROUTE_FIELDS]
        key.append((values[2], repr([v for i, v in enumerate(values) if i != 2])))
    return tuple(key)


@contextmanager
def documents_reused() -> Iterator[None]:
    """Every test builds its own app, and FastAPI generates each app's `/openapi.json` anew
    (1-3 s on a busy test machine, as long as many a test itself). An app whose routes and
    metadata are those of an app already documented gets a deep copy of that document, exactly
    what FastAPI would generate again; the app's own post-processing (`backend/api/errors.py`)
    still runs on it."""
    generate: Callable[..., dict[str, Any]] = fastapi.applications.get_openapi
    documents: dict[tuple[Any, ...], dict[str, Any]] = {}

    def reused(*, routes: Sequence[Any], webhooks: Sequence[Any] | None = None, **kw: Any) -> Any:
        key = (_routes_key(routes), _routes_key(webhooks or []), repr(sorted(kw.items())))
        if key not in documents:
            documents[key] = generate(routes=routes, webhooks=webhooks, **kw)
        return copy.deepcopy(documents[key])

    fastapi.applications.get_openapi = reused  # type: ignore[assignment]
    try:
        yield
    finally:
        fastapi.applications.get_openapi = generate  # type: ignore[assignment]


def load_spec(document: dict[str, Any]) -> OpenAPI:
    key = json.dumps(document, sort_keys=True)
    if key not in _SPECS:
        _SPECS[key] = OpenAPI.from_dict(document)
    return _SPECS[key]


@dataclass
class Contract:
    app: FastAPI
    seen: set[tuple[str, str, int]] = field(default_factory=set)  # (METHOD, route, status)

    # An app's document does not change once served: read, keyed and compiled once per app.
    @cached_property
    def document(self) -> dict[str, Any]:
        return self.app.openapi()

    @cached_property
    def spec(self) -> OpenAPI:
        return load_spec(self.document)

    @cached_property
    def _patterns(self) -> dict[str, re.Pattern[str]]:
        return _patterns(self.app, self.document)

    def route(self, method: str, path: str) -> tuple[str, dict[str, Any]] | None:
        """The documented route template a request matches, and its path parameters."""
        for template, pattern in self._patterns.items():
            match = pattern.match(path)
            if match and method.lower() in self.document["paths"][template]:
                return template, match.groupdict()
        return None  # not an API route: the router's own 404/405, the docs, Socket.IO

    def check(self, request: httpx.Request, response: httpx.Response, body: bytes) -> None:
        found = self.route(request.method, request.url.path)
        if found is None:
            return
        template, params = found
        self.seen.add((request.method, template, response.status_code))
        content_type = response.headers.get("content-type", "")
        if content_type.startswith(STREAMED):
            operation = self.document["paths"][template][request.method.lower()]
            declared = operation["responses"].get(str(response.status_code), {})
            assert STREAMED in declared.get("content", {}), (request.method, template, "SSE")
            return
        self.spec.validate_response(
            MockRequest(
                "http://testserver",
                request.method,
                request.url.path,
                path_pattern=template,
                view_args=params,
            ),
            MockResponse(
                body,
                status_code=response.status_code,
                headers=dict(response.headers),
                content_type=content_type,
            ),
        )

    async def hook(self, response: httpx.Response) -> None:
        """An httpx response hook: validate, so a test sees a wrong answer as an exception."""
        streamed = response.headers.get("content-type", "").startswith(STREAMED)
        body = b"" if streamed else await response.aread()
        self.check(response.request, response, body)

    def documented(self) -> set[tuple[str, str, int]]:
        """Every (METHOD, route, status) `/openapi.json` declares."""
        return {
            (method.upper(), path, int(status))
            for path, operations in self.document["paths"].items()
            for method, operation in operations.items()
            for status in operation["responses"]
        }
