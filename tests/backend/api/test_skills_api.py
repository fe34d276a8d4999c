"""Skill CRD API: upload, read, list, replace, patch, delete, package and files."""

from __future__ import annotations

import asyncio
import hashlib
import io
import zipfile
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import event

from tests.support import zips
from tests.support.accounts import Account
from tests.support.errors import assert_error
from tests.support.skills import upload, user_rows

BASE = "/api/v1/namespaces/dev/skills"


async def test_upload_returns_the_crd_and_stores_row_and_bytes(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    data = zips.skill("pdf-tools", extra="tags: [pdf, docs]\n", files={"scripts/run.sh": "echo"})
    response = await upload(client, alice.headers, data)
    assert response.status_code == 201, response.text
    crd = response.json()
    assert crd["apiVersion"] == "skillhive.io/v1" and crd["kind"] == "Skill"
    assert crd["metadata"]["name"] == "pdf-tools"
    assert crd["metadata"]["namespace"] == "dev"
    assert crd["metadata"]["resourceVersion"] == 1
    assert crd["spec"]["description"] == "A demo skill."
    assert crd["spec"]["tags"] == ["pdf", "docs"]
    assert "Do the thing." in crd["spec"]["prompt"]
    assert {f["path"] for f in crd["spec"]["files"]} == {"SKILL.md", "scripts/run.sh"}
    assert crd["status"]["sha256"] == hashlib.sha256(data).hexdigest()
    assert crd["status"]["size"] == len(data)
    assert crd["status"]["public"] is False and crd["status"]["codeAllowed"] is False
    assert response.headers["etag"] == '"1"'
    assert await user_rows(app) == (1, 1)


async def test_raw_zip_body_is_accepted(client: httpx.AsyncClient, alice: Account) -> None:
    body = zips.skill("raw")
    response = await client.post(
        BASE, content=body, headers={**alice.headers, "Content-Type": "application/zip"}
    )
    assert response.status_code == 201
    assert response.json()["status"]["sha256"] == hashlib.sha256(body).hexdigest()
    wrong = await client.post(
        BASE, content=b"x", headers={**alice.headers, "Content-Type": "text/plain"}
    )
    assert_error(wrong, 415, "unsupported_media_type")
    missing = await client.post(BASE, files={"other": ("a", b"x")}, headers=alice.headers)
    assert_error(missing, 422, "file_missing")


async def test_upload_warnings_and_strict_mode(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    data = zips.skill("odd", extra="argument-hint: file\n")
    strict = await upload(client, alice.headers, data, query="?strict=true")
    assert_error(strict, 422, "strict_warnings")
    assert await user_rows(app) == (0, 0)
    lenient = await upload(client, alice.headers, data)
    assert lenient.status_code == 201
    codes = {w["code"] for w in lenient.json()["status"]["warnings"]}
    assert codes == {"unknown_field"}
    assert lenient.json()["spec"]["extra"] == {"argument-hint": "file"}


async def test_duplicate_name_is_409_and_concurrent_uploads_keep_one_row(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    data = zips.skill("twin")
    results = await asyncio.gather(*(upload(client, alice.headers, data) for _ in range(2)))
    assert sorted(r.status_code for r in results) == [201, 409]
    conflict = next(r for r in results if r.status_code == 409)
    assert_error(conflict, 409, "skill_exists")
    message = conflict.json()["error"]["message"]  # says how to replace it
    assert "already exists in namespace 'dev'" in message
    assert "PUT the package to /api/v1/namespaces/dev/skills/twin" in message
    assert "`skillhive skills push <folder> --namespace dev`" in message
    assert await user_rows(app) == (1, 1)
    # the same name in another namespace is a different skill
    assert (await upload(client, alice.headers, data, namespace="prod")).status_code == 201


async def test_list_pages_filters_and_never_reads_binaries(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    for i, tag in enumerate(["pdf", "web", "pdf", "ml", "web"]):
        data = zips.skill(
            f"skill-{i}", description=f"Skill number {i} for {tag}", extra=f"tags: [{tag}]\n"
        )
        assert (await upload(client, alice.headers, data)).status_code == 201

    statements: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    event.listen(app.state.engine.sync_engine, "before_cursor_execute", record)
    try:
        names: list[str] = []
        token = None
        while True:
            query = f"?limit=2{'&continue=' + token if token else ''}"
            page = (await client.get(BASE + query, headers=alice.headers)).json()
            names += [item["metadata"]["name"] for item in page["items"]]
            token = page["continue"]
            if token is None:
                break
    finally:
        event.remove(app.state.engine.sync_engine, "before_cursor_execute", record)
    assert names == [f"skill-{i}" for i in range(5)]
    assert statements and not any("skill_" in s for s in statements)

    async def listed(query: str) -> list[str]:
        response = await client.get(BASE + query, headers=alice.headers)
        assert response.status_code == 200, response.text
        return [item["metadata"]["name"] for item in response.json()["items"]]

    assert await listed("?tag=pdf") == ["skill-0", "skill-2"]
    assert await listed("?q=NUMBER 3") == ["skill-3"]
    assert await listed("?q=skill-4") == ["skill-4"]
    assert await listed("?q=100%") == []  # LIKE wildcards are literal
    with_public = await client.get(BASE + "?include_public=true&limit=500", headers=alice.headers)
    public = [i for i in with_public.json()["items"] if i["status"]["public"]]
    assert any(i["metadata"]["name"] == "skillhive-skill-authoring" for i in public)
    assert_error(
        await client.get(BASE + "?continue=garbage", headers=alice.headers), 422, "invalid_cursor"
    )
    assert_error(
        await client.get(BASE + "?limit=501", headers=alice.headers), 422, "invalid_request"
    )


async def test_get_package_with_etag_and_files(client: httpx.AsyncClient, alice: Account) -> None:
    data = zips.skill("docs", files={"references/guide.md": "# Guide\n", "page.html": "<script>"})
    await upload(client, alice.headers, data)
    got = await client.get(f"{BASE}/docs", headers=alice.headers)
    assert got.status_code == 200 and got.json()["metadata"]["name"] == "docs"

    package = await client.get(f"{BASE}/docs/package", headers=alice.headers)
    assert package.content == data
    assert package.headers["etag"] == f'"{hashlib.sha256(data).hexdigest()}"'
    assert package.headers["content-type"] == "application/zip"
    cached = await client.get(
        f"{BASE}/docs/package", headers={**alice.headers, "If-None-Match": package.headers["etag"]}
    )
    assert cached.status_code == 304 and cached.content == b""

    guide = await client.get(f"{BASE}/docs/files/references/guide.md", headers=alice.headers)
    assert guide.text == "# Guide\n"
    assert guide.headers["content-type"].startswith("text/markdown")
    html = await client.get(f"{BASE}/docs/files/page.html", headers=alice.headers)
    assert html.headers["content-disposition"] == "attachment"
    assert html.headers["content-type"] == "application/octet-stream"
    # percent-encoded so the client does not normalise the dots away before sending
    for bad in ("references/..%2FSKILL.md", "..%2Fdocs%2FSKILL.md", "nope.md", "references"):
        assert_error(
            await client.get(f"{BASE}/docs/files/{bad}", headers=alice.headers),
            404,
            "file_not_found",
        )


@pytest.mark.parametrize(
    "labels",
    [
        {"": "x"},
        {"a b": "c"},
        {"a": "b,c=d"},
        {"a\x00": "x"},
        {"a": "x\x00"},
        {"-a": "x"},
        {"a/": "x"},
        {"A.B/c": "x"},
        {"k" * 64: "x"},
        {f"k{i}": "v" for i in range(65)},
    ],
    ids=[
        "empty key",
        "space",
        "selector syntax",
        "nul key",
        "nul value",
        "leading dash",
        "empty name",
        "uppercase prefix",
        "64-character key",
        "65 labels",
    ],
)
async def test_labels_follow_the_kubernetes_rules(
    client: httpx.AsyncClient, alice: Account, labels: dict[str, str]
) -> None:
    await upload(client, alice.headers, zips.skill("tool"))
    refused = await client.patch(f"{BASE}/tool", json={"labels": labels}, headers=alice.headers)
    assert_error(refused, 422, "invalid_request")
    crd = (await client.get(f"{BASE}/tool", headers=alice.headers)).json()
    assert crd["metadata"]["labels"] == {} and crd["metadata"]["resourceVersion"] == 1


async def test_a_labels_patch_neither_sets_nor_drops_the_services_own_labels(
    client: httpx.AsyncClient, alice: Account
) -> None:
    await upload(client, alice.headers, zips.skill("tool"))
    fine = {"team": "a", "example.com/tier": "gold", "v": "", "x_y.z-1": "A-b_c.9"}
    patched = await client.patch(f"{BASE}/tool", json={"labels": fine}, headers=alice.headers)
    assert patched.status_code == 200 and patched.json()["metadata"]["labels"] == fine
    claim = {"skillhive.io/plugin": "someone-elses"}
    refused = await client.patch(f"{BASE}/tool", json={"labels": claim}, headers=alice.headers)
    assert_error(refused, 422, "reserved_label")
    assert refused.json()["error"]["details"] == {"labels": ["skillhive.io/plugin"]}


async def test_put_replaces_the_package_and_keeps_labels(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    await upload(client, alice.headers, zips.skill("tool"))
    patched = await client.patch(
        f"{BASE}/tool", json={"labels": {"team": "a"}, "enabled": False}, headers=alice.headers
    )
    assert patched.status_code == 200 and patched.json()["metadata"]["resourceVersion"] == 2

    new = zips.skill("tool", description="Version two.")
    stale = await client.put(
        f"{BASE}/tool", files={"file": ("t.zip", new)}, headers={**alice.headers, "If-Match": '"1"'}
    )
    assert_error(stale, 412, "resource_version_mismatch")
    replaced = await client.put(
        f"{BASE}/tool", files={"file": ("t.zip", new)}, headers={**alice.headers, "If-Match": '"2"'}
    )
    assert replaced.status_code == 200, replaced.text
    crd = replaced.json()
    assert crd["metadata"]["resourceVersion"] == 3
    assert crd["metadata"]["labels"] == {"team": "a"}
    assert crd["status"]["enabled"] is False
    assert crd["spec"]["description"] == "Version two."
    assert crd["status"]["sha256"] == hashlib.sha256(new).hexdigest()
    package = await client.get(f"{BASE}/tool/package", headers=alice.headers)
    assert package.content == new

    renamed = await client.put(
        f"{BASE}/tool", files={"file": ("t.zip", zips.skill("other"))}, headers=alice.headers
    )
    assert_error(renamed, 422, "package_name_mismatch")
    broken = await client.put(
        f"{BASE}/tool", files={"file": ("t.zip", b"not a zip")}, headers=alice.headers
    )
    assert_error(broken, 422, "not_a_zip")
    after = (await client.get(f"{BASE}/tool", headers=alice.headers)).json()
    assert (
        after["metadata"]["resourceVersion"] == 3 and after["spec"]["description"] == "Version two."
    )
    assert await user_rows(app) == (1, 1)


async def test_delete_removes_row_and_bytes(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    await upload(client, alice.headers, zips.skill("gone"))
    assert (await client.delete(f"{BASE}/gone", headers=alice.headers)).status_code == 204
    assert await user_rows(app) == (0, 0)
    assert_error(await client.get(f"{BASE}/gone", headers=alice.headers), 404, "skill_not_found")
    assert_error(await client.delete(f"{BASE}/gone", headers=alice.headers), 404, "skill_not_found")


async def test_file_modes_survive_the_round_trip(client: httpx.AsyncClient, alice: Account) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("run/SKILL.md", zips.skill_md("run"))
        script = zipfile.ZipInfo("run/scripts/go.sh")
        script.create_system = 3
        script.external_attr = (0o100755) << 16
        zf.writestr(script, "#!/bin/sh\n")
    await upload(client, alice.headers, buf.getvalue())
    package = await client.get(f"{BASE}/run/package", headers=alice.headers)
    info = zipfile.ZipFile(io.BytesIO(package.content)).getinfo("run/scripts/go.sh")
    assert (info.external_attr >> 16) & 0o777 == 0o755


async def test_invalid_namespace_is_422(client: httpx.AsyncClient, alice: Account) -> None:
    response = await client.get("/api/v1/namespaces/Bad_NS/skills", headers=alice.headers)
    assert_error(response, 422, "invalid_namespace")


async def test_a_skill_names_at_most_32_mcp_servers(
    client: httpx.AsyncClient, alice: Account
) -> None:
    servers = "".join(f"  s{i}:\n    url: https://mcp.example/{i}\n" for i in range(33))
    refused = await upload(
        client, alice.headers, zips.skill("tool", extra=f"mcpServers:\n{servers}")
    )
    assert_error(refused, 422, "invalid_field")
    assert refused.json()["error"]["details"]["field"] == "mcpServers"
