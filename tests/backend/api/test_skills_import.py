"""`POST .../skills/import` and `.../skills/{name}/sync` against sources on loopback."""

from __future__ import annotations

import gzip
import io
import random
import stat
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo
from dulwich.server import DictBackend
from dulwich.web import make_wsgi_chain
from fastapi import FastAPI
from sqlalchemy import func, select

from backend.config import Settings
from backend.db.models import SkillVersion
from tests.support import zips
from tests.support.accounts import Account
from tests.support.chat import LOOPBACK_ALLOW
from tests.support.errors import assert_error
from tests.support.sources import SourceServer, commit_files, git_repo, skill_files

IMPORT = "/api/v1/namespaces/dev/skills/import"
SKILLS = "/api/v1/namespaces/dev/skills"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"egress_allow": LOOPBACK_ALLOW})


@pytest.fixture
def server() -> Iterator[SourceServer]:
    with SourceServer() as source:
        yield source


async def do_import(
    client: httpx.AsyncClient, account: Account, url: str, **body: Any
) -> httpx.Response:
    return await client.post(IMPORT, json={"url": url, **body}, headers=account.headers)


def results(response: httpx.Response) -> dict[str, str]:
    assert response.status_code == 200, response.text
    return {item["name"]: item["result"] for item in response.json()["items"]}


async def version_count(app: FastAPI) -> int:
    async with app.state.sessionmaker() as session:
        return int(await session.scalar(select(func.count()).select_from(SkillVersion)) or 0)


