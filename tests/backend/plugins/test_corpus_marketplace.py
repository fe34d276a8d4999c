"""The real knowledge-work-plugins marketplace imports whole: every plugin it holds, every skill
and every command, refusing nothing (remote plugins are fetched, or reported with their code).

Runs when the corpus holds a checkout at `knowledge-work-plugins/` (tests/support/corpus.py);
skips otherwise, naming where it looked.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import httpx
import pytest

from backend.config import Settings
from tests.backend.api.test_plugins_api import post_zip
from tests.conftest import Account
from tests.support import corpus

CHECKOUT = "knowledge-work-plugins"


@pytest.fixture
def folder() -> Path:
    """The checkout (skips before any database is set up when it is absent)."""
    folder = corpus.root() / CHECKOUT
    if not folder.is_dir():
        pytest.skip(f"no {CHECKOUT} checkout in the corpus at {corpus.root()}")
    return folder


def zip_checkout(folder: Path) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and ".git" not in path.relative_to(folder).parts:
                zf.write(path, f"{CHECKOUT}-main/{path.relative_to(folder).as_posix()}")
    return buf.getvalue()


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The whole repository is one archive: room for it (each skill still meets the caps)."""
    return settings.model_copy(
        update={"max_archive_bytes": 256 * 1024 * 1024, "max_archive_entries": 100_000}
    )


async def test_the_whole_marketplace_imports_refusing_nothing(
    folder: Path, client: httpx.AsyncClient, alice: Account
) -> None:
    listed = json.loads((folder / ".claude-plugin" / "marketplace.json").read_text())["plugins"]
    local = {p["name"]: p["source"] for p in listed if isinstance(p["source"], str)}
    answer = await post_zip(client, alice, zip_checkout(folder))
    assert answer.status_code == 201, answer.text[:2000]
    plugins = {p["name"]: p for p in answer.json()["plugins"]}
    for name, source in local.items():
        plugin = plugins[name]
        assert plugin["status"] == "created", plugin
        refused = [s for s in plugin["skills"] if s["status"] != "created"]
        assert not refused, (name, refused)
        root = folder / source
        commands = sorted((root / "commands").glob("*.md")) if (root / "commands").is_dir() else []
        assert len(plugin["commands"]) == len(commands), name
        skills = list((root / "skills").rglob("SKILL.md")) if (root / "skills").is_dir() else []
        assert len(plugin["skills"]) == len(skills), name
    remote = [p for p in answer.json()["plugins"] if p["name"] not in local]
    # remote sources are fetched through the URL importer: created, or refused with a code
    assert all(p["status"] == "created" or p.get("code") for p in remote), remote
    assert len(answer.json()["plugins"]) == len(listed)  # none dropped
