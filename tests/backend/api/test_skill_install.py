"""Installing what the agent built: a skill package a turn wrote becomes the caller's skill."""

from __future__ import annotations

import io
import tarfile
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from backend.artifacts import store
from backend.config import Settings
from tests.support import zips
from tests.support.accounts import Account
from tests.support.artifacts import plain_conversation, publish, script_runs
from tests.support.chat import LOOPBACK_ALLOW, ghost_crd, scripted_conversation
from tests.support.errors import assert_error
from tests.support.openai_server import FakeOpenAIServer, Reply, ToolCall
from tests.support.skill_run import ask, run_result, working_sandbox

GREETER_BODY = "GREETER: greet the user by name, warmly."
MAKER = f"""\
import os, pathlib, sys, tarfile, zipfile
root = pathlib.Path("greeter")
root.mkdir(exist_ok=True)
(root / "SKILL.md").write_text(
    "---\\nname: greeter\\ndescription: Greets people by name.\\n---\\n{GREETER_BODY}\\n"
)
out = pathlib.Path(os.environ["OUTPUT_DIR"])
if sys.argv[1] == "zip":
    with zipfile.ZipFile(out / "greeter.zip", "w") as z:
        z.write(root / "SKILL.md", "greeter/SKILL.md")
else:
    with tarfile.open(out / "greeter.tar.gz", "w:gz") as t:
        t.add(root, "greeter")
"""


def maker_skill() -> bytes:
    return zips.build(
        {
            "SKILL.md": "---\nname: skill-maker\ndescription: Builds skills.\n---\nBuild one.\n",
            "scripts/make.py": MAKER,
        },
        folder="skill-maker",
    )


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"egress_allow": LOOPBACK_ALLOW})


async def install(
    client: httpx.AsyncClient, account: Account, body: dict[str, Any]
) -> httpx.Response:
    return await client.post(
        "/api/v1/namespaces/dev/skills/install", json=body, headers=account.headers
    )


@pytest.mark.parametrize("form", ["zip", "tar"])
async def test_a_skill_built_in_the_sandbox_installs_and_loads_in_a_new_conversation(
    app: FastAPI,
    client: httpx.AsyncClient,
    alice: Account,
    admin: Account,
    openai_server: FakeOpenAIServer,
    form: str,
) -> None:
    await working_sandbox(app)
    await publish(client, admin, maker_skill())
    cid = await scripted_conversation(client, alice, openai_server, "skill-maker")
    script_runs(openai_server, "skill-maker", f"python3 $SKILL_DIR/scripts/make.py {form}")
    await ask(client, alice, cid)
    [built] = run_result(openai_server)["output_files"]

    installed = await install(
        client, alice, {"conversation": cid, "artifact": built["artifact_id"]}
    )

    assert installed.status_code == 201, installed.text
    crd = installed.json()
    source = {"type": "artifact", "conversation": cid, "artifact": built["artifact_id"]}
    assert crd["metadata"]["name"] == "greeter"
    assert crd["status"]["source"] == source
    versions = await client.get(
        "/api/v1/namespaces/dev/skills/greeter/versions", headers=alice.headers
    )
    assert versions.json()["items"][0]["source"] == source
    model = {"name": "scripted", "baseUrl": openai_server.base_url, "apiKeySecret": "MODEL_KEY"}
    ghost = ghost_crd("greets", model=model, skills=["greeter"])
    created = await client.post("/api/v1/namespaces/dev/ghosts", json=ghost, headers=alice.headers)
    assert created.status_code == 201, created.text
    fresh = await client.post(
        "/api/v1/conversations", json={"ghost": "dev/greets"}, headers=alice.headers
    )
    openai_server.script(
        Reply(tool_calls=[ToolCall("load_skill", {"skill_name": "greeter"})]), Reply(text="Hi!")
    )
    answer = await ask(client, alice, fresh.json()["id"])
    assert answer["content"] == "Hi!"
    assert [s["name"] for s in answer["loaded_skills"]] == ["greeter"]
    system = openai_server.requests[-1]["messages"][0]["content"]
    assert GREETER_BODY in system


async def stored(app: FastAPI, cid: str, name: str, data: bytes) -> str:
    async with app.state.sessionmaker() as session:
        row = await store.add(
            session, cid, kind=store.OUTPUT, name=name, mime_type="application/zip", data=data
        )
        await session.commit()
        return row.id


def tar_of(members: list[tarfile.TarInfo], data: bytes = b"") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for member in members:
            tar.addfile(member, io.BytesIO(data) if member.isreg() else None)
    return buffer.getvalue()


def link(name: str, target: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.SYMTYPE, target
    return info


async def test_every_upload_rule_applies_with_its_error_code(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, bob: Account
) -> None:
    cid = await plain_conversation(client, alice)
    good = await stored(app, cid, "tool.zip", zips.skill("tool"))
    text = await stored(app, cid, "notes.txt", b"just words")
    linked = await stored(app, cid, "s.tar", tar_of([link("s/SKILL.md", "/etc/passwd")]))
    no_manifest = await stored(app, cid, "empty.zip", zips.build({"README.md": "x"}, folder="e"))

    first = await install(client, alice, {"conversation": cid, "artifact": good})
    assert first.status_code == 201, first.text
    assert_error(
        await install(client, alice, {"conversation": cid, "artifact": good}), 409, "skill_exists"
    )
    assert_error(
        await install(client, alice, {"conversation": cid, "artifact": text}), 422, "not_a_zip"
    )
    assert_error(
        await install(client, alice, {"conversation": cid, "artifact": linked}),
        422,
        "symlink_entry",
    )
    assert_error(
        await install(client, alice, {"conversation": cid, "artifact": no_manifest}),
        422,
        "skill_md_missing",
    )
    assert_error(
        await install(client, alice, {"conversation": cid, "artifact": "nope"}),
        404,
        "artifact_not_found",
    )
    assert_error(
        await install(client, bob, {"conversation": cid, "artifact": good}),
        404,
        "conversation_not_found",
    )


async def test_the_authoring_skill_packages_a_folder_the_agent_wrote_for_installing(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, openai_server: FakeOpenAIServer
) -> None:
    await working_sandbox(app)
    cid = await scripted_conversation(client, alice, openai_server, "skillhive-skill-authoring")
    write = (
        "mkdir -p hi/.git && printf -- '---\\nname: hi\\ndescription: Says hi.\\n---\\nSay hi.\\n'"
        " > hi/SKILL.md && echo secret > hi/.git/config"
        " && python3 $SKILL_DIR/scripts/package.py hi"
    )
    script_runs(openai_server, "skillhive-skill-authoring", write)
    await ask(client, alice, cid)
    result = run_result(openai_server)
    assert result["exit_code"] == 0, result
    [built] = result["output_files"]
    assert (built["path"], built["mime_type"]) == ("out/hi.zip", "application/zip")

    installed = await install(
        client, alice, {"conversation": cid, "artifact": built["artifact_id"]}
    )

    assert installed.status_code == 201, installed.text
    files = await client.get(
        "/api/v1/namespaces/dev/skills/hi/files/SKILL.md", headers=alice.headers
    )
    assert files.text.endswith("Say hi.\n")