def tar_gz(entries: dict[str, bytes], *, symlink: str | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if symlink is not None:
            link = tarfile.TarInfo(symlink)
            link.type = tarfile.SYMTYPE
            link.linkname = "/etc/passwd"
            tar.addfile(link)
    return buffer.getvalue()


async def test_a_git_repository_over_smart_http_imports_every_skill_with_its_source(
    client: httpx.AsyncClient, alice: Account, server: SourceServer, tmp_path: Path
) -> None:
    repo = git_repo(tmp_path / "repo", skill_files("alpha", "beta"))
    server.repos["skills"] = tmp_path / "repo"
    url = server.url("/git/skills.git")

    response = await do_import(client, alice, url)

    assert results(response) == {"alpha": "created", "beta": "created"}
    commit = repo.head().decode()
    assert response.json()["source"] == {"url": url, "ref": None, "commit": commit, "path": ""}
    skill = (await client.get(f"{SKILLS}/alpha", headers=alice.headers)).json()
    assert skill["status"]["source"] == {
        "url": url,
        "ref": None,
        "commit": commit,
        "path": "skills/alpha",
    }
    assert skill["spec"]["files"] == [
        {"path": "SKILL.md", "size": len(zips.skill_md("alpha", "The alpha skill."))},
        {"path": "scripts/run.sh", "size": 8},
    ]
    history = (await client.get(f"{SKILLS}/alpha/versions", headers=alice.headers)).json()
    assert history["items"][0]["source"]["type"] == "import"


async def test_importing_again_is_unchanged_and_sync_makes_a_version_only_for_new_bytes(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, server: SourceServer, tmp_path: Path
) -> None:
    repo = git_repo(tmp_path / "repo", skill_files("alpha", "beta"))
    server.repos["skills"] = tmp_path / "repo"
    url = server.url("/git/skills.git")
    assert results(await do_import(client, alice, url)) == {"alpha": "created", "beta": "created"}
    before = await version_count(app)

    again = await do_import(client, alice, url)
    assert results(again) == {"alpha": "unchanged", "beta": "unchanged"}
    assert await version_count(app) == before

    # a commit that touches beta only: alpha stays as it is, with the new commit recorded
    commit = commit_files(repo, {"skills/beta/notes.md": "new\n"}, "beta notes")
    synced = await client.post(f"{SKILLS}/alpha/sync", headers=alice.headers)
    assert synced.status_code == 200, synced.text
    assert synced.json()["result"] == "unchanged"
    assert await version_count(app) == before
    alpha = (await client.get(f"{SKILLS}/alpha", headers=alice.headers)).json()
    assert alpha["status"]["source"]["commit"] == commit

    synced = await client.post(f"{SKILLS}/beta/sync", headers=alice.headers)
    assert synced.json()["result"] == "updated"
    assert synced.json()["version"] == 2
    assert await version_count(app) == before + 1
    beta = (await client.get(f"{SKILLS}/beta", headers=alice.headers)).json()
    assert "notes.md" in [f["path"] for f in beta["spec"]["files"]]


async def test_a_skill_is_the_same_package_whether_its_files_were_deflated_as_they_arrived(
    client: httpx.AsyncClient, alice: Account, server: SourceServer, tmp_path: Path
) -> None:
    """A whole repository's large blobs are deflated while the pack downloads; a folder's
    import deflates them when it builds the ZIP: the same bytes either way."""
    large = {
        "skills/alpha/references/long.md": "a long reference line\n" * 10_000,
        "skills/alpha/assets/noise.bin": random.Random(3).randbytes(100_000),
    }
    git_repo(tmp_path / "repo", {**skill_files("alpha"), **large})
    server.repos["skills"] = tmp_path / "repo"
    url = server.url("/git/skills.git")
    assert results(await do_import(client, alice, url)) == {"alpha": "created"}
    folder = await do_import(client, alice, url, path="skills/alpha")
    assert results(folder) == {"alpha": "unchanged"}  # same sha256: no new version
    alpha = (await client.get(f"{SKILLS}/alpha", headers=alice.headers)).json()
    assert {"references/long.md", "assets/noise.bin"} <= {f["path"] for f in alpha["spec"]["files"]}


async def test_a_branch_a_tag_and_an_older_commit_each_import_their_own_tree(
    client: httpx.AsyncClient, alice: Account, server: SourceServer, tmp_path: Path
) -> None:
    from dulwich import porcelain

    repo = git_repo(tmp_path / "repo", skill_files("alpha"))
    first = repo.head().decode()
    porcelain.tag_create(repo, b"v1", annotated=True, message=b"v1", author=b"T <t@e.x>")
    commit_files(repo, skill_files("beta"), "add beta")
    server.repos["skills"] = tmp_path / "repo"
    url = server.url("/git/skills.git")

    tagged = await do_import(client, alice, url, ref="v1")
    assert results(tagged) == {"alpha": "created"}
    assert tagged.json()["source"]["commit"] == first
    at_commit = await do_import(client, alice, url, ref=first)
    assert results(at_commit) == {"alpha": "unchanged"}
    branch = await do_import(client, alice, url, ref="master")
    assert results(branch) == {"alpha": "unchanged", "beta": "created"}
    unknown = await do_import(client, alice, url, ref="nope")
    assert_error(unknown, 422, "unknown_ref")


async def test_a_repository_served_over_dumb_http_imports_too(
    client: httpx.AsyncClient, alice: Account, server: SourceServer, tmp_path: Path
) -> None:
    git_repo(tmp_path / "repo", skill_files("alpha"))
    server.repos["skills"] = tmp_path / "repo"
    response = await do_import(client, alice, server.url("/dumb/skills.git"))
    assert results(response) == {"alpha": "created"}


async def test_a_path_imports_only_the_skills_under_it(
    client: httpx.AsyncClient, alice: Account, server: SourceServer, tmp_path: Path
) -> None:
    files = {**skill_files("alpha"), **skill_files("beta", prefix="other/")}
    git_repo(tmp_path / "repo", files)
    server.repos["skills"] = tmp_path / "repo"
    url = server.url("/git/skills.git")
    response = await do_import(client, alice, url, path="other")
    assert results(response) == {"beta": "created"}
    assert response.json()["items"][0]["path"] == "other/beta"
    assert_error(await do_import(client, alice, url, path="missing"), 422, "path_not_found")
    assert_error(await do_import(client, alice, url, path="../x"), 422, "invalid_import_path")


async def test_a_zip_of_many_skills_imports_each_and_reports_a_refused_one_with_its_code(
    client: httpx.AsyncClient, alice: Account, server: SourceServer
) -> None:
    archive = zips.build(
        {
            "repo-main/skills/alpha/SKILL.md": zips.skill_md("alpha"),
            "repo-main/skills/beta/SKILL.md": zips.skill_md("beta"),
            "repo-main/skills/Bad_Name/SKILL.md": "---\nname: Bad_Name\n---\nno description\n",
            "repo-main/README.md": "hello",
        }
    )
    server.files["/repo.zip"] = archive
    response = await do_import(client, alice, server.url("/repo.zip"))
    items = {i["path"]: i for i in response.json()["items"]}
    assert results(response) == {"alpha": "created", "beta": "created", "Bad_Name": "refused"}
    refused = items["skills/Bad_Name"]
    assert refused["code"] and refused["message"]
    listed = (await client.get(SKILLS, headers=alice.headers)).json()["items"]
    assert sorted(s["metadata"]["name"] for s in listed) == ["alpha", "beta"]


async def test_an_imported_skill_bringing_a_stdio_mcp_server_is_refused_with_its_code(
    client: httpx.AsyncClient, alice: Account, server: SourceServer
) -> None:
    stdio = "mcpServers:\n  run: {command: node, args: [server.js]}\n"
    archive = zips.build(
        {
            "repo-main/skills/alpha/SKILL.md": zips.skill_md("alpha"),
            "repo-main/skills/local/SKILL.md": zips.skill_md("local", extra=stdio),
        }
    )
    server.files["/repo.zip"] = archive
    response = await do_import(client, alice, server.url("/repo.zip"))
    assert results(response) == {"alpha": "created", "local": "refused"}
    items = {i["path"]: i for i in response.json()["items"]}
    assert items["skills/local"]["code"] == "mcp_stdio_forbidden"
    listed = (await client.get(SKILLS, headers=alice.headers)).json()["items"]
    assert [s["metadata"]["name"] for s in listed] == ["alpha"]


async def test_a_tar_gz_archive_imports_and_its_links_are_refused(
    client: httpx.AsyncClient, alice: Account, server: SourceServer
) -> None:
    skill = {"pack/gamma/SKILL.md": zips.skill_md("gamma").encode()}
    server.files["/pack.tar.gz"] = tar_gz(skill)
    assert results(await do_import(client, alice, server.url("/pack.tar.gz"))) == {
        "gamma": "created"
    }
    server.files["/linked.tgz"] = tar_gz(skill, symlink="pack/gamma/link")
    assert_error(await do_import(client, alice, server.url("/linked.tgz")), 422, "symlink_entry")


async def test_a_tar_entry_name_that_is_not_utf8_is_refused_with_its_code(
    client: httpx.AsyncClient, alice: Account, server: SourceServer
) -> None:
    # tarfile keeps the bytes b"\xe9" as a lone surrogate: writing the name out was a 500
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.GNU_FORMAT) as tar:
        for name, data in {
            "alpha/SKILL.md": zips.skill_md("alpha").encode(),
            "alpha/caf\udce9": b"x",
        }.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    server.files["/latin.tar.gz"] = buffer.getvalue()
    response = await do_import(client, alice, server.url("/latin.tar.gz"))
    assert_error(response, 422, "unsafe_path")
    assert response.json()["error"]["details"]["reason"] == "name is not UTF-8"
    assert response.json()["error"]["details"]["entry"] == "alpha/caf\\xe9"
    assert (await client.get(SKILLS, headers=alice.headers)).json()["items"] == []


