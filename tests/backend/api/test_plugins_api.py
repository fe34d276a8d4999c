"""Plugins over REST on both databases: a marketplace ZIP imports every plugin, skill and command
it holds; deletion removes what a plugin owns; Ghosts using a plugin block its deletion."""

from __future__ import annotations

import json
from typing import Any

import httpx
from fastapi import FastAPI

from tests.support.accounts import Account
from tests.support.errors import assert_error
from tests.support.marketplace import (
    PLUGINS,
    SALES_FILES,
    TOOLKIT_FILES,
    build_zip,
    import_market,
    make_ghost,
    plugin_zip,
    post_zip,
)


def by_name(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in answer["plugins"]}


async def test_a_marketplace_imports_every_local_plugin_skill_and_command(
    client: httpx.AsyncClient, alice: Account
) -> None:
    answer = await import_market(client, alice)
    plugins = by_name(answer)
    assert answer["kind"] == "marketplace" and answer["name"] == "fixture-market"
    assert plugins["sales"]["status"] == plugins["ui-toolkit"]["status"] == "created"
    sales = plugins["sales"]
    assert sorted(s["name"] for s in sales["skills"]) == [
        "sales/account-research",
        "sales/call-prep",
        "sales/call-prep-deep",
    ]
    assert all(
        s["status"] == "created" for p in ("sales", "ui-toolkit") for s in plugins[p]["skills"]
    )
    assert sales["commands"] == ["call-summary", "forecast"]
    assert plugins["ui-toolkit"]["commands"] == ["scaffold"]
    assert sales["mcpServers"] == ["crm"] and sales["secrets"] == ["CRM_TOKEN"]
    codes = {w["code"] for w in sales["warnings"]}
    assert {"agents_not_run", "hooks_not_run", "mcp_field_dropped", "mcp_server_skipped"} <= codes
    assert answer["secrets"] == answer["missingSecrets"] == ["CRM_TOKEN"]


