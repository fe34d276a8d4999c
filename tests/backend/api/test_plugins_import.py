"""`POST .../plugins/import {url, ref?, path?}` and marketplace remote sources, against git
repositories on loopback, on both databases."""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from backend.config import Settings
from tests.support.accounts import Account
from tests.support.chat import LOOPBACK_ALLOW
from tests.support.errors import assert_error
from tests.support.marketplace import (
    SALES_FILES,
    TOOLKIT_FILES,
    build_zip,
    plugin_zip,
    skill_md,
)
from tests.support.sources import SourceServer, commit_files, git_repo

PLUGINS = "/api/v1/namespaces/dev/plugins"
PUBLIC = "/api/v1/public/plugins"
SKILLS = "/api/v1/namespaces/dev/skills"
TOOLKIT = "partner/ui-toolkit/"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"egress_allow": LOOPBACK_ALLOW})


@pytest.fixture
def server() -> Iterator[SourceServer]:
    with SourceServer() as source:
        yield source


def toolkit_at_root() -> dict[str, str | bytes]:
    return {p.removeprefix(TOOLKIT): t for p, t in TOOLKIT_FILES.items()}


async def import_url(
    client: httpx.AsyncClient, account: Account, url: str, base: str = PLUGINS, **body: Any
) -> httpx.Response:
    return await client.post(f"{base}/import", json={"url": url, **body}, headers=account.headers)


def by_name(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in answer["plugins"]}


async def test_a_marketplace_repository_imports_local_and_remote_plugins_and_reports_failures(
    client: httpx.AsyncClient, alice: Account, server: SourceServer, tmp_path: Path
) -> None:
    toolkit = git_repo(tmp_path / "toolkit", toolkit_at_root())
    server.repos["toolkit"] = tmp_path / "toolkit"
    toolkit_commit = toolkit.head().decode()
    denied = f"http://127.0.0.2:{server.port}/git/toolkit.git"  # outside the egress allow
    document = {
        "name": "loop-market",
        "plugins": [
            {"name": "sales", "source": "./sales"},
            {
                "name": "ui-toolkit",
                "source": {
                    "source": "url",
                    "url": server.url("/git/toolkit.git"),
                    "sha": toolkit_commit,
                },
            },
            {"name": "gone", "source": {"source": "url", "url": server.url("/git/gone.git")}},
            {
                "name": "walled",
                "source": {"source": "git-subdir", "url": denied, "path": "x", "sha": "ab" * 20},
            },
        ],
    }
    files: dict[str, str | bytes] = {
        ".claude-plugin/marketplace.json": json.dumps(document),
        **SALES_FILES,
    }
    market = git_repo(tmp_path / "market", files)
    server.repos["market"] = tmp_path / "market"
    url = server.url("/git/market.git")

    response = await import_url(client, alice, url)

    assert response.status_code == 201, response.text
    answer = response.json()
    plugins = by_name(answer)
    assert answer["kind"] == "marketplace" and answer["name"] == "loop-market"
    assert plugins["sales"]["status"] == plugins["ui-toolkit"]["status"] == "created"
    assert [s["name"] for s in plugins["ui-toolkit"]["skills"]] == ["ui-toolkit/web"]
    assert plugins["ui-toolkit"]["commands"] == ["scaffold"]
    assert plugins["gone"]["status"] == "refused" and plugins["gone"]["code"] == "fetch_failed"
    assert plugins["walled"]["status"] == "refused"
    assert plugins["walled"]["code"] == "egress_forbidden"
    assert answer["created"] == 2 and answer["refused"] == 2

    sales = (await client.get(f"{PLUGINS}/sales", headers=alice.headers)).json()
    commit = market.head().decode()
    assert sales["spec"]["source"] == {
        "type": "url",
        "url": url,
        "ref": None,
        "commit": commit,
        "path": "sales",
    }
    remote = (await client.get(f"{PLUGINS}/ui-toolkit", headers=alice.headers)).json()
    assert remote["spec"]["source"]["url"] == server.url("/git/toolkit.git")
    skills = await client.get("/api/v1/namespaces/dev/skills", headers=alice.headers)
    names = {s["metadata"]["name"] for s in skills.json()["items"]}
    assert {"ui-toolkit/web", "sales/call-prep"} <= names
    missing = await client.get(f"{PLUGINS}/gone", headers=alice.headers)
    assert_error(missing, 404, "plugin_not_found")


