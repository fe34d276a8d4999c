"""`POST /api/v1/apply`: kubectl-style create-or-update of Ghosts, all or nothing."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import yaml
from fastapi import FastAPI

from tests.support.accounts import Account
from tests.support.errors import assert_error
from tests.support.ghosts import PUBLIC, add_skill, ghost, ghost_rows, own

APPLY = "/api/v1/apply"

STREAM = """\
apiVersion: skillhive.io/v1
kind: Ghost
metadata:
  name: writer
spec:
  systemPrompt: You write.
  skills: [mine]
  preload_skills: [mine]  # the old spelling, still accepted
---
# an empty document between two objects is skipped
---
kind: Ghost
metadata:
  name: reviewer
  namespace: prod
spec:
  systemPrompt: You review.
"""


async def _apply_yaml(
    client: httpx.AsyncClient, account: Account, text: str, media: str = "application/yaml"
) -> httpx.Response:
    headers = {**account.headers, "Content-Type": media}
    return await client.post(APPLY, content=text.encode(), headers=headers)


def _actions(response: httpx.Response) -> list[tuple[str, str, str, str]]:
    assert response.status_code == 200, response.text
    return [(i["kind"], i["namespace"], i["name"], i["action"]) for i in response.json()["items"]]


async def test_yaml_stream_creates_then_reports_unchanged_then_configured(
    client: httpx.AsyncClient, alice: Account
) -> None:
    await add_skill(client, alice.headers, "mine", base="/api/v1/namespaces/default/skills")
    first = await _apply_yaml(client, alice, STREAM)
    assert _actions(first) == [
        ("Ghost", "default", "writer", "created"),
        ("Ghost", "prod", "reviewer", "created"),
    ]
    again = await _apply_yaml(client, alice, STREAM, media="text/yaml")
    assert [a[3] for a in _actions(again)] == ["unchanged", "unchanged"]

    changed = await _apply_yaml(client, alice, STREAM.replace("You review.", "You review well."))
    assert [a[3] for a in _actions(changed)] == ["unchanged", "configured"]
    writer = (await client.get(f"{own('default')}/writer", headers=alice.headers)).json()
    assert writer["metadata"]["resourceVersion"] == 1
    assert writer["spec"]["preloadSkills"] == ["mine"]  # echoed in camelCase
    reviewer = (await client.get(f"{own('prod')}/reviewer", headers=alice.headers)).json()
    assert reviewer["metadata"]["resourceVersion"] == 2
    assert reviewer["spec"]["systemPrompt"] == "You review well."


async def test_json_list_or_object_and_a_get_output_applied_back_is_unchanged(
    client: httpx.AsyncClient, alice: Account
) -> None:
    docs = [ghost("a", namespace="dev"), ghost("b", namespace="dev")]
    assert [a[3] for a in _actions(await client.post(APPLY, json=docs, headers=alice.headers))] == [
        "created",
        "created",
    ]
    stored = (await client.get(f"{own()}/a", headers=alice.headers)).json()
    echoed = await client.post(APPLY, json=stored, headers=alice.headers)
    assert _actions(echoed) == [("Ghost", "dev", "a", "unchanged")]
    as_yaml = await _apply_yaml(client, alice, yaml.safe_dump(stored))
    assert _actions(as_yaml) == [("Ghost", "dev", "a", "unchanged")]


@pytest.mark.parametrize(
    ("bad", "status", "code"),
    [
        ({"spec": {"skills": ["missing"]}}, 422, "unknown_skills"),
        ({"spec": {"mcpServers": {"sh": {"command": "sh"}}}}, 422, "mcp_stdio_forbidden"),
        ({"kind": "Skill"}, 422, "unsupported_kind"),
        ({"kind": None}, 422, "unsupported_kind"),
        ({"metadata": {"name": "Bad Name"}}, 422, "invalid_ghost"),
        ({"metadata": {"name": "g3", "namespace": "public"}}, 403, "admin_required"),
        ({"metadata": {"name": "g0", "namespace": "dev"}}, 422, "duplicate_object"),
        ({"metadata": {"name": "g0", "namespace": "dev", "resourceVersion": 9}}, 412, None),
    ],
    ids=[
        "unknown skill",
        "stdio",
        "other kind",
        "no kind",
        "bad name",
        "public",
        "duplicate",
        "stale version",
    ],
)
async def test_one_bad_document_names_its_index_and_nothing_is_written(
    app: FastAPI,
    client: httpx.AsyncClient,
    alice: Account,
    bad: dict[str, Any],
    status: int,
    code: str | None,
) -> None:
    existing = ghost("g0", namespace="dev")
    assert _actions(await client.post(APPLY, json=[existing], headers=alice.headers))
    document = ghost("g3", namespace="dev")
    for key, value in bad.items():
        document[key] = {**document[key], **value} if isinstance(value, dict) else value
    update = {**existing, "spec": {"systemPrompt": "new"}}
    if document["metadata"].get("resourceVersion"):  # the last document is the stale update
        update = ghost("g4")
    docs = [ghost("g1"), update, ghost("g2"), document]
    response = await client.post(APPLY, json=docs, headers=alice.headers)
    assert response.status_code == status, response.text
    if code is not None:
        assert_error(response, status, code)
    error = response.json()["error"]
    assert error["details"]["index"] == 3
    assert error["message"].startswith("document 3: ")
    assert await ghost_rows(app) == 1
    kept = (await client.get(f"{own()}/g0", headers=alice.headers)).json()
    assert kept["metadata"]["resourceVersion"] == 1
    assert kept["spec"]["systemPrompt"] == "You help."


async def test_admins_apply_public_ghosts_with_namespace_public(
    client: httpx.AsyncClient, alice: Account, admin: Account
) -> None:
    doc = ghost("shared", namespace="public", mcpServers={"t": {"command": "python3"}})
    response = await client.post(APPLY, json=[doc], headers=admin.headers)
    assert _actions(response) == [("Ghost", "public", "shared", "created")]
    assert (await client.get(f"{PUBLIC}/shared", headers=alice.headers)).status_code == 200
    refused = await client.post(APPLY, json=[doc], headers=alice.headers)
    assert_error(refused, 403, "admin_required")


async def test_bounded_yaml_bombs_deep_nesting_and_big_bodies_are_refused(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    laughs = ["kind: Ghost", "metadata: {name: bomb}", 'a0: &a0 ["lol","lol","lol","lol"]']
    laughs += [f"a{i}: &a{i} [*a{i - 1},*a{i - 1},*a{i - 1},*a{i - 1}]" for i in range(1, 20)]
    bomb = await _apply_yaml(client, alice, "\n".join(laughs) + "\n")
    assert_error(bomb, 422, "yaml_too_complex")
    deep = await _apply_yaml(client, alice, "kind: Ghost\nspec: " + "[" * 200 + "]" * 200)
    assert_error(deep, 422, "yaml_too_complex")
    many = await _apply_yaml(client, alice, "---\nkind: Ghost\n" * 101)
    assert_error(many, 422, "yaml_too_complex")
    # what the documents expand to counts together: 2 x 3 MB may pass, 3 x 3 MB may not
    items = ", ".join(['"' + "y" * 1000 + '"'] * 100)
    doc = (
        "kind: Ghost\nmetadata: {{name: d{i}}}\nx: &x ["
        + items
        + "]\nspec: ["
        + "*x, " * 30
        + "]\n"
    )
    two = await _apply_yaml(client, alice, "---\n".join(doc.format(i=i) for i in range(2)))
    assert_error(two, 422, "invalid_ghost")  # past the YAML stage: `x` is no Ghost field
    three = await _apply_yaml(client, alice, "---\n".join(doc.format(i=i) for i in range(3)))
    assert_error(three, 422, "yaml_too_complex")
    huge = await _apply_yaml(client, alice, "#" * (4 * 1024 * 1024 + 1))
    assert_error(huge, 413, "body_too_large")
    assert await ghost_rows(app) == 0


@pytest.mark.parametrize(
    ("body", "media", "status", "code"),
    [
        ("kind: Ghost\nmetadata: {name: [unclosed\n", "application/yaml", 422, "invalid_yaml"),
        ("!!python/object:os.system {}\n", "application/yaml", 422, "invalid_yaml"),
        ("\xff", "application/yaml", 422, "invalid_yaml"),
        ("", "application/yaml", 422, "no_objects"),
        ("---\n---\n", "application/yaml", 422, "no_objects"),
        ("[]", "application/json", 422, "no_objects"),
        ("- 1\n- 2\n", "application/yaml", 422, "invalid_ghost"),
        ("[1]", "application/json", 422, "invalid_ghost"),
        ("{", "application/json", 422, "invalid_json"),
        ("kind: Ghost\nspec: {x: " + "9" * 5000 + "}\n", "application/yaml", 422, "invalid_yaml"),
        ('{"kind": "Ghost", "x": ' + "9" * 5000 + "}", "application/json", 422, "invalid_json"),
        (
            "kind: Ghost\nmetadata: {name: a}\nmetadata: {name: b}\n",
            "application/yaml",
            422,
            "invalid_yaml",
        ),
        (json.dumps([{"kind": "Ghost"}] * 101), "application/json", 422, "too_many_documents"),
        ("kind: Ghost", "text/plain", 415, "unsupported_media_type"),
    ],
    ids=[
        "syntax",
        "python tag",
        "not utf-8",
        "empty",
        "only empty documents",
        "empty list",
        "list document",
        "number",
        "bad json",
        "yaml integer of 5,000 digits",
        "json integer of 5,000 digits",
        "a key written twice",
        "too many",
        "media type",
    ],
)
async def test_unusable_bodies_are_refused_with_a_code(
    client: httpx.AsyncClient, alice: Account, body: str, media: str, status: int, code: str
) -> None:
    headers = {**alice.headers, "Content-Type": media}
    raw = body.encode("latin-1") if body == "\xff" else body.encode()
    assert_error(await client.post(APPLY, content=raw, headers=headers), status, code)
