"""Hold the API to its own OpenAPI document: every response a test sees must be documented.

`Contract.check` validates one response (status, content type, body schema) against
`app.openapi()` with openapi-core, and records which (method, route, status) it saw. The `client`
fixture runs it on every response, so the whole suite keeps `/openapi.json` true; the contract
test also checks the other way round (every documented status is really answered).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import httpx
from fastapi import FastAPI
from openapi_core import OpenAPI
from openapi_core.testing import MockRequest, MockResponse

# Validating the document itself is slow; every app of the suite has the same one.
_SPECS: dict[str, OpenAPI] = {}

STREAMED = "text/event-stream"  # checked by status and content type; the body is left unread


def _patterns(document: dict[str, Any]) -> dict[str, re.Pattern[str]]:
    """Path template -> regex; a `{path}` parameter spans slashes (FastAPI's `{path:path}`)."""
    patterns = {}
    for template in document["paths"]:
        parts = re.split(r"\{(\w+)\}", template)
        regex = "".join(
            re.escape(part) if i % 2 == 0 else f"(?P<{part}>{'.+' if part == 'path' else '[^/]+'})"
            for i, part in enumerate(parts)
        )
        patterns[template] = re.compile(regex)
    return patterns


def load_spec(document: dict[str, Any]) -> OpenAPI:
    key = json.dumps(document, sort_keys=True)
    if key not in _SPECS:
        _SPECS[key] = OpenAPI.from_dict(document)
    return _SPECS[key]


@dataclass
class Contract:
    app: FastAPI
    seen: set[tuple[str, str, int]] = field(default_factory=set)  # (METHOD, route, status)

    @property
    def spec(self) -> OpenAPI:
        return load_spec(self.app.openapi())

    def route(self, method: str, path: str) -> tuple[str, dict[str, Any]] | None:
        """The documented route template a request matches, and its path parameters."""
        for template, pattern in _patterns(self.app.openapi()).items():
            match = pattern.fullmatch(path)
            if match and method.lower() in self.app.openapi()["paths"][template]:
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
            operation = self.app.openapi()["paths"][template][request.method.lower()]
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
            for path, operations in self.app.openapi()["paths"].items()
            for method, operation in operations.items()
            for status in operation["responses"]
        }
