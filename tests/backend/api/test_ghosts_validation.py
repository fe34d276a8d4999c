"""Ghost validation on write: each failure a 422 with its code and the offending names."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.support.accounts import Account
from tests.support.errors import assert_error
from tests.support.ghosts import PUBLIC, add_skill, create, ghost, ghost_rows, own

HTTP = "https://mcp.example.com/mcp"

# (case id, spec, code, details expected to be included in the error's details)
CASES: list[tuple[str, dict[str, Any], str, dict[str, Any]]] = [
    (
        "preload outside skills",
        {"skills": ["mine"], "preload_skills": ["mine", "other", "third"]},
        "preload_not_in_skills",
        {"skills": ["other", "third"]},
    ),
    ("skill twice", {"skills": ["mine", "mine"]}, "duplicate_skills", {"skills": ["mine"]}),
    (
        "unknown skills",
        {"skills": ["mine", "nope", "gone"]},
        "unknown_skills",
        {"skills": ["nope", "gone"]},
    ),
    (
        "mcp without endpoint",
        {"mcpServers": {"ok": {"url": HTTP}, "broken": {"type": "sse"}}},
        "mcp_config_invalid",
        {"servers": ["broken"]},
    ),
    (
        "mcp wrong types",
        {"mcpServers": {"a": {"url": HTTP, "args": "x"}, "b": {"url": HTTP, "timeout": "soon"}}},
        "mcp_config_invalid",
        {"servers": ["a", "b"]},
    ),
    (
        "mcp url not http",
        {"mcpServers": {"ftp": {"url": "ftp://example.com"}}},
        "mcp_config_invalid",
        {"servers": ["ftp"]},
    ),
    (
        "mcp unknown transport",
        {"mcpServers": {"odd": {"url": HTTP, "transport": "carrier-pigeon"}}},
        "mcp_config_invalid",
        {"servers": ["odd"]},
    ),
    (
        "mcp unknown key",
        {"mcpServers": {"odd": {"url": HTTP, "cwd": "/tmp"}}},
        "mcp_config_invalid",
        {"servers": ["odd"]},
    ),
    (
        "mcp infinite timeout",
        {"mcpServers": {"slow": {"url": HTTP, "timeout": "inf"}}},
        "mcp_config_invalid",
        {"servers": ["slow"]},
    ),
    (
        "mcp server name",
        {"mcpServers": {"bad name!": {"url": HTTP}}},
        "mcp_config_invalid",
        {"servers": ["bad name!"]},
    ),
    (
        "stdio",
        {"mcpServers": {"web": {"url": HTTP}, "shell": {"command": "bash", "args": ["-c", "id"]}}},
        "mcp_stdio_forbidden",
        {"servers": ["shell"]},
    ),
    (
        "stdio by type",
        {"mcpServers": {"shell": {"type": "stdio", "command": "bash"}}},
        "mcp_stdio_forbidden",
        {"servers": ["shell"]},
    ),
    (
        "unknown placeholder root",
        {"mcpServers": {"env": {"url": HTTP + "?home=${{env.HOME}}"}}},
        "mcp_placeholder_invalid",
        {"servers": ["env"]},
    ),
    (
        "malformed placeholder",
        {"mcpServers": {"h": {"url": HTTP, "headers": {"X-User": "${{ user.name"}}}},
        "mcp_placeholder_invalid",
        {"servers": ["h"]},
    ),
    (
        "secret placeholder not a secret name",
        {"mcpServers": {"h": {"url": HTTP, "headers": {"X": "${{secrets.a.b}}"}}}},
        "mcp_placeholder_invalid",
        {"servers": ["h"]},
    ),
    (
        "api key secret name",
        {"model": {"apiKeySecret": "not-a-name"}},
        "invalid_secret_name",
        {"name": "not-a-name"},
    ),
    (
        "unknown secrets",
        {
            "model": {"apiKeySecret": "OPENAI_KEY"},
            "mcpServers": {"h": {"url": HTTP, "headers": {"A": "Bearer ${{secrets.TOKEN}}"}}},
        },
        "unknown_secrets",
        {"secrets": ["OPENAI_KEY", "TOKEN"]},
    ),
    ("bad skill name", {"skills": ["Not_A_Name"]}, "invalid_skill_ref", {}),
    (
        "bad pinned version",
        {"skills": ["mine@0"], "preloadSkills": ["x@"]},
        "invalid_skill_ref",
        {},
    ),
    ("unknown spec key", {"prompt": "x"}, "invalid_ghost", {}),
    ("temperature range", {"model": {"temperature": 7}}, "invalid_ghost", {}),
    ("spec types", {"skills": "mine", "retentionTurns": "many"}, "invalid_ghost", {}),
    ("mcp tool mode", {"mcpToolMode": "turbo"}, "invalid_mcp_tool_mode", {}),
    ("plan execution flag", {"allowPlanExecution": "please"}, "invalid_ghost", {}),
]


@pytest.mark.parametrize(
    ("spec", "code", "details"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
async def test_an_invalid_ghost_is_refused_with_its_code_and_nothing_is_written(
    app: FastAPI,
    client: httpx.AsyncClient,
    alice: Account,
    spec: dict[str, Any],
    code: str,
    details: dict[str, Any],
) -> None:
    await add_skill(client, alice.headers, "mine")
    response = await create(client, alice.headers, ghost("g", **spec))
    assert_error(response, 422, code)
    got = response.json()["error"]["details"]
    assert {key: got.get(key) for key in details} == details
    assert await ghost_rows(app) == 0
    # the same mistake in a replace leaves the stored Ghost as it was
    assert (await create(client, alice.headers, ghost("g"))).status_code == 201
    replaced = await client.put(f"{own()}/g", json=ghost("g", **spec), headers=alice.headers)
    assert_error(replaced, 422, code)
    stored = (await client.get(f"{own()}/g", headers=alice.headers)).json()
    assert stored["metadata"]["resourceVersion"] == 1


@pytest.mark.parametrize(
    "body",
    [[], "ghost", 7, None, {"metadata": []}, {"metadata": {"name": "g"}, "spec": None}, {}],
    ids=["list", "string", "number", "null", "metadata list", "spec null", "empty"],
)
async def test_bodies_of_the_wrong_shape_are_422_never_500(
    client: httpx.AsyncClient, alice: Account, body: Any
) -> None:
    headers = {**alice.headers, "Content-Type": "application/json"}
    response = await client.post(own(), content=json.dumps(body), headers=headers)
    assert_error(response, 422, "invalid_ghost")


async def test_unparseable_wrong_type_and_oversize_bodies_are_refused(
    client: httpx.AsyncClient, alice: Account
) -> None:
    headers = {**alice.headers, "Content-Type": "application/json"}
    for raw in (b"{", b"\xff\xfe\x00", b'{"metadata": NaN}', b"[" * 100_000 + b"]" * 100_000):
        response = await client.post(own(), content=raw, headers=headers)
        assert_error(response, 422, "invalid_json")
    text = await client.post(
        own(), content=b"{}", headers={**alice.headers, "Content-Type": "text/plain"}
    )
    assert_error(text, 415, "unsupported_media_type")
    huge = ghost("g", systemPrompt="x" * (1024 * 1024))
    assert_error(await create(client, alice.headers, huge), 413, "body_too_large")


async def test_skills_resolve_own_in_the_namespace_then_public(
    client: httpx.AsyncClient, alice: Account, bob: Account, admin: Account
) -> None:
    await add_skill(client, alice.headers, "mine")  # in alice's namespace `dev`
    await add_skill(client, admin.headers, "shared", base="/api/v1/public/skills")
    both = ghost("g", skills=["mine", "shared"])
    assert (await create(client, alice.headers, both)).status_code == 201
    other_namespace = await create(client, alice.headers, both, base=own("prod"))
    assert_error(other_namespace, 422, "unknown_skills")
    error = other_namespace.json()["error"]
    # the Ghost's namespace, and where the caller does have the skill
    assert error["details"] == {
        "skills": ["mine"],
        "namespace": "prod",
        "elsewhere": {"mine": ["dev"]},
    }
    assert (
        "namespace 'prod'" in error["message"] and "'mine' in namespace 'dev'" in error["message"]
    )
    # bob cannot use alice's skill: to him it does not exist, nor is it pointed out
    refused = await create(client, bob.headers, both)
    assert_error(refused, 422, "unknown_skills")
    assert refused.json()["error"]["details"]["elsewhere"] == {}
    assert "you have" not in refused.json()["error"]["message"]
    assert (await create(client, bob.headers, ghost("g", skills=["shared"]))).status_code == 201


async def test_stdio_is_refused_in_an_admins_own_ghost_but_allowed_in_a_public_one(
    client: httpx.AsyncClient, admin: Account
) -> None:
    stdio = ghost("g", mcpServers={"tool": {"command": "python3", "args": ["-m", "srv"]}})
    assert_error(await create(client, admin.headers, stdio), 422, "mcp_stdio_forbidden")
    public = await create(client, admin.headers, stdio, base=PUBLIC)
    assert public.status_code == 201, public.text


async def test_secret_references_resolve_against_the_owners_secrets(
    client: httpx.AsyncClient, alice: Account, bob: Account
) -> None:
    put = await client.put("/api/v1/secrets/OPENAI_KEY", json={"value": "v"}, headers=bob.headers)
    assert put.status_code == 201
    body = ghost("g", model={"apiKeySecret": "OPENAI_KEY"})
    assert_error(await create(client, alice.headers, body), 422, "unknown_secrets")
    assert (await create(client, bob.headers, body)).status_code == 201


@pytest.mark.parametrize(
    "labels",
    [{f"k{i}": "v" for i in range(65)}, {"": "x"}, {"a": "x\x00"}, {"k": "v" * 254}],
    ids=["65 labels", "empty key", "nul value", "value over 253 characters"],
)
async def test_a_ghosts_labels_follow_the_label_rules(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, labels: dict[str, str]
) -> None:
    body = ghost("g")
    body["metadata"]["labels"] = labels  # 900 labels of 1,000 characters each were stored
    assert_error(await create(client, alice.headers, body), 422, "invalid_ghost")
    assert await ghost_rows(app) == 0


async def test_a_ghost_names_at_most_32_mcp_servers(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    # Each turn connects to each: 3,000 of them kept one turn connecting for four minutes.
    servers = {f"s{i}": {"url": "https://mcp.example/"} for i in range(33)}
    assert_error(
        await create(client, alice.headers, ghost("g", mcpServers=servers)), 422, "invalid_ghost"
    )
    del servers["s32"]
    assert (await create(client, alice.headers, ghost("g", mcpServers=servers))).status_code == 201
