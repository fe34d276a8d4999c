"""Every archive rule, through the API: the code, the status, and nothing written."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from functools import cache
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from backend.config import Settings
from tests.support import zips
from tests.support.accounts import Account
from tests.support.errors import assert_error
from tests.support.lifespan import running
from tests.support.skills import upload, user_rows

bomb = cache(zips.bomb)
MiB = 1024 * 1024

CASES: dict[str, tuple[Callable[[], bytes], int, str, str | None]] = {
    # id: (archive, status, code, the entry the error must name)
    "not a zip": (lambda: b"PK\x03\x04 definitely not a zip", 422, "not_a_zip", None),
    "no SKILL.md": (lambda: zips.build({"demo/README.md": "hi"}), 422, "skill_md_missing", None),
    "two roots": (
        lambda: zips.build({"a/SKILL.md": zips.skill_md("a"), "b/SKILL.md": zips.skill_md("b")}),
        422,
        "ambiguous_root",
        None,
    ),
    "dot-dot entry": (lambda: zips.with_entry("../x"), 422, "unsafe_path", "../x"),
    "nested dot-dot": (
        lambda: zips.with_entry("demo/a/../../x"),
        422,
        "unsafe_path",
        "demo/a/../../x",
    ),
    "absolute path": (lambda: zips.with_entry("/etc/passwd"), 422, "unsafe_path", "/etc/passwd"),
    "drive letter": (lambda: zips.with_entry("C:/x"), 422, "unsafe_path", "C:/x"),
    "backslash": (lambda: zips.with_entry("demo\\..\\x"), 422, "unsafe_path", "demo\\..\\x"),
    "colon": (lambda: zips.with_entry("demo/a:b"), 422, "unsafe_path", "demo/a:b"),
    "symlink": (zips.with_symlink, 422, "symlink_entry", "demo/link"),
    "duplicate": (zips.with_duplicate, 422, "duplicate_entry", "demo/a.txt"),
    "1,001 entries": (lambda: zips.with_many_entries(1001), 422, "too_many_entries", None),
    "bomb 1 KiB->200 MiB": (bomb, 422, "compression_ratio_exceeded", "demo/bomb.bin"),
    "101 MiB in small entries": (
        lambda: zips.build(
            {"demo/SKILL.md": zips.skill_md(), **{f"demo/{i}": bytes(MiB) for i in range(101)}}
        ),
        422,
        "uncompressed_too_large",
        None,
    ),
    "SKILL.md over 1 MiB": (
        lambda: zips.build({"demo/SKILL.md": zips.skill_md() + os.urandom(MiB).hex()}),
        422,
        "skill_md_too_large",
        "demo/SKILL.md",
    ),
    "SKILL.md not UTF-8": (
        lambda: zips.build({"demo/SKILL.md": zips.skill_md().encode() + b"\xff\xfe"}),
        422,
        "invalid_utf8",
        "demo/SKILL.md",
    ),
    "100 B claimed, 64 MiB real": (
        cache(zips.size_liar),
        422,
        "entry_size_mismatch",
        "demo/a.bin",
    ),
    "CRC lie": (zips.crc_liar, 422, "entry_crc_mismatch", "demo/a.txt"),
    "local header names another file": (
        zips.local_name_liar,
        422,
        "local_header_mismatch",
        "demo/a.txt",
    ),
    "bad name": (lambda: zips.skill("Bad_Name"), 422, "invalid_name", "Bad_Name/SKILL.md"),
    "yaml error": (
        lambda: zips.build({"demo/SKILL.md": "---\nname: demo\ndescription: [unclosed\n---\nx"}),
        422,
        "yaml_error",
        "demo/SKILL.md",
    ),
    "tags not a list": (
        lambda: zips.skill("demo", extra="tags: pdf\n"),
        422,
        "invalid_field",
        None,
    ),
}


@pytest.mark.parametrize("case", CASES.keys())
async def test_archive_rule_refuses_and_writes_nothing(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, case: str
) -> None:
    build, status, code, entry = CASES[case]
    response = await upload(client, alice.headers, build())
    assert_error(response, status, code)
    if entry is not None:
        assert response.json()["error"]["details"]["entry"] == entry
    assert await user_rows(app) == (0, 0)


async def test_ratio_cap_spares_small_entries(client: httpx.AsyncClient, alice: Account) -> None:
    # 1 MiB of zeros compresses ~1000:1, but the cap applies only to entries over 1 MiB.
    response = await upload(client, alice.headers, zips.skill("sparse", files={"z": bytes(MiB)}))
    assert response.status_code == 201, response.text


@pytest.fixture
def small_cap(settings: Settings, tmp_path: Path) -> Settings:
    # No built-in skills: they are bigger than this cap, and this test is about uploads.
    (empty := tmp_path / "no-builtins").mkdir()
    return settings.model_copy(update={"max_archive_bytes": 4096, "builtin_skills_dir": empty})


@pytest.fixture
async def capped_client(small_cap: Settings) -> AsyncIterator[tuple[httpx.AsyncClient, FastAPI]]:
    from backend.app import create_app

    app = create_app(small_cap)
    async with running(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            yield client, app


async def test_oversize_body_is_refused_while_streaming(
    capped_client: tuple[httpx.AsyncClient, FastAPI], make_account: object
) -> None:
    client, app = capped_client
    from backend.auth import service as auth_service

    async with app.state.sessionmaker() as session:
        user = await auth_service.create_user(session, "streamer")
        token = (await auth_service.issue_token(session, user, "t")).secret
        await session.commit()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/zip"}

    sent = 0

    async def body() -> AsyncIterator[bytes]:  # chunked: no Content-Length to trust
        nonlocal sent
        for _ in range(1000):
            sent += 1
            yield b"\0" * 1024

    response = await client.post("/api/v1/namespaces/dev/skills", content=body(), headers=headers)
    assert_error(response, 413, "archive_too_large")
    assert sent < 20  # refused after the cap, not after the whole megabyte

    declared = await client.post(
        "/api/v1/namespaces/dev/skills",
        files={"file": ("big.zip", b"\0" * 200_000)},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert_error(declared, 413, "archive_too_large")
    assert await user_rows(app) == (0, 0)
