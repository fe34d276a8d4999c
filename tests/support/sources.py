"""Skill sources on loopback for import tests: files, redirects, git over smart and dumb HTTP.

with SourceServer() as server:
    server.files["/a.zip"] = data                 # GET /a.zip
    server.headers["/a.zip"] = {"X-A": "1"}       # further answer headers for it
    server.redirects["/r"] = "http://127.0.0.2/"  # GET /r -> 302
    server.repos["skills"] = repo_dir             # /git/skills.git (smart), /dumb/skills.git
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

from dulwich import porcelain
from dulwich.repo import Repo
from dulwich.server import DictBackend
from dulwich.web import make_wsgi_chain

from tests.support import zips
from tests.support.wsgi import LoopbackWsgi

AUTHOR = b"Test <test@example.com>"


class SourceServer(LoopbackWsgi):
    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.redirects: dict[str, str] = {}
        self.headers: dict[str, dict[str, str]] = {}
        self.request_headers: list[dict[str, str]] = []  # each request's HTTP_* environ
        self.repos: dict[str, Path] = {}
        self.held = threading.Event()  # GET /held answers once this is set
        self.requests: list[str] = []
        self.git_app: Any = None  # serves /git/ instead of dulwich's smart-HTTP app when set
        super().__init__()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def reached(self, path: str, *, timeout_s: float = 30.0) -> None:
        """Return once a request for `path` arrived (e.g. an import now waiting on `/held`)."""
        for _ in range(int(timeout_s / 0.01)):
            if path in self.requests:
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"no request for {path} within {timeout_s} s")

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.held.set()  # a held request ends, so the server can shut down
        super().__exit__(kind, exc, tb)

    def _app(self, environ: dict[str, Any], start: Any) -> Iterable[bytes]:
        path = environ["PATH_INFO"]
        self.requests.append(path)
        self.request_headers.append({k: v for k, v in environ.items() if k.startswith("HTTP_")})
        if self.git_app is not None and path.startswith("/git/"):
            return self.git_app(environ, start)  # type: ignore[no-any-return]
        for prefix, dumb in (("/git", False), ("/dumb", True)):
            if path.startswith(prefix + "/"):
                backend = DictBackend(
                    {f"/{name}.git": Repo(str(d)) for name, d in self.repos.items()}
                )
                environ = {**environ, "PATH_INFO": path.removeprefix(prefix)}
                return make_wsgi_chain(backend, dumb=dumb)(environ, start)  # type: ignore[no-any-return]
        if path in self.redirects:
            start("302 Found", [("Location", self.redirects[path]), ("Content-Length", "0")])
            return [b""]
        if path == "/held":
            self.held.wait(timeout=30)
            start("200 OK", [("Content-Length", "0")])
            return [b""]
        if path in self.files:
            body = self.files[path]
            start(
                "200 OK",
                [
                    ("Content-Type", "application/octet-stream"),
                    ("Content-Length", str(len(body))),
                    *self.headers.get(path, {}).items(),
                ],
            )
            return [body]
        start("404 Not Found", [("Content-Length", "0")])
        return [b""]


def git_repo(root: Path, files: dict[str, str | bytes]) -> Repo:
    """A repository at `root` whose first commit holds `files`."""
    root.mkdir(parents=True, exist_ok=True)
    repo = porcelain.init(str(root))
    commit_files(repo, files, "first")
    return repo


def commit_files(
    repo: Repo,
    files: dict[str, str | bytes],
    message: str,
    *,
    symlinks: dict[str, str] | None = None,
) -> str:
    """Write `files` (and `symlinks`) into the work tree, commit them; the new commit id."""
    root = Path(repo.path)
    for name, content in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else content)
    for name, link in (symlinks or {}).items():
        os.symlink(link, root / name)
    porcelain.add(repo, paths=[str(root / n) for n in [*files, *(symlinks or {})]])
    sha = porcelain.commit(repo, message=message.encode(), author=AUTHOR, committer=AUTHOR)
    return sha.decode()


def skill_files(*names: str, prefix: str = "skills/") -> dict[str, str | bytes]:
    """A SKILL.md per name, each in `prefix + name/`, with a script beside it."""
    out: dict[str, str | bytes] = {}
    for name in names:
        out[f"{prefix}{name}/SKILL.md"] = zips.skill_md(name, f"The {name} skill.")
        out[f"{prefix}{name}/scripts/run.sh"] = "echo hi\n"
    return out
