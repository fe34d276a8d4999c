"""Request bodies: credentials checked before a byte is read, capped while streaming, 413s
that clients can read."""

from __future__ import annotations

import asyncio
import json
import socket
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from backend.app import create_app
from backend.config import Settings
from tests.support import zips
from tests.support.accounts import Account
from tests.support.errors import assert_error
from tests.support.live import live_server

JSON_CAP = 4096
ARCHIVE_CAP = 8192
MiB = 1024 * 1024


@pytest.fixture
def settings(settings: Settings, tmp_path: Path) -> Settings:
    # No built-in skills: they are bigger than this archive cap.
    (empty := tmp_path / "no-builtins").mkdir()
    return settings.model_copy(
        update={
            "max_json_body_bytes": JSON_CAP,
            "max_archive_bytes": ARCHIVE_CAP,
            "builtin_skills_dir": empty,
        }
    )


class Chunks:
    """A chunked request body (no Content-Length) that counts how much of it was read."""

    def __init__(self, total: int, chunk: int = 1024) -> None:
        self.total, self.chunk, self.read = total, chunk, 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while self.read < self.total:
            self.read += self.chunk
            yield b" " * self.chunk


BODY_ROUTES = [
    ("POST", "/api/v1/conversations"),
    ("POST", "/api/v1/tokens"),
    ("PUT", "/api/v1/secrets/key"),
    ("PATCH", "/api/v1/namespaces/dev/skills/demo"),
    ("POST", "/api/v1/namespaces/dev/skills"),
    ("PUT", "/api/v1/public/skills/demo"),
    ("POST", "/api/v1/namespaces/dev/ghosts"),
    ("POST", "/api/v1/apply"),
    ("POST", "/api/v1/conversations/some-id/messages"),
]


@pytest.mark.parametrize(("method", "path"), BODY_ROUTES)
@pytest.mark.parametrize(
    ("authorization", "code"),
    [(None, "missing_token"), ("Bearer shk_not-a-real-token", "invalid_token")],
)
async def test_a_body_without_valid_credentials_is_refused_before_it_is_read(
    client: httpx.AsyncClient, method: str, path: str, authorization: str | None, code: str
) -> None:
    body = Chunks(200 * MiB)
    headers = {"Content-Type": "application/json"}
    if authorization:
        headers["Authorization"] = authorization
    response = await client.request(method, path, content=body, headers=headers)
    assert_error(response, 401, code)
    assert body.read == 0


@pytest.mark.parametrize(
    ("method", "path"),
    [(m, p) for m, p in BODY_ROUTES if not p.endswith(("/skills", "/demo", "/apply"))],
)
async def test_json_routes_refuse_a_declared_body_over_the_cap_up_front(
    client: httpx.AsyncClient, alice: Account, method: str, path: str
) -> None:
    body = json.dumps({"content": "x" * JSON_CAP}).encode()
    response = await client.request(method, path, content=body, headers=alice.headers)
    assert_error(response, 413, "body_too_large")
    assert response.json()["error"]["details"] == {"limit_bytes": JSON_CAP}


async def test_a_chunked_json_body_is_refused_once_it_passes_the_cap(
    client: httpx.AsyncClient, alice: Account
) -> None:
    body = Chunks(200 * MiB)
    headers = {**alice.headers, "Content-Type": "application/json"}
    response = await client.post("/api/v1/conversations", content=body, headers=headers)
    assert_error(response, 413, "body_too_large")
    assert JSON_CAP < body.read <= JSON_CAP + 2 * body.chunk  # not a chunk more than needed


async def test_a_json_body_under_the_cap_reaches_the_route(
    client: httpx.AsyncClient, alice: Account
) -> None:
    response = await client.post(
        "/api/v1/conversations", json={"ghost": "dev/missing"}, headers=alice.headers
    )
    assert response.status_code == 404  # the route ran: no such Ghost


async def test_patching_a_skill_is_a_json_route_not_an_upload(
    client: httpx.AsyncClient, alice: Account
) -> None:
    body = json.dumps({"labels": {"a": "x" * JSON_CAP}}).encode()
    response = await client.patch(
        "/api/v1/namespaces/dev/skills/demo", content=body, headers=alice.headers
    )
    assert_error(response, 413, "body_too_large")


async def test_apply_keeps_its_own_larger_cap(client: httpx.AsyncClient, alice: Account) -> None:
    documents = [{"kind": "Ghost", "pad": "x" * 100} for _ in range(JSON_CAP // 50)]
    body = json.dumps(documents).encode()
    assert len(body) > JSON_CAP
    response = await client.post(
        "/api/v1/apply",
        content=body,
        headers={**alice.headers, "Content-Type": "application/json"},
    )
    assert response.status_code == 422  # read and judged by the route, not refused by size
    assert response.json()["error"]["code"] != "body_too_large"


async def test_an_upload_over_the_archive_cap_is_refused_before_reading(
    client: httpx.AsyncClient, alice: Account
) -> None:
    response = await client.post(
        "/api/v1/namespaces/dev/skills",
        content=bytes(2 * MiB),
        headers={**alice.headers, "Content-Type": "application/zip"},
    )
    assert_error(response, 413, "archive_too_large")
    assert response.json()["error"]["details"]["limit"] == ARCHIVE_CAP


def _post(url: str, data: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


async def test_urllib_reads_the_413_of_an_over_cap_body_on_a_real_server(
    settings: Settings, alice: Account
) -> None:
    # urllib writes the whole body before it reads: without the drain it sees a reset.
    big = bytes(16 * MiB)
    with live_server(create_app(settings)) as base:
        upload = await asyncio.to_thread(
            _post,
            f"{base}/api/v1/namespaces/dev/skills",
            big,
            {**alice.headers, "Content-Type": "application/zip"},
        )
        chat = await asyncio.to_thread(
            _post,
            f"{base}/api/v1/conversations",
            big,
            {**alice.headers, "Content-Type": "application/json"},
        )
        honest = await asyncio.to_thread(
            _post,
            f"{base}/api/v1/namespaces/dev/skills",
            zips.skill("tiny"),
            {**alice.headers, "Content-Type": "application/zip"},
        )
    assert (upload[0], upload[1]["error"]["code"]) == (413, "archive_too_large")
    assert (chat[0], chat[1]["error"]["code"]) == (413, "body_too_large")
    assert honest[0] == 201


async def test_a_real_server_answers_401_without_waiting_for_a_200_mb_body(
    settings: Settings,
) -> None:
    head = (
        b"POST /api/v1/namespaces/dev/skills HTTP/1.1\r\nHost: t\r\n"
        b"Content-Type: application/zip\r\nContent-Length: 209715200\r\n\r\n"
    )

    def exchange(base: str) -> bytes:
        host, port = base.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(head + bytes(1024))  # the headers and 1 KiB of the 200 MB
            answer = b""
            while b"\r\n\r\n" not in answer:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                answer += chunk
            return answer

    with live_server(create_app(settings)) as base:
        answer = await asyncio.to_thread(exchange, base)
    assert answer.startswith(b"HTTP/1.1 401 ")
