"""Import benchmark: `python -m bench.lifecycle` (real HTTP on loopback, SQLite).

A ~5 MiB git repository served over smart HTTP and imported with
`POST .../skills/import`, against the same files as a ZIP uploaded with `POST .../skills`.
Each job writes a new skill (a fresh namespace each time), so both do the full work. Each pair
is timed back to back (bench/_util.compare). Target: import_ratio <= 2.0.

The repository is served by `git http-backend` (C git, as real hosts serve) when git is
installed, else by dulwich's pure-Python WSGI app, whose pack building then dominates (the line
says which).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import random
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import httpx

from backend.app import create_app
from backend.auth import service as auth_service
from backend.config import Settings
from backend.db.migrate import upgrade
from bench._util import compare
from tests.support import zips
from tests.support.live import live_server
from tests.support.sources import SourceServer, git_repo

MiB = 1024 * 1024
NAME = "bench-skill"


def repository_files() -> dict[str, str | bytes]:
    """SKILL.md, 20 text references and 20 binary assets: ~5 MiB, half of it compressible."""
    rng = random.Random(7)
    words = ["skill", "agent", "import", "version", "package", "git", "folder", "bench"]
    files: dict[str, str | bytes] = {
        f"{NAME}/SKILL.md": zips.skill_md(NAME, "Benchmark skill imported from git.")
    }
    for i in range(20):
        text = " ".join(rng.choice(words) for _ in range(128 * 1024 // 6))
        files[f"{NAME}/references/doc{i:02d}.md"] = text[: 128 * 1024]
        files[f"{NAME}/assets/blob{i:02d}.bin"] = rng.randbytes(128 * 1024)
    return files


def git_http_backend(project_root: Path) -> Any:
    """A WSGI app running `git http-backend` (CGI) per request, smart HTTP only."""

    def app(environ: dict[str, Any], start: Any) -> list[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        env = {
            "GIT_PROJECT_ROOT": str(project_root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": environ["PATH_INFO"].removeprefix("/git"),
            "QUERY_STRING": environ.get("QUERY_STRING", ""),
            "REQUEST_METHOD": environ["REQUEST_METHOD"],
            "CONTENT_TYPE": environ.get("CONTENT_TYPE", ""),
            "CONTENT_LENGTH": str(len(body)),
            "GIT_PROTOCOL": environ.get("HTTP_GIT_PROTOCOL", ""),
            "PATH": os.environ.get("PATH", ""),
        }
        out = subprocess.run(
            ["git", "http-backend"], input=body, env=env, capture_output=True, check=True
        ).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        status, headers = "200 OK", []
        for line in head.decode().split("\r\n"):
            key, _, value = line.partition(": ")
            if key.lower() == "status":
                status = value
            else:
                headers.append((key, value))
        start(status, headers)
        return [payload]

    return app


def packed_git_backend(root: Path) -> Any:
    """`root/bench.git`: a bare, packed copy of `root/repo` (as hosts keep repositories; git
    builds a pack from loose objects ~20x slower), served by `git http-backend`."""
    bare = str(root / "bench.git")
    subprocess.run(["git", "clone", "-q", "--bare", str(root / "repo"), bare], check=True)
    subprocess.run(["git", "-C", bare, "repack", "-adq"], check=True)
    return git_http_backend(root)


async def run(pairs: int) -> float:
    with tempfile.TemporaryDirectory() as tmp, SourceServer() as source:
        root = Path(tmp)
        files = repository_files()
        git_repo(root / "repo", files)
        source.repos["bench"] = root / "repo"
        server_kind = "dulwich (pure Python)"
        if shutil.which("git"):
            source.git_app = packed_git_backend(root)
            server_kind = "git http-backend, packed repository"
        print(f"git server: {server_kind}")
        archive = zips.build(files)
        size = sum(len(v) for v in files.values())
        print(f"repository: {len(files)} files, {size / MiB:.2f} MiB; ZIP {len(archive) / MiB:.2f}")
        database = root / "bench.db"
        upgrade(f"sqlite:///{database}")
        settings = Settings(
            database_url=f"sqlite+aiosqlite:///{database}",
            data_dir=root / "data",
            egress_allow=["127.0.0.1"],
        )
        app = create_app(settings)
        with live_server(app) as base:
            async with app.state.sessionmaker() as session:
                user = await auth_service.create_user(session, "bench")
                token = (await auth_service.issue_token(session, user, "bench")).secret
                await session.commit()
            headers = {"Authorization": f"Bearer {token}"}
            namespaces = (f"n{i}" for i in itertools.count())
            url = source.url("/git/bench.git")
            async with httpx.AsyncClient(base_url=base, headers=headers, timeout=120) as client:

                async def import_git() -> None:
                    response = await client.post(
                        f"/api/v1/namespaces/{next(namespaces)}/skills/import", json={"url": url}
                    )
                    assert response.status_code == 200, response.text
                    assert response.json()["items"][0]["result"] == "created", response.text

                async def upload() -> None:
                    response = await client.post(
                        f"/api/v1/namespaces/{next(namespaces)}/skills",
                        files={"file": ("p.zip", archive, "application/zip")},
                    )
                    assert response.status_code == 201, response.text

                result = await compare(import_git, upload, pairs=pairs, warmup=2)
    print(f"import from git over loopback: {result.candidate_ms:.1f} ms (median)")
    print(f"upload of the same files as a ZIP: {result.baseline_ms:.1f} ms (median)")
    print(f"import_ratio: {result.median_ratio:.2f} (target <= 2.0)")
    return result.median_ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=10)
    args = parser.parse_args()
    ratio = asyncio.run(run(args.pairs))
    print(f"RESULT lifecycle import_ratio={ratio:.2f}")


if __name__ == "__main__":
    main()
