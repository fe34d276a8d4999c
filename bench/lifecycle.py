"""Import benchmark: `python -m bench.lifecycle` (real HTTP on loopback, SQLite).

A ~5 MiB git repository served over smart HTTP and imported with
`POST .../skills/import`, against the same files as a ZIP uploaded with `POST .../skills`.
Each job writes a new skill (a fresh namespace each time), so both do the full work. Each pair
is timed back to back (bench/_util.compare). Target: import_ratio <= 2.0.

The repository is served by C git's `upload-pack --stateless-rpc` (as hosts serve: GitLab's
Gitaly runs it per request, with no `git http-backend` CGI wrapper in between) in a process of
its own when git is installed (bench/_git_http.py), else by dulwich's pure-Python WSGI app in
this process, whose pack building then dominates (the line says which). Either way the
server's work is inside the timed import: an import waits for its host.

The host's repository is packed as hosts keep theirs, with a reachability bitmap (GitHub and
GitLab keep bitmaps), with git's default delta search. The 20 text files are distinct documents,
words drawn from a vocabulary of 2,048, so git stores them whole as it would real references;
texts drawn from a handful of words would instead delta against each other into something twice
their own compressed size (delta resolution is tested in
tests/backend/skills/importing/test_git_pack.py).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import shutil
import string
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

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
    """SKILL.md, 20 text references and 20 binary assets: ~5 MiB, the text compressible to
    about 40 %, the assets not at all."""
    rng = random.Random(7)
    words = [
        "".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 10))) for _ in range(2048)
    ]
    files: dict[str, str | bytes] = {
        f"{NAME}/SKILL.md": zips.skill_md(NAME, "Benchmark skill imported from git.")
    }
    for i in range(20):
        text = " ".join(rng.choice(words) for _ in range(128 * 1024 // 5))
        files[f"{NAME}/references/doc{i:02d}.md"] = text[: 128 * 1024]
        files[f"{NAME}/assets/blob{i:02d}.bin"] = rng.randbytes(128 * 1024)
    return files


@contextmanager
def git_host(root: Path) -> Iterator[str]:
    """`root/bench.git`, a bare, packed copy of `root/repo` with a reachability bitmap (as hosts
    keep repositories; git builds a pack from loose objects ~20x slower), served by git in a
    process of its own (bench/_git_http.py); yields the repository's URL."""
    bare = str(root / "bench.git")
    subprocess.run(["git", "clone", "-q", "--bare", str(root / "repo"), bare], check=True)
    subprocess.run(["git", "-C", bare, "repack", "-adbq"], check=True)
    server = subprocess.Popen(
        [sys.executable, "-m", "bench._git_http", str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        port = int(server.stdout.readline())
        yield f"http://127.0.0.1:{port}/bench.git"
    finally:
        server.stdin.close()
        server.wait(timeout=20)


async def run(pairs: int) -> float:
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        root = Path(tmp)
        files = repository_files()
        git_repo(root / "repo", files)
        if shutil.which("git"):
            url = stack.enter_context(git_host(root))
            server_kind = "git upload-pack (own process), packed repository with a bitmap"
        else:
            source = stack.enter_context(SourceServer())
            source.repos["bench"] = root / "repo"
            url = source.url("/git/bench.git")
            server_kind = "dulwich (pure Python, in process)"
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
