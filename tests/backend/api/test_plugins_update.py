"""Importing a plugin that exists updates it in place, on both databases: new versions only for
changed skills, new skills created, dropped ones removed (refused while a Ghost names one), and
a refused update writes nothing."""

from __future__ import annotations

import json
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import select, update

from backend.db.models import Kind, SkillVersion
from tests.support import zips
from tests.support.accounts import Account
from tests.support.errors import assert_error
from tests.support.marketplace import (
    PLUGINS,
    SALES_FILES,
    build_zip,
    import_market,
    make_ghost,
    plugin_zip,
    post_zip,
)

SKILLS = "/api/v1/namespaces/dev/skills"
PREP = "sales/skills/call-prep/SKILL.md"
DEEP = "sales/skills/call-prep/deep/SKILL.md"
NEW = "sales/skills/pipeline/SKILL.md"
MARKET = {  # the two local plugins of the fixture marketplace
    "name": "fixture-market",
    "plugins": [
        {"name": "sales", "source": "./sales"},
        {"name": "ui-toolkit", "source": "./partner/ui-toolkit"},
    ],
}
NEW_SKILL = "---\nname: pipeline\ndescription: Review the sales pipeline.\n---\n\nPIPELINE\n"


def sales(**changes: str | None) -> bytes:
    """The sales plugin's ZIP with files changed (a string) or dropped (None)."""
    files = {**SALES_FILES, **changes}
    return plugin_zip({p: t for p, t in files.items() if t is not None}, "sales/")


async def versions(app: FastAPI) -> dict[str, list[int]]:
    """The sales plugin's skills -> their version numbers."""
    async with app.state.sessionmaker() as session:
        rows = await session.execute(
            select(Kind.name, SkillVersion.number)
            .join(SkillVersion, SkillVersion.kind_id == Kind.id)
            .where(Kind.name.startswith("sales/"))
            .order_by(Kind.name, SkillVersion.number)
        )
        found: dict[str, list[int]] = {}
        for name, number in rows:
            found.setdefault(name, []).append(number)
        return found


async def stored(client: httpx.AsyncClient, account: Account) -> dict[str, Any]:
    """The plugin, and its skills by name (as listed)."""
    plugin = (await client.get(f"{PLUGINS}/sales", headers=account.headers)).json()
    skills = (await client.get(SKILLS, headers=account.headers)).json()["items"]
    return {"plugin": plugin, "skills": {s["metadata"]["name"]: s for s in skills}}


def statuses(answer: dict[str, Any]) -> dict[str, str]:
    return {s["name"]: s["status"] for s in answer["plugins"][0]["skills"]}


