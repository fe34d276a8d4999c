"""Hold the API to its own OpenAPI document: every response a test sees must be documented.

`Contract.check` validates one response (status, content type, body schema) against
`app.openapi()` with openapi-core, and records which (method, route, status) it saw. The `client`
fixture runs it on every response, so the whole suite keeps `/openapi.json` true; the contract
test also checks the other way round (every documented status is really answered).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import json
import pickle
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import fastapi.applications
import httpx
from fastapi import FastAPI, routing
from openapi_core import Config, OpenAPI
from openapi_core.testing import MockRequest, MockResponse

from tests.support import installs

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
# What a route's effective context takes from the router it is included from (FastAPI's
# `_EffectiveRouteContext.from_api_route`), besides the inclusion's own fields.
_INCLUDED_ROUTER_FIELDS = (
    "default_response_class",
    "generate_unique_id_function",
    "strict_content_type",
)
# Inclusion fields that cannot change the document: the app itself (its dependency overrides
# apply when a request is served) and the included router (keyed by its fields and routes).
_INCLUSION_IGNORED = frozenset({"dependency_overrides_provider", "included_router"})


def inclusion_key(include: Any) -> str:
    """What of an inclusion (a router included with a prefix, dependencies, ...) a route's
    documentation and its effective route (tests/support/routes.py) derive from."""
    own = [
        (f.name, getattr(include, f.name))
        for f in dataclasses.fields(include)
        if f.name not in _INCLUSION_IGNORED
    ]
    router = [getattr(include.included_router, name) for name in _INCLUDED_ROUTER_FIELDS]
    return repr((own, router))


def _routes_key(
    routes: Sequence[Any], inclusions: tuple[str, ...] = (), in_schema: bool = True
) -> tuple[Any, ...]:
    """Everything of `routes` the generated document depends on: each documented API route as
    written, with the chain of inclusions FastAPI derives its effective route from. Read from
    the routes as declared, not from the effective routes, which FastAPI builds (dependencies,
    response fields) for each app anew: as long as the rest of a test's work. Endpoints are
    compared as objects (the same function, not one of the same name); the rest by `repr`."""
    key: list[Any] = []
    for route in routes:
        if isinstance(route, routing._IncludedRouter):
            include = route.include_context
            key += _routes_key(
                route.original_router.routes,
                (*inclusions, inclusion_key(include)),
                in_schema and include.include_in_schema,
            )
        elif isinstance(route, routing.APIRoute) and in_schema and route.include_in_schema:
            # (else not documented: the docs pages; the web console's files, new closures
            # for each app)
            values = [getattr(route, name) for name in _ROUTE_FIELDS]
            key.append((values[2], repr((inclusions, values[:2], values[3:]))))
    return tuple(key)


@contextmanager
def documents_reused() -> Iterator[None]:
    """Every test builds its own app, and FastAPI generates each app's `/openapi.json` anew
    (1-3 s on a busy test machine, as long as many a test itself). An app whose routes and
    metadata are those of an app already documented gets a copy of that document, exactly
    what FastAPI would generate again; the app's own post-processing (`backend/api/errors.py`)
    still runs on it. (Kept pickled: unpickling copies it several times faster than `deepcopy`.)"""
    generate: Callable[..., dict[str, Any]] = fastapi.applications.get_openapi
    documents: dict[tuple[Any, ...], bytes] = {}

    def reused(*, routes: Sequence[Any], webhooks: Sequence[Any] | None = None, **kw: Any) -> Any:
        key = (_routes_key(routes), _routes_key(webhooks or []), repr(sorted(kw.items())))
        if key not in documents:
            document = generate(routes=routes, webhooks=webhooks, **kw)
            documents[key] = pickle.dumps(document, protocol=pickle.HIGHEST_PROTOCOL)
        return pickle.loads(documents[key])

    fastapi.applications.get_openapi = reused  # type: ignore[assignment]
    try:
        yield
    finally:
        fastapi.applications.get_openapi = generate  # type: ignore[assignment]


def load_spec(document: dict[str, Any]) -> OpenAPI:
    key = json.dumps(document, sort_keys=True)
    if key not in _SPECS:
        _SPECS[key] = _checked_spec(document, key)
    return _SPECS[key]


def _checked_spec(document: dict[str, Any], key: str) -> OpenAPI:
    """openapi-core checks a document against the OpenAPI schema when it loads it: ~10 s for
    ours, in each test process. The verdict depends only on the document and the validator, so
    a document that passed is remembered under `.cache/` by its hash and those versions; the
    other processes (the parallel workers, the next run) load it unchecked. An invalid
    document raises here, as before, and is never remembered."""
    versions = [importlib.metadata.version(p) for p in ("openapi-core", "openapi-spec-validator")]
    digest = hashlib.sha256(json.dumps([key, versions]).encode()).hexdigest()
    passed = installs.CACHE / "openapi-checked" / digest
    with installs.locked("openapi-checked"):  # one process checks, the others wait for it
        if passed.is_file():
            return OpenAPI.from_dict(document, config=Config(spec_validator_cls=None))
        spec = OpenAPI.from_dict(document)
        passed.parent.mkdir(exist_ok=True)
        passed.touch()
        return spec


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