async def test_a_remote_plugin_without_a_fetcher_is_reported_not_dropped(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    app.state.plugin_fetcher = None  # the app configures one; a server may run without
    answer = await import_market(client, alice)
    far = by_name(answer)["far-away"]
    assert far["status"] == "refused" and far["code"] == "remote_source_unavailable"
    assert answer["created"] == 2 and answer["refused"] == 1
    missing = await client.get(f"{PLUGINS}/far-away", headers=alice.headers)
    assert_error(missing, 404, "plugin_not_found")


async def test_a_skill_name_breaking_the_rule_gets_a_derived_name_with_a_warning(
    client: httpx.AsyncClient, alice: Account
) -> None:
    answer = await import_market(client, alice)
    (web,) = by_name(answer)["ui-toolkit"]["skills"]
    assert web["name"] == "ui-toolkit/web" and web["status"] == "created"
    assert "name_derived" in {w["code"] for w in web["warnings"]}


async def test_plugins_list_with_their_skills_and_commands(
    client: httpx.AsyncClient, alice: Account
) -> None:
    await import_market(client, alice)
    listed = await client.get(PLUGINS, headers=alice.headers)
    assert listed.status_code == 200
    assert [p["metadata"]["name"] for p in listed.json()["items"]] == ["sales", "ui-toolkit"]
    sales = await client.get(f"{PLUGINS}/sales", headers=alice.headers)
    assert sales.status_code == 200
    spec = sales.json()["spec"]
    assert [s["name"] for s in spec["skills"]] == [
        "sales/account-research",
        "sales/call-prep",
        "sales/call-prep-deep",
    ]
    skills = await client.get("/api/v1/namespaces/dev/skills", headers=alice.headers)
    found = {s["metadata"]["name"]: s for s in skills.json()["items"]}
    outer = [f["path"] for f in found["sales/call-prep"]["spec"]["files"]]
    assert outer == ["SKILL.md"]  # the nested skill is not part of the outer one
    deep = found["sales/call-prep-deep"]
    assert deep["spec"]["prompt"] == "DEEP-BODY"
    assert "name_derived" in {w["code"] for w in deep["status"]["warnings"]}
    summary = next(c for c in spec["commands"] if c["name"] == "call-summary")
    assert summary["argumentHint"] == "<notes>" and summary["skills"] == ["sales/call-prep"]
    assert "$ARGUMENTS" in summary["prompt"]
    assert [a["path"] for a in spec["agents"]] == ["agents/researcher.md"]
    assert spec["version"] == "1.2.0" and spec["secrets"] == ["CRM_TOKEN"]


async def test_plugin_skills_carry_the_plugins_mcp_servers_with_secret_placeholders(
    client: httpx.AsyncClient, alice: Account
) -> None:
    await import_market(client, alice)
    skills = await client.get("/api/v1/namespaces/dev/skills", headers=alice.headers)
    found = {s["metadata"]["name"]: s for s in skills.json()["items"]}
    prep = found["sales/call-prep"]
    assert prep["metadata"]["labels"] == {"skillhive.io/plugin": "sales"}
    crm = prep["spec"]["mcpServers"]["crm"]
    assert crm["url"] == "https://mcp.crm.example/mcp"
    assert crm["headers"] == {"Authorization": "Bearer ${{secrets.CRM_TOKEN}}"}
    assert "oauth" not in crm


async def test_deleting_a_plugin_removes_its_skills(
    client: httpx.AsyncClient, alice: Account
) -> None:
    await import_market(client, alice)
    deleted = await client.delete(f"{PLUGINS}/sales", headers=alice.headers)
    assert deleted.status_code == 204
    skills = await client.get("/api/v1/namespaces/dev/skills", headers=alice.headers)
    assert [s["metadata"]["name"] for s in skills.json()["items"]] == ["ui-toolkit/web"]
    assert_error(
        await client.get(f"{PLUGINS}/sales", headers=alice.headers), 404, "plugin_not_found"
    )
    assert_error(
        await client.delete(f"{PLUGINS}/sales", headers=alice.headers), 404, "plugin_not_found"
    )


async def test_a_ghost_using_a_plugin_blocks_its_deletion_naming_the_ghost(
    client: httpx.AsyncClient, alice: Account
) -> None:
    await import_market(client, alice)
    assert (await make_ghost(client, alice, "seller", plugins=["sales"])).status_code == 201
    web = await make_ghost(client, alice, "designer", skills=["ui-toolkit/web"])
    assert web.status_code == 201, web.text
    refused = await client.delete(f"{PLUGINS}/sales", headers=alice.headers)
    assert_error(refused, 409, "plugin_referenced")
    assert refused.json()["error"]["details"]["ghosts"] == ["dev/seller"]
    refused = await client.delete(f"{PLUGINS}/ui-toolkit", headers=alice.headers)
    assert_error(refused, 409, "plugin_referenced")
    assert refused.json()["error"]["details"]["ghosts"] == ["dev/designer"]
    await client.delete("/api/v1/namespaces/dev/ghosts/seller", headers=alice.headers)
    assert (await client.delete(f"{PLUGINS}/sales", headers=alice.headers)).status_code == 204


async def test_a_ghost_naming_an_unknown_plugin_is_refused(
    client: httpx.AsyncClient, alice: Account
) -> None:
    refused = await make_ghost(client, alice, "seller", plugins=["sales"])
    assert_error(refused, 422, "unknown_plugins")
    assert refused.json()["error"]["details"]["plugins"] == ["sales"]


async def test_a_single_plugin_folder_imports_and_a_second_import_updates_it_in_place(
    client: httpx.AsyncClient, alice: Account
) -> None:
    data = plugin_zip(SALES_FILES, "sales/")
    first = await post_zip(client, alice, data)
    assert first.status_code == 201, first.text
    assert first.json()["kind"] == "plugin" and first.json()["name"] == "sales"
    again = await post_zip(client, alice, data)  # details: tests/backend/api/test_plugins_update
    assert again.status_code == 200, again.text
    assert again.json()["plugins"][0]["status"] == "unchanged"


async def test_an_archive_without_a_plugin_is_refused(
    client: httpx.AsyncClient, alice: Account
) -> None:
    refused = await post_zip(client, alice, build_zip({"notes.txt": "hello"}))
    assert_error(refused, 422, "not_a_plugin")


STDIO = {"mcpServers": {"local": {"command": "node", "args": ["server.js"]}}}


async def test_stdio_servers_are_refused_for_users_and_accepted_from_admins(
    client: httpx.AsyncClient, alice: Account, admin: Account
) -> None:
    files = {**TOOLKIT_FILES, "partner/ui-toolkit/.mcp.json": json.dumps(STDIO)}
    data = plugin_zip(files, "partner/ui-toolkit/")
    assert_error(await post_zip(client, alice, data), 422, "mcp_stdio_forbidden")
    assert (await client.get(PLUGINS, headers=alice.headers)).json()["items"] == []
    public = await post_zip(client, admin, data, "/api/v1/public/plugins")
    assert public.status_code == 201, public.text
    assert by_name(public.json())["ui-toolkit"]["mcpServers"] == ["local"]
    listed = await client.get("/api/v1/public/plugins/ui-toolkit", headers=alice.headers)
    assert listed.status_code == 200 and listed.json()["status"]["public"] is True


async def test_no_user_imports_plugins_into_the_namespace_public(
    client: httpx.AsyncClient, alice: Account, admin: Account
) -> None:
    data = plugin_zip(TOOLKIT_FILES, "partner/ui-toolkit/")
    reserved = "/api/v1/namespaces/public/plugins"
    for account in (alice, admin):  # admins publish through /public/plugins
        assert_error(await post_zip(client, account, data, reserved), 422, "invalid_namespace")
        url = {"url": "https://plugins.example.com/toolkit.zip"}  # refused before any fetch
        imported = await client.post(f"{reserved}/import", json=url, headers=account.headers)
        assert_error(imported, 422, "invalid_namespace")
    skills = await client.get("/api/v1/namespaces/public/skills", headers=alice.headers)
    assert skills.json()["items"] == []


async def test_a_user_cannot_write_public_plugins(
    client: httpx.AsyncClient, alice: Account
) -> None:
    data = plugin_zip(TOOLKIT_FILES, "partner/ui-toolkit/")
    assert_error(
        await post_zip(client, alice, data, "/api/v1/public/plugins"), 403, "admin_required"
    )


async def test_another_user_can_neither_see_nor_use_a_plugin(
    client: httpx.AsyncClient, alice: Account, bob: Account
) -> None:
    await import_market(client, alice)
    assert_error(await client.get(f"{PLUGINS}/sales", headers=bob.headers), 404, "plugin_not_found")
    assert (await client.get(PLUGINS, headers=bob.headers)).json()["items"] == []
    assert_error(
        await client.delete(f"{PLUGINS}/sales", headers=bob.headers), 404, "plugin_not_found"
    )
    assert_error(await make_ghost(client, bob, "thief", plugins=["sales"]), 422, "unknown_plugins")
    assert_error(
        await make_ghost(client, bob, "thief", skills=["sales/call-prep"]), 422, "unknown_skills"
    )


async def test_a_ghost_lists_its_commands_and_invocable_skills(
    client: httpx.AsyncClient, alice: Account, bob: Account
) -> None:
    await import_market(client, alice)
    assert (
        await make_ghost(client, alice, "seller", plugins=["sales", "ui-toolkit"])
    ).status_code == 201
    url = "/api/v1/namespaces/dev/ghosts/seller/commands"
    listed = await client.get(url, headers=alice.headers)
    assert listed.status_code == 200
    items = {c["name"]: c for c in listed.json()["items"]}
    assert set(items) == {
        "call-summary",
        "forecast",
        "scaffold",
        "sales/account-research",
        "sales/call-prep",
        "ui-toolkit/web",
    }
    assert items["forecast"] == {
        "name": "forecast",
        "description": "Write the forecast for a quarter",
        "argumentHint": "<quarter> <region>",
        "source": "plugin:sales",
    }
    assert items["ui-toolkit/web"]["source"] == "skill"
    assert_error(await client.get(url, headers=bob.headers), 404, "ghost_not_found")


async def test_a_plugin_listed_twice_is_imported_once_and_the_second_reported(
    client: httpx.AsyncClient, alice: Account
) -> None:
    twice = {"name": "m", "plugins": [{"name": "sales", "source": "./sales"}] * 2}
    files = {".claude-plugin/marketplace.json": json.dumps(twice), **SALES_FILES}
    answer = await post_zip(client, alice, build_zip(files))
    assert answer.status_code == 201, answer.text
    first, second = answer.json()["plugins"]
    assert first["status"] == "created"
    assert second["status"] == "refused" and second["code"] == "duplicate_plugin"


async def test_a_marketplace_or_manifest_nested_too_deeply_is_refused_with_its_code(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    deep = "[" * 100_000 + "]" * 100_000  # overflowed the JSON parser's stack: once a 500
    market = {".claude-plugin/marketplace.json": deep, **SALES_FILES}
    assert_error(await post_zip(client, alice, build_zip(market)), 422, "invalid_marketplace")
    plugin = {".claude-plugin/plugin.json": deep, "skills/a/SKILL.md": "---\nname: a\n---\n"}
    assert_error(await post_zip(client, alice, build_zip(plugin)), 422, "invalid_plugin_manifest")


async def test_a_labels_patch_of_a_plugins_skill_keeps_its_plugin_label(
    client: httpx.AsyncClient, alice: Account
) -> None:
    await import_market(client, alice)
    url = "/api/v1/namespaces/dev/skills/sales/call-prep"
    patched = await client.patch(url, json={"labels": {"team": "emea"}}, headers=alice.headers)
    assert patched.status_code == 200, patched.text
    assert patched.json()["metadata"]["labels"] == {"skillhive.io/plugin": "sales", "team": "emea"}
    cleared = await client.patch(url, json={"labels": {}}, headers=alice.headers)
    assert cleared.json()["metadata"]["labels"] == {"skillhive.io/plugin": "sales"}