async def test_the_same_plugin_again_is_unchanged_and_makes_no_version(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    assert (await post_zip(client, alice, sales())).status_code == 201
    before = await versions(app)

    again = await post_zip(client, alice, sales())

    assert again.status_code == 200, again.text
    answer = again.json()
    assert (answer["created"], answer["updated"], answer["unchanged"]) == (0, 0, 1)
    assert answer["plugins"][0]["status"] == "unchanged"
    assert set(statuses(answer).values()) == {"unchanged"}
    assert await versions(app) == before


async def test_a_changed_plugin_updates_changed_skills_adds_new_ones_and_removes_dropped_ones(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    assert (await post_zip(client, alice, sales())).status_code == 201
    before = await stored(client, alice)
    prep = SALES_FILES[PREP].replace("CALL-PREP-BODY", "CALL-PREP-BODY-V2")
    forecast = SALES_FILES["sales/commands/forecast.md"].replace("Forecast quarter", "Project")

    response = await post_zip(
        client,
        alice,
        sales(**{PREP: prep, DEEP: None, NEW: NEW_SKILL, "sales/commands/forecast.md": forecast}),
    )

    assert response.status_code == 200, response.text
    answer = response.json()
    assert (answer["created"], answer["updated"], answer["refused"]) == (0, 1, 0)
    assert answer["plugins"][0]["status"] == "updated"
    assert statuses(answer) == {
        "sales/call-prep": "updated",
        "sales/account-research": "unchanged",
        "sales/pipeline": "created",
        "sales/call-prep-deep": "removed",
    }
    assert await versions(app) == {
        "sales/account-research": [1],
        "sales/call-prep": [1, 2],
        "sales/pipeline": [1],
    }
    after = await stored(client, alice)
    assert set(after["skills"]) == {"sales/account-research", "sales/call-prep", "sales/pipeline"}
    assert "CALL-PREP-BODY-V2" in after["skills"]["sales/call-prep"]["spec"]["prompt"]
    kept = "sales/account-research"
    assert after["skills"][kept]["metadata"] == before["skills"][kept]["metadata"]
    commands = {c["name"]: c for c in after["plugin"]["spec"]["commands"]}
    assert commands["forecast"]["prompt"].startswith("Project $1")
    assert after["plugin"]["metadata"]["resourceVersion"] == 2


async def test_an_update_keeps_a_skills_labels_and_enabled_state(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    assert (await post_zip(client, alice, sales())).status_code == 201
    async with app.state.sessionmaker() as session:  # set as a PATCH of the skill would
        row = await session.scalar(select(Kind).where(Kind.name == "sales/call-prep"))
        assert row is not None
        crd = json.loads(json.dumps(row.json))
        crd["metadata"]["labels"]["team"] = "emea"
        crd["status"]["enabled"] = False
        await session.execute(update(Kind).where(Kind.id == row.id).values(json=crd))
        await session.commit()

    prep = SALES_FILES[PREP].replace("CALL-PREP-BODY", "CALL-PREP-BODY-V2")
    assert (await post_zip(client, alice, sales(**{PREP: prep}))).status_code == 200

    skill = (await stored(client, alice))["skills"]["sales/call-prep"]
    assert skill["metadata"]["labels"] == {"skillhive.io/plugin": "sales", "team": "emea"}
    assert skill["status"]["enabled"] is False
    assert "CALL-PREP-BODY-V2" in skill["spec"]["prompt"]


async def test_dropping_a_skill_a_ghost_names_is_refused_and_writes_nothing(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    assert (await post_zip(client, alice, sales())).status_code == 201
    ghost = await make_ghost(client, alice, "prepper", skills=["sales/call-prep-deep"])
    assert ghost.status_code == 201, ghost.text
    before, numbers = await stored(client, alice), await versions(app)
    prep = SALES_FILES[PREP].replace("CALL-PREP-BODY", "CALL-PREP-BODY-V2")

    refused = await post_zip(client, alice, sales(**{PREP: prep, DEEP: None, NEW: NEW_SKILL}))

    assert_error(refused, 409, "skill_referenced")
    details = refused.json()["error"]["details"]
    assert details["skill"] == "sales/call-prep-deep" and details["ghosts"] == ["dev/prepper"]
    assert await stored(client, alice) == before
    assert await versions(app) == numbers


async def test_a_ghost_listing_the_plugin_does_not_block_dropping_one_of_its_skills(
    client: httpx.AsyncClient, alice: Account
) -> None:
    assert (await post_zip(client, alice, sales())).status_code == 201
    assert (await make_ghost(client, alice, "seller", plugins=["sales"])).status_code == 201

    response = await post_zip(client, alice, sales(**{DEEP: None}))

    assert response.status_code == 200, response.text
    assert statuses(response.json())["sales/call-prep-deep"] == "removed"
    assert "sales/call-prep-deep" not in (await stored(client, alice))["skills"]


async def test_a_marketplace_update_refuses_one_plugin_and_updates_the_other(
    client: httpx.AsyncClient, alice: Account
) -> None:
    await import_market(client, alice)
    web = await make_ghost(client, alice, "designer", skills=["ui-toolkit/web"])
    assert web.status_code == 201, web.text
    files = {
        ".claude-plugin/marketplace.json": json.dumps(MARKET),
        **SALES_FILES,
        PREP: SALES_FILES[PREP].replace("CALL-PREP-BODY", "CALL-PREP-BODY-V2"),
        # ui-toolkit without its one skill: refused, since `designer` names it
        "partner/ui-toolkit/.claude-plugin/plugin.json": json.dumps({"name": "ui-toolkit"}),
        "partner/ui-toolkit/commands/scaffold.md": "---\ndescription: Scaffold.\n---\n\nGo.\n",
    }

    response = await post_zip(client, alice, build_zip(files))

    assert response.status_code == 200, response.text
    plugins = {p["name"]: p for p in response.json()["plugins"]}
    assert plugins["sales"]["status"] == "updated"
    assert plugins["ui-toolkit"]["status"] == "refused"
    assert plugins["ui-toolkit"]["code"] == "skill_referenced"
    skills = (await client.get(SKILLS, headers=alice.headers)).json()["items"]
    assert "ui-toolkit/web" in {s["metadata"]["name"] for s in skills}


async def test_an_update_over_the_skills_quota_is_refused_and_writes_nothing(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, admin: Account
) -> None:
    assert (await post_zip(client, alice, sales())).status_code == 201  # 3 skills
    quota = await client.patch(
        f"/api/v1/users/{alice.id}", json={"quotas": {"skills": 3}}, headers=admin.headers
    )
    assert quota.status_code == 200, quota.text
    before = await versions(app)

    refused = await post_zip(client, alice, sales(**{NEW: NEW_SKILL}))

    assert_error(refused, 429, "quota_skills")
    assert await versions(app) == before


async def test_a_plugins_skill_is_read_versioned_and_rolled_back_at_its_full_name(
    client: httpx.AsyncClient, alice: Account
) -> None:
    assert (await post_zip(client, alice, sales())).status_code == 201
    prep = SALES_FILES[PREP].replace("CALL-PREP-BODY", "CALL-PREP-BODY-V2")
    assert (await post_zip(client, alice, sales(**{PREP: prep}))).status_code == 200
    item, h = f"{SKILLS}/sales/call-prep", alice.headers

    assert (await client.get(item, headers=h)).json()["metadata"]["name"] == "sales/call-prep"
    history = (await client.get(f"{item}/versions", headers=h)).json()["items"]
    assert [v["version"] for v in history] == [2, 1]
    first = (await client.get(f"{item}/versions/1", headers=h)).json()
    assert "CALL-PREP-BODY-V2" not in first["spec"]["prompt"]
    assert (await client.get(f"{item}/versions/1/package", headers=h)).status_code == 200
    assert (await client.get(f"{item}/package", headers=h)).status_code == 200
    sources = await client.get(
        f"{SKILLS}/sales/account-research/files/references/sources.md", headers=h
    )
    assert sources.status_code == 200 and sources.text == "Where to look.\n"

    rolled = await client.post(f"{item}/rollback", json={"version": 1}, headers=h)

    assert rolled.status_code == 200, rolled.text
    assert "CALL-PREP-BODY-V2" not in rolled.json()["spec"]["prompt"]
    history = (await client.get(f"{item}/versions", headers=h)).json()["items"]
    assert [v["version"] for v in history] == [3, 2, 1]
    disabled = await client.patch(item, json={"enabled": False}, headers=h)
    assert disabled.status_code == 200 and disabled.json()["status"]["enabled"] is False


async def test_a_plugins_skill_changes_only_with_its_plugin(
    client: httpx.AsyncClient, alice: Account
) -> None:
    assert (await post_zip(client, alice, sales())).status_code == 201
    item, h = f"{SKILLS}/sales/call-prep", alice.headers
    archive = {"Content-Type": "application/zip"}

    replaced = await client.put(item, content=zips.skill("call-prep"), headers={**h, **archive})
    deleted = await client.delete(f"{item}?force=true", headers=h)

    for refused in (replaced, deleted):
        assert_error(refused, 409, "plugin_owned")
        assert refused.json()["error"]["details"] == {"skill": "sales/call-prep", "plugin": "sales"}
    assert (await client.get(item, headers=h)).status_code == 200
    assert_error(await client.get(f"{SKILLS}/sales/nope", headers=h), 404, "skill_not_found")


async def test_a_skill_named_like_a_route_gets_a_derived_name_it_is_reachable_at(
    client: httpx.AsyncClient, alice: Account
) -> None:
    skill = "---\nname: versions\ndescription: Compare document versions.\n---\n\nDIFF\n"
    response = await post_zip(client, alice, sales(**{"sales/skills/versions/SKILL.md": skill}))

    assert response.status_code == 201, response.text
    found = {s["name"]: s for s in response.json()["plugins"][0]["skills"]}
    derived = found["sales/skill-versions"]
    assert "name_derived" in {w["code"] for w in derived["warnings"]}
    stored = await client.get(f"{SKILLS}/sales/skill-versions", headers=alice.headers)
    assert stored.status_code == 200 and "DIFF" in stored.json()["spec"]["prompt"]


async def test_a_changed_command_alone_updates_the_plugin_and_no_skill(
    app: FastAPI, client: httpx.AsyncClient, alice: Account
) -> None:
    assert (await post_zip(client, alice, sales())).status_code == 201
    before = await versions(app)
    forecast = SALES_FILES["sales/commands/forecast.md"].replace("Forecast quarter", "Project")

    response = await post_zip(client, alice, sales(**{"sales/commands/forecast.md": forecast}))

    assert response.status_code == 200, response.text
    assert response.json()["plugins"][0]["status"] == "updated"
    assert set(statuses(response.json()).values()) == {"unchanged"}
    assert await versions(app) == before
    plugin = (await stored(client, alice))["plugin"]
    assert plugin["metadata"]["resourceVersion"] == 2