def tar_gz_with_pax_header(size: int) -> bytes:
    """A tar.gz whose first header is a pax record declaring `size` bytes (zeros: tiny once
    compressed)."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb") as gz:
        info = tarfile.TarInfo("././@PaxHeader")
        info.type = tarfile.XHDTYPE
        info.size = size
        gz.write(info.tobuf(format=tarfile.USTAR_FORMAT))
        for _ in range(size // 65536 + 1):
            gz.write(bytes(65536))
    return buffer.getvalue()


async def test_a_tar_gz_whose_header_inflates_past_the_unpacked_cap_is_refused_unread(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, server: SourceServer
) -> None:
    """tarfile reads a pax header whole before it yields a member: a 40 KiB download declaring
    a 40 MiB header is cut at the unpacked cap, not inflated into memory."""
    app.state.settings = app.state.settings.model_copy(
        update={"import_max_unpacked_bytes": 1024 * 1024, "import_max_files": 10}
    )
    server.files["/bomb.tar.gz"] = tar_gz_with_pax_header(40 * 1024 * 1024)
    assert len(server.files["/bomb.tar.gz"]) < 100 * 1024
    response = await do_import(client, alice, server.url("/bomb.tar.gz"))
    assert_error(response, 422, "uncompressed_too_large")
    assert (await client.get(SKILLS, headers=alice.headers)).json()["items"] == []


async def test_an_archive_breaking_an_upload_rule_is_refused_with_the_uploads_code(
    client: httpx.AsyncClient, alice: Account, server: SourceServer
) -> None:
    server.files["/evil.zip"] = zips.with_entry("../evil")
    assert_error(await do_import(client, alice, server.url("/evil.zip")), 422, "unsafe_path")
    server.files["/page"] = b"<html>not a skill</html>"
    assert_error(await do_import(client, alice, server.url("/page")), 422, "not_an_archive")


async def test_a_symlink_in_a_git_skill_refuses_that_skill_only(
    client: httpx.AsyncClient, alice: Account, server: SourceServer, tmp_path: Path
) -> None:
    repo = git_repo(tmp_path / "repo", skill_files("alpha", "beta"))
    commit_files(repo, {}, "link", symlinks={"skills/beta/secret": "/etc/passwd"})
    server.repos["skills"] = tmp_path / "repo"
    response = await do_import(client, alice, server.url("/git/skills.git"))
    assert results(response) == {"alpha": "created", "beta": "refused"}
    assert response.json()["items"][1]["code"] == "symlink_entry"


def add_entries(repo: Repo, entries: dict[bytes, tuple[int, bytes]], message: str) -> None:
    """A new commit whose root tree gains `entries` (name: (mode, sha)), written directly to
    the object store: trees and names a work tree could not hold."""
    store = repo.object_store
    head = store[repo.head()]
    assert isinstance(head, Commit)
    root = store[head.tree]
    assert isinstance(root, Tree)
    tree = Tree()
    for item in root.items():
        tree.add(item.path, item.mode, item.sha)
    for name, (mode, sha) in entries.items():
        tree.add(name, mode, sha)
    store.add_object(tree)
    commit = Commit()
    commit.tree, commit.parents = tree.id, [head.id]
    commit.author = commit.committer = head.author
    commit.author_time = commit.commit_time = head.commit_time + 1
    commit.author_timezone = commit.commit_timezone = 0
    commit.message = message.encode()
    store.add_object(commit)
    repo.refs[b"refs/heads/master"] = commit.id


def add_submodule(repo: Repo, name: str) -> None:
    """A new commit adding a submodule (a gitlink: a commit of another repository) at `name`."""
    add_entries(repo, {name.encode(): (0o160000, b"1" * 40)}, "submodule")


def nested_trees(repo: Repo, depth: int, width: int) -> bytes:
    """A folder `depth` levels deep whose every folder holds `width` copies of the one below:
    `depth + 1` tree objects naming `width ** depth` folders."""
    tree = Tree()  # the empty tree at the bottom
    repo.object_store.add_object(tree)
    for _ in range(depth):
        parent = Tree()
        for i in range(width):
            parent.add(f"d{i}".encode(), stat.S_IFDIR, tree.id)
        repo.object_store.add_object(parent)
        tree = parent
    return tree.id


def add_blob(repo: Repo, data: bytes) -> bytes:
    blob = Blob.from_string(data)
    repo.object_store.add_object(blob)
    return blob.id


def add_to_beta(repo: Repo, files: dict[bytes, bytes]) -> None:
    """A new commit whose `skills/beta/` folder gains `files` by raw entry name, written to the
    object store directly: names a work tree could not hold."""
    store = repo.object_store
    root = store[store[repo.head()].tree]
    assert isinstance(root, Tree)
    folder = store[root[b"skills"][1]]
    assert isinstance(folder, Tree)
    beta = store[folder[b"beta"][1]]
    assert isinstance(beta, Tree)
    for name, data in files.items():
        beta.add(name, 0o100644, add_blob(repo, data))
    store.add_object(beta)
    folder.add(b"beta", stat.S_IFDIR, beta.id)
    store.add_object(folder)
    add_entries(repo, {b"skills": (stat.S_IFDIR, folder.id)}, "beta's files")


@pytest.mark.parametrize("served", ["/git", "/dumb"])
async def test_a_tree_naming_folders_without_end_is_refused_by_its_entry_count(
    client: httpx.AsyncClient, alice: Account, server: SourceServer, tmp_path: Path, served: str
) -> None:
    # 41 small trees name 2^40 folders and no file: a walk counting files only never ended
    repo = git_repo(tmp_path / "repo", skill_files("alpha"))
    add_entries(repo, {b"bomb": (stat.S_IFDIR, nested_trees(repo, 40, 2))}, "bomb")
    server.repos["skills"] = tmp_path / "repo"
    response = await do_import(client, alice, server.url(f"{served}/skills.git"))
    assert_error(response, 422, "too_many_entries")
    assert response.json()["error"]["details"]["limit"] == 2000  # twice the file limit
    assert (await client.get(SKILLS, headers=alice.headers)).json()["items"] == []


async def test_a_folder_nested_past_the_longest_path_is_one_problem_not_a_500(
    client: httpx.AsyncClient, alice: Account, server: SourceServer, tmp_path: Path
) -> None:
    # 2000 levels: dulwich's own walk raised MaxTreeDepthExceeded (at 1280), a 500
    repo = git_repo(tmp_path / "repo", skill_files("alpha"))
    add_entries(repo, {b"deep": (stat.S_IFDIR, nested_trees(repo, 2000, 1))}, "deep")
    server.repos["skills"] = tmp_path / "repo"
    response = await do_import(client, alice, server.url("/git/skills.git"))
    assert results(response) == {"alpha": "created"}


async def test_a_file_name_that_is_not_utf8_refuses_its_skill_and_never_merges_with_another(
    client: httpx.AsyncClient, alice: Account, server: SourceServer, tmp_path: Path
) -> None:
    # b"caf\xe9" read with replacement is "caf\ufffd", the name of the other file: one of the
    # two was silently dropped from the skill
    repo = git_repo(tmp_path / "repo", skill_files("alpha", "beta"))
    add_to_beta(repo, {b"caf\xe9.txt": b"latin-1 name", "caf\ufffd.txt".encode(): b"utf-8 name"})
    server.repos["skills"] = tmp_path / "repo"
    response = await do_import(client, alice, server.url("/git/skills.git"))
    assert results(response) == {"alpha": "created", "beta": "refused"}
    assert response.json()["items"][1]["code"] == "unsafe_path"
    assert "not UTF-8" in response.json()["items"][1]["message"]


async def test_a_tree_entry_whose_name_holds_a_slash_refuses_its_skill(
    client: httpx.AsyncClient, alice: Account, server: SourceServer, tmp_path: Path
) -> None:
    # an entry "scripts/run.sh" beside the folder "scripts" holding run.sh: two files of one
    # path, the last read silently winning
    repo = git_repo(tmp_path / "repo", skill_files("alpha", "beta"))
    add_to_beta(repo, {b"scripts/run.sh": b"rm -rf ~\n"})
    server.repos["skills"] = tmp_path / "repo"
    response = await do_import(client, alice, server.url("/git/skills.git"))
    assert results(response) == {"alpha": "created", "beta": "refused"}
    assert response.json()["items"][1]["code"] == "unsafe_path"
    assert "not one path segment" in response.json()["items"][1]["message"]


@pytest.mark.parametrize("served", ["/git", "/dumb"])
async def test_a_path_naming_a_submodule_is_path_not_found(
    client: httpx.AsyncClient, alice: Account, server: SourceServer, tmp_path: Path, served: str
) -> None:
    # the submodule's commit is in another repository: looking it up was a KeyError, a 500
    repo = git_repo(tmp_path / "repo", skill_files("alpha"))
    add_submodule(repo, "vendor")
    server.repos["skills"] = tmp_path / "repo"
    url = server.url(f"{served}/skills.git")
    for path in ("vendor", "vendor/skill"):
        response = await do_import(client, alice, url, path=path)
        assert_error(response, 422, "path_not_found")
    assert (await client.get(SKILLS, headers=alice.headers)).json()["items"] == []
    assert results(await do_import(client, alice, url)) == {"alpha": "created"}


async def test_a_redirect_to_a_refused_address_is_refused_for_archives_and_git(
    client: httpx.AsyncClient, alice: Account, server: SourceServer, tmp_path: Path
) -> None:
    # 127.0.0.2 is loopback too, but only 127.0.0.1 is allowed: the policy, not the network,
    # stops it.
    server.files["/ok.zip"] = zips.skill("alpha")
    server.redirects["/moved.zip"] = f"http://127.0.0.2:{server.port}/ok.zip"
    response = await do_import(client, alice, server.url("/moved.zip"))
    assert_error(response, 422, "egress_forbidden")

    git_repo(tmp_path / "repo", skill_files("alpha"))
    server.repos["skills"] = tmp_path / "repo"
    server.redirects["/moved.git/info/refs"] = (
        f"http://127.0.0.2:{server.port}/git/skills.git/info/refs"
    )
    response = await do_import(client, alice, server.url("/moved.git"))
    assert_error(response, 422, "egress_forbidden")
    assert not any(p.startswith("/git/") for p in server.requests)

    server.redirects["/fine.zip"] = server.url("/ok.zip")
    assert results(await do_import(client, alice, server.url("/fine.zip"))) == {"alpha": "created"}


async def test_without_an_allow_setting_a_loopback_url_is_refused(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, server: SourceServer
) -> None:
    app.state.settings = app.state.settings.model_copy(update={"egress_allow": []})
    server.files["/ok.zip"] = zips.skill("alpha")
    assert_error(await do_import(client, alice, server.url("/ok.zip")), 422, "egress_forbidden")
    assert server.requests == []


@pytest.mark.parametrize(
    "url",
    [
        "http://[::1",
        "https://[::1/x",
        "http://example.com:99999/",
        "ftp://example.com/",
        "x",
        # urlsplit takes these; httpx or the resolver's IDNA codec refused them (500s)
        "http://xn--/skills.zip",
        "http://0177.0.0.1/skills.zip",
        "http://a\tb/skills.zip",
        "http://example.com/skills.zip\r\nX-Injected: 1",
        f"http://{'a' * 64}.example.com/skills.zip",
        "http://a..example.com/skills.zip",
    ],
)
async def test_a_malformed_url_is_refused_before_any_request(
    client: httpx.AsyncClient, alice: Account, url: str
) -> None:
    # urlsplit raises on an unclosed IPv6 bracket, and `.port` on a port out of range: 500s
    assert_error(await do_import(client, alice, url), 422, "invalid_import_url")
    plugin = await client.post(
        "/api/v1/namespaces/dev/plugins/import", json={"url": url}, headers=alice.headers
    )
    assert_error(plugin, 422, "invalid_import_url")


@pytest.mark.parametrize("location", ["http://xn--/x.zip", f"http://{'a' * 64}.example.com/"])
async def test_a_redirect_to_a_url_httpx_cannot_read_is_a_fetch_failure(
    client: httpx.AsyncClient, alice: Account, server: SourceServer, location: str
) -> None:
    # httpx reads a redirect's Location even when it follows none: its IDNA error was a 500
    server.redirects["/moved.zip"] = location
    response = await do_import(client, alice, server.url("/moved.zip"))
    assert_error(response, 502, "fetch_failed")
    assert (await client.get(SKILLS, headers=alice.headers)).json()["items"] == []


async def test_limits_refuse_a_large_download_a_slow_source_and_a_failing_one(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, server: SourceServer
) -> None:
    saved = app.state.settings
    app.state.settings = saved.model_copy(update={"import_max_download_bytes": 1000})
    big = zips.skill("alpha", files={"blob.bin": random.Random(0).randbytes(4000)})
    server.files["/big.zip"] = big
    assert_error(await do_import(client, alice, server.url("/big.zip")), 413, "download_too_large")
    app.state.settings = saved.model_copy(update={"import_timeout_seconds": 0.5})
    assert_error(await do_import(client, alice, server.url("/held")), 504, "fetch_timeout")
    server.held.set()
    app.state.settings = saved
    assert_error(await do_import(client, alice, server.url("/gone.zip")), 502, "fetch_failed")


async def test_an_encoded_answer_is_read_as_sent_never_inflated_by_the_client(
    client: httpx.AsyncClient, alice: Account, server: SourceServer
) -> None:
    # 64 MiB of zeros gzipped twice is a few hundred bytes: httpx inflated both layers in
    # one chunk, before the download budget was checked. Read as sent, it is a gzip stream the
    # archive reader inflates within its caps.
    server.files["/bomb.zip"] = gzip.compress(gzip.compress(bytes(64 * 1024 * 1024 + 1), 9), 9)
    server.headers["/bomb.zip"] = {"Content-Encoding": "gzip, gzip"}
    response = await do_import(client, alice, server.url("/bomb.zip"))
    assert_error(response, 502, "fetch_failed")  # a coding no reader here reads: named
    assert response.json()["error"]["details"]["encoding"] == "gzip, gzip"
    assert server.request_headers[-1]["HTTP_ACCEPT_ENCODING"] == "identity"
    server.headers["/bomb.zip"] = {"Content-Encoding": "gzip"}  # one layer: the archive's
    response = await do_import(client, alice, server.url("/bomb.zip"))
    assert response.status_code == 422, response.text  # a gzip stream holding no tar
    # A .tar.gz labelled `Content-Encoding: gzip` is the archive itself, and imports.
    server.files["/skills.tar.gz"] = tar_gz({"alpha/SKILL.md": zips.skill_md("alpha").encode()})
    server.headers["/skills.tar.gz"] = {"Content-Encoding": "x-gzip"}
    assert results(await do_import(client, alice, server.url("/skills.tar.gz"))) == {
        "alpha": "created"
    }
    assert (await client.get(SKILLS, headers=alice.headers)).json()["items"][0]["metadata"][
        "name"
    ] == "alpha"


async def test_a_git_pack_over_the_download_limit_is_refused_as_it_streams(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, server: SourceServer, tmp_path: Path
) -> None:
    # The refs answer fits; the pack (read as it arrives, not buffered whole) does not.
    noise = random.Random(1).randbytes(64 * 1024)
    git_repo(tmp_path / "repo", {**skill_files("alpha"), "skills/alpha/noise.bin": noise})
    server.repos["skills"] = tmp_path / "repo"
    saved = app.state.settings
    app.state.settings = saved.model_copy(update={"import_max_download_bytes": 16 * 1024})
    response = await do_import(client, alice, server.url("/git/skills.git"))
    assert_error(response, 413, "download_too_large")
    assert (await client.get(SKILLS, headers=alice.headers)).json()["items"] == []
    app.state.settings = saved
    assert results(await do_import(client, alice, server.url("/git/skills.git"))) == {
        "alpha": "created"
    }


async def test_a_git_answer_that_stalls_mid_pack_is_cut_at_the_deadline(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, server: SourceServer, tmp_path: Path
) -> None:
    """No timer per read (httpx's are off): the fetch's one deadline ends a stalled body."""
    git_repo(tmp_path / "repo", skill_files("alpha"))
    repos = DictBackend({"/skills.git": Repo(str(tmp_path / "repo"))})
    real = make_wsgi_chain(repos)

    def stalling(environ: dict[str, Any], start: Any) -> Iterator[bytes]:
        environ = {**environ, "PATH_INFO": environ["PATH_INFO"].removeprefix("/git")}
        written: list[bytes] = []  # dulwich's app writes through `start`'s callable

        def held_start(status: str, headers: list[tuple[str, str]], *exc: Any) -> Any:
            start(status, headers, *exc)
            return written.append

        written += real(environ, held_start)
        answer = b"".join(written)
        if environ["PATH_INFO"].endswith("/git-upload-pack"):
            yield answer[: len(answer) // 2]
            server.held.wait(timeout=30)  # the rest never comes (until the test ends)
            return
        yield answer

    server.git_app = stalling
    saved = app.state.settings
    app.state.settings = saved.model_copy(update={"import_timeout_seconds": 0.5})
    response = await do_import(client, alice, server.url("/git/skills.git"))
    assert_error(response, 504, "fetch_timeout")
    assert (await client.get(SKILLS, headers=alice.headers)).json()["items"] == []


async def test_sync_of_an_uploaded_skill_is_409_and_of_a_missing_one_404(
    client: httpx.AsyncClient, alice: Account
) -> None:
    await client.post(SKILLS, files={"file": ("s.zip", zips.skill("up"))}, headers=alice.headers)
    assert_error(
        await client.post(f"{SKILLS}/up/sync", headers=alice.headers), 409, "no_import_source"
    )
    assert_error(
        await client.post(f"{SKILLS}/nope/sync", headers=alice.headers), 404, "skill_not_found"
    )


async def test_a_tree_over_the_file_or_size_limit_is_refused_whole(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, server: SourceServer, tmp_path: Path
) -> None:
    git_repo(tmp_path / "repo", skill_files("alpha", "beta"))  # four files
    server.repos["skills"] = tmp_path / "repo"
    url = server.url("/git/skills.git")
    saved = app.state.settings
    app.state.settings = saved.model_copy(update={"import_max_files": 3})
    assert_error(await do_import(client, alice, url), 422, "too_many_entries")
    app.state.settings = saved.model_copy(update={"import_max_unpacked_bytes": 100})
    assert_error(await do_import(client, alice, url), 422, "uncompressed_too_large")
    app.state.settings = saved
    listed = await client.get(SKILLS, headers=alice.headers)
    assert listed.json()["items"] == []


@pytest.mark.parametrize("served", ["/git", "/dumb"])
async def test_objects_inflating_past_the_unpacked_limit_are_refused_as_they_are_read(
    app: FastAPI,
    client: httpx.AsyncClient,
    alice: Account,
    server: SourceServer,
    tmp_path: Path,
    served: str,
) -> None:
    # 4 MiB of zeros compresses to a few KiB: refused from what the pack or the loose object
    # declares or inflates to while it is read, not after the whole tree is inflated.
    git_repo(tmp_path / "repo", {**skill_files("alpha"), "skills/alpha/zeros.bin": bytes(4 << 20)})
    server.repos["skills"] = tmp_path / "repo"
    app.state.settings = app.state.settings.model_copy(
        update={"import_max_unpacked_bytes": 1 << 20}
    )
    response = await do_import(client, alice, server.url(f"{served}/skills.git"))
    assert_error(response, 422, "uncompressed_too_large")
    refuser = "the dumb server's objects" if served == "/dumb" else "the fetched pack's objects"
    assert response.json()["error"]["message"].startswith(refuser)
    assert (await client.get(SKILLS, headers=alice.headers)).json()["items"] == []