async def test_a_plugin_folder_imports_from_a_git_path_and_records_its_source(
    client: httpx.AsyncClient, alice: Account, server: SourceServer, tmp_path: Path
) -> None:
    repo = git_repo(tmp_path / "repo", dict(TOOLKIT_FILES))
    server.repos["partner"] = tmp_path / "repo"
    url = server.url("/git/partner.git")

    response = await import_url(client, alice, url, path="partner/ui-toolkit")

    assert response.status_code == 201, response.text
    answer = response.json()
    assert answer["kind"] == "plugin" and answer["name"] == "ui-toolkit"
    assert answer["created"] == 1 and answer["refused"] == 0
    plugin = (await client.get(f"{PLUGINS}/ui-toolkit", headers=alice.headers)).json()
    assert plugin["spec"]["source"] == {
        "type": "url",
        "url": url,
        "ref": None,
        "commit": repo.head().decode(),
        "path": "partner/ui-toolkit",
    }
    same = await import_url(client, alice, url, path="partner/ui-toolkit")
    assert same.status_code == 200, same.text
    assert (same.json()["unchanged"], same.json()["created"]) == (1, 0)
    web = TOOLKIT + "skills/web/SKILL.md"
    changed = commit_files(
        repo, {web: str(TOOLKIT_FILES[web]).replace("WEB-BODY", "WEB-V2")}, "web v2"
    )

    updated = await import_url(client, alice, url, path="partner/ui-toolkit")

    assert updated.status_code == 200, updated.text
    assert updated.json()["plugins"][0]["skills"][0]["status"] == "updated"
    plugin = (await client.get(f"{PLUGINS}/ui-toolkit", headers=alice.headers)).json()
    assert plugin["spec"]["source"]["commit"] == changed


async def test_sync_fetches_a_plugins_source_again_and_updates_it_in_place(
    client: httpx.AsyncClient, alice: Account, server: SourceServer, tmp_path: Path
) -> None:
    repo = git_repo(tmp_path / "repo", dict(TOOLKIT_FILES))
    server.repos["partner"] = tmp_path / "repo"
    url, h = server.url("/git/partner.git"), alice.headers
    assert (await import_url(client, alice, url, path="partner/ui-toolkit")).status_code == 201
    sync = f"{PLUGINS}/ui-toolkit/sync"

    same = await client.post(sync, headers=h)
    assert same.status_code == 200, same.text
    assert same.json()["plugins"][0]["status"] == "unchanged"
    web = TOOLKIT + "skills/web/SKILL.md"
    changed = commit_files(
        repo, {web: str(TOOLKIT_FILES[web]).replace("WEB-BODY", "WEB-V2")}, "web v2"
    )

    updated = await client.post(sync, headers=h)

    assert updated.status_code == 200, updated.text
    assert updated.json()["plugins"][0]["skills"][0]["status"] == "updated"
    plugin = (await client.get(f"{PLUGINS}/ui-toolkit", headers=h)).json()
    assert plugin["spec"]["source"]["commit"] == changed
    skill = (await client.get(f"{SKILLS}/ui-toolkit/web", headers=h)).json()
    assert "WEB-V2" in skill["spec"]["prompt"]
    manifest = TOOLKIT + ".claude-plugin/plugin.json"
    commit_files(repo, {manifest: json.dumps({"name": "other-kit"})}, "renamed")

    renamed = await client.post(sync, headers=h)

    assert_error(renamed, 409, "source_changed")
    assert (await client.get(f"{PLUGINS}/other-kit", headers=h)).status_code == 404
    assert_error(await client.post(f"{PLUGINS}/nope/sync", headers=h), 404, "plugin_not_found")


async def test_a_plugin_not_imported_from_a_url_has_nothing_to_sync(
    client: httpx.AsyncClient, alice: Account
) -> None:
    data = plugin_zip(TOOLKIT_FILES, TOOLKIT)
    uploaded = await client.post(
        PLUGINS, files={"file": ("p.zip", data, "application/zip")}, headers=alice.headers
    )
    assert uploaded.status_code == 201, uploaded.text

    refused = await client.post(f"{PLUGINS}/ui-toolkit/sync", headers=alice.headers)

    assert_error(refused, 409, "no_import_source")


async def test_an_admin_imports_a_public_plugin_from_a_url(
    client: httpx.AsyncClient, admin: Account, server: SourceServer, tmp_path: Path
) -> None:
    git_repo(tmp_path / "repo", toolkit_at_root())
    server.repos["toolkit"] = tmp_path / "repo"

    response = await import_url(client, admin, server.url("/git/toolkit.git"), base=PUBLIC)

    assert response.status_code == 201, response.text
    plugin = (await client.get(f"{PUBLIC}/ui-toolkit", headers=admin.headers)).json()
    assert plugin["status"]["public"] is True


