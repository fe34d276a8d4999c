"""A small synchronous client of the REST API: auth header, error answers as `ApiError`,
transport failures as one `CliError` (exit code 5), pagination followed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from backend.client import config
from backend.client.errors import ApiError, CliError, ExitCode, unreachable

TIMEOUT = httpx.Timeout(120, connect=10)
NO_TOKEN = (
    "no API token: run `skillhive login` or set SKILLHIVE_TOKEN "
    "(`skillhive admin create-token USER` issues one)"
)


class Api:
    def __init__(self, cfg: config.ClientConfig, client: httpx.Client) -> None:
        self.config = cfg
        self.http = client

    def request(
        self, method: str, path: str, *, ok: tuple[int, ...] = (), **kwargs: Any
    ) -> httpx.Response:
        """The answer; an error status not in `ok` raises `ApiError`."""
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise unreachable(self.config.url, exc) from None
        if response.status_code >= 400 and response.status_code not in ok:
            raise ApiError(response)
        return response

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self.request(method, path, **kwargs).json()

    def items(self, path: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Every item of a paginated list (`{items, continue}`)."""
        found: list[dict[str, Any]] = []
        query = dict(params or {})
        while True:
            page = self.json("GET", path, params=query)
            found += page["items"]
            if not page.get("continue"):
                return found
            query["continue"] = page["continue"]


@contextmanager
def connect(*, need_token: bool = True, cfg: config.ClientConfig | None = None) -> Iterator[Api]:
    cfg = cfg or config.load()
    if need_token and not cfg.token:
        raise CliError(NO_TOKEN, ExitCode.AUTH)
    headers = {"Authorization": f"Bearer {cfg.token}"} if cfg.token else {}
    with httpx.Client(base_url=cfg.url, headers=headers, timeout=TIMEOUT) as client:
        yield Api(cfg, client)


def _collection(namespace: str, kind: str) -> str:
    """Namespace `public` is the public tree (everyone reads, admins write)."""
    if namespace == "public":
        return f"/api/v1/public/{kind}"
    return f"/api/v1/namespaces/{namespace}/{kind}"


def skills_path(namespace: str) -> str:
    return _collection(namespace, "skills")


def ghosts_path(namespace: str) -> str:
    return _collection(namespace, "ghosts")
