"""Skill API benchmark: `python -m bench.skills_api` (real HTTP on loopback, real PostgreSQL).

(a) uploading a 10 MiB package end to end (archive verification on, as always) vs the floor of
    `zipfile` scanning, SHA-256 and one raw `INSERT` of the same bytes into the same PostgreSQL
    (target <= 1.5);
(b) listing a page of 500 skills out of 5,000 vs a bare FastAPI endpoint returning the same JSON
    from memory.
Each pair is timed back to back (bench/_util.compare). list_ratio target <= 2.0.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import io
import os
import zipfile
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import insert, text

from backend.app import create_app
from backend.auth import service as auth_service
from backend.config import Settings
from backend.db.models import Kind
from backend.db.types import utcnow
from backend.skills.folder import zip_folder
from backend.skills.package import read_package
from bench._util import compare
from tests.support import corpus, services
from tests.support.live import live_server

MiB = 1024 * 1024
TARGET_ARCHIVE = 10 * MiB - 64 * 1024  # just under the default cap


def big_package(name: str, blob: bytes) -> bytes:
    """A ~10 MiB skill: SKILL.md plus incompressible assets (stored, as real media would be)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(
            f"{name}/SKILL.md",
            f"---\nname: {name}\ndescription: Benchmark package {name}.\n---\n# {name}\n",
            compress_type=zipfile.ZIP_DEFLATED,
        )
        chunk = len(blob) // 8
        for i in range(8):
            zf.writestr(f"{name}/assets/part{i}.bin", blob[i * chunk : (i + 1) * chunk])
    return buf.getvalue()


def scan_and_hash(data: bytes) -> str:
    """What any upload must at least do: read the central directory, SKILL.md, hash the bytes."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        infos = zf.infolist()
        skill_md = next(i for i in infos if i.filename.endswith("SKILL.md"))
        zf.read(skill_md)
    return hashlib.sha256(data).hexdigest()


async def seed_skills(app: FastAPI, user_id: int, count: int) -> None:
    """`count` realistic Skill rows (CRDs of the corpus skills under new names), bulk-inserted."""
    source, fallback = corpus.bench_folder("anthropics-skills")
    templates = [
        read_package(zip_folder(manifest.parent)).to_crd(namespace="bench").model_dump(mode="json")
        for manifest in sorted(source.glob("*/SKILL.md"))
    ]
    print(corpus.describe(source, len(templates), fallback=fallback))
    now = utcnow()
    rows = []
    for i in range(count):
        crd = {**templates[i % len(templates)]}
        name = f"skill-{i:05d}"
        crd["metadata"] = {
            **crd["metadata"],
            "name": name,
            "resourceVersion": 1,
            "creationTimestamp": now.isoformat(),
        }
        rows.append(
            {
                "user_id": user_id,
                "kind": "Skill",
                "namespace": "bench",
                "name": name,
                "json": crd,
                "is_active": True,
                "resource_version": 1,
                "created_at": now,
                "updated_at": now,
            }
        )
    async with app.state.sessionmaker() as session:
        for start in range(0, count, 500):
            # listing reads `kinds` only: the packages (versions, blobs) are not needed
            await session.execute(insert(Kind), rows[start : start + 500])
        await session.commit()


async def run(pairs: int) -> tuple[float, float]:
    admin_url, handle = services.start_postgres()
    services.prepare_postgres_template(admin_url)
    try:
        with services.postgres_database(admin_url) as url:
            settings = Settings(database_url=url, data_dir=Path(os.environ.get("TMPDIR", "/tmp")))
            app = create_app(settings)
            with live_server(app) as base:
                async with app.state.sessionmaker() as session:
                    user = await auth_service.create_user(session, "bench")
                    token = (await auth_service.issue_token(session, user, "bench")).secret
                    await session.commit()
                headers = {"Authorization": f"Bearer {token}"}
                async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as client:
                    upload_ratio = await bench_upload(app, client, pairs)
                    list_ratio = await bench_list(app, client, user.id, pairs)
    finally:
        if handle is not None:
            handle.cleanup()
    return upload_ratio, list_ratio


async def bench_upload(app: FastAPI, client: httpx.AsyncClient, pairs: int) -> float:
    blob = os.urandom(TARGET_ARCHIVE - 4096)
    warmup = 3
    packages = iter([big_package(f"big-{i}", blob) for i in range(pairs + warmup)])
    # distinct bytes for the floor too: skill_blobs is keyed by the digest
    floor_packages = iter([big_package(f"floor-{i}", blob) for i in range(pairs + warmup)])
    sample = big_package("sample", blob)
    print(f"upload: package {len(sample) / MiB:.2f} MiB, {pairs} pairs")

    async def upload() -> None:
        response = await client.post(
            "/api/v1/namespaces/bench/skills",
            files={"file": ("p.zip", next(packages), "application/zip")},
        )
        assert response.status_code == 201, response.text

    async def floor() -> None:
        data = next(floor_packages)
        digest = scan_and_hash(data)
        async with app.state.engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO skill_blobs (sha256, data, size, created_at)"
                    " VALUES (:sha256, :data, :size, now())"
                ),
                {"sha256": digest, "data": data, "size": len(data)},
            )

    result = await compare(upload, floor, pairs=pairs, warmup=warmup)
    print(f"upload end to end: {result.candidate_ms:.1f} ms (median)")
    print(f"zipfile scan + sha256 + raw INSERT floor: {result.baseline_ms:.1f} ms (median)")
    print(f"upload_ratio: {result.median_ratio:.2f} (target <= 1.5)")
    return result.median_ratio


async def bench_list(app: FastAPI, client: httpx.AsyncClient, user_id: int, pairs: int) -> float:
    await seed_skills(app, user_id, 5000)
    path = "/api/v1/namespaces/bench/skills?limit=500&continue="
    first = (await client.get("/api/v1/namespaces/bench/skills?limit=500")).json()
    token = first["continue"]
    page = (await client.get(path + token)).json()
    assert len(page["items"]) == 500
    print(f"list: page of 500 of 5,000, {len(str(page)) / MiB:.2f} MiB of JSON, {pairs} pairs")

    bare = FastAPI()

    @bare.get("/skills")
    async def from_memory() -> dict[str, Any]:
        return page

    with live_server(bare) as bare_base:
        async with httpx.AsyncClient(base_url=bare_base, timeout=60) as bare_client:

            async def listing() -> None:
                response = await client.get(path + token)
                assert response.status_code == 200

            async def memory() -> None:
                response = await bare_client.get("/skills")
                assert response.status_code == 200

            result = await compare(listing, memory, pairs=pairs, warmup=5)
    print(f"list from PostgreSQL: {result.candidate_ms:.1f} ms (median)")
    print(f"bare FastAPI from memory: {result.baseline_ms:.1f} ms (median)")
    print(f"list_ratio: {result.median_ratio:.2f} (target <= 2.0)")
    return result.median_ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=30)
    args = parser.parse_args()
    upload_ratio, list_ratio = asyncio.run(run(args.pairs))
    print(f"RESULT skills_api upload_ratio={upload_ratio:.2f} list_ratio={list_ratio:.2f}")


if __name__ == "__main__":
    main()