async def test_a_url_outside_the_egress_policy_is_refused_and_nothing_is_written(
    client: httpx.AsyncClient, alice: Account, server: SourceServer, tmp_path: Path
) -> None:
    git_repo(tmp_path / "repo", toolkit_at_root())
    server.repos["toolkit"] = tmp_path / "repo"

    denied = f"http://127.0.0.2:{server.port}/git/toolkit.git"
    assert_error(await import_url(client, alice, denied), 422, "egress_forbidden")
    listed = await client.get(PLUGINS, headers=alice.headers)
    assert listed.json()["items"] == []


async def test_a_source_without_a_plugin_is_refused_not_a_plugin(
    client: httpx.AsyncClient, alice: Account, server: SourceServer, tmp_path: Path
) -> None:
    git_repo(tmp_path / "repo", {"README.md": "nothing here\n", "docs/a.md": "a\n"})
    server.repos["empty"] = tmp_path / "repo"

    response = await import_url(client, alice, server.url("/git/empty.git"))

    assert_error(response, 422, "not_a_plugin")


async def test_a_git_subdir_source_is_fetched_at_its_commit_from_its_folder(
    client: httpx.AsyncClient, alice: Account, server: SourceServer, tmp_path: Path
) -> None:
    kit = {f"plugins/kit/{p}": t for p, t in toolkit_at_root().items()}
    kit["plugins/kit/.claude-plugin/plugin.json"] = json.dumps({"name": "kit"})
    repo = git_repo(tmp_path / "mono", kit)
    first = repo.head().decode()
    commit_files(repo, {"plugins/kit/commands/later.md": "Added later.\n"}, "later")
    server.repos["mono"] = tmp_path / "mono"
    source = {
        "source": "git-subdir",
        "url": server.url("/git/mono.git"),
        "path": "plugins/kit",
        "sha": first,
    }
    document = {"name": "sub-market", "plugins": [{"name": "kit", "source": source}]}
    git_repo(tmp_path / "market", {".claude-plugin/marketplace.json": json.dumps(document)})
    server.repos["market"] = tmp_path / "market"

    response = await import_url(client, alice, server.url("/git/market.git"))

    assert response.status_code == 201, response.text
    (kit_answer,) = response.json()["plugins"]
    assert kit_answer["status"] == "created"
    assert kit_answer["commands"] == ["scaffold"]  # at the commit: `later` came after
    assert [s["name"] for s in kit_answer["skills"]] == ["kit/ui-toolkit-web"]  # name derived


async def test_a_marketplaces_remote_sources_share_one_download_budget(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, server: SourceServer, tmp_path: Path
) -> None:
    # Each remote source could download the whole per-import limit: a marketplace listing many
    # sources made the server download that many times the limit.
    filler = base64.b64encode(random.Random(7).randbytes(30_000)).decode()  # hardly compresses
    plugins = []
    for name in ("one", "two", "three"):
        files = {
            ".claude-plugin/plugin.json": json.dumps({"name": name}),
            f"skills/{name}/SKILL.md": skill_md(name, f"The {name} skill.", "BODY"),
            f"skills/{name}/assets/filler.txt": filler,
        }
        server.files[f"/{name}.zip"] = build_zip(files, root=name)
        source = {"source": "url", "url": server.url(f"/{name}.zip")}
        plugins.append({"name": name, "source": source})
    size = len(server.files["/one.zip"])
    document = {"name": "heavy-market", "plugins": plugins}
    git_repo(tmp_path / "market", {".claude-plugin/marketplace.json": json.dumps(document)})
    server.repos["market"] = tmp_path / "market"
    saved = app.state.settings
    # Each archive fits the per-fetch limit; two of them do (with their answers' headers),
    # three do not.
    app.state.settings = saved.model_copy(update={"import_max_download_bytes": 2 * size + 2000})
    try:
        response = await import_url(client, alice, server.url("/git/market.git"))
    finally:
        app.state.settings = saved

    assert response.status_code == 201, response.text
    found = by_name(response.json())
    assert found["one"]["status"] == found["two"]["status"] == "created"
    assert found["three"]["status"] == "refused"
    assert found["three"]["code"] == "download_too_large"
    # refused on its declared length: the third archive's body was never read in full
    assert server.requests.count("/three.zip") <= 1
