"""skill_run through a whole turn: a scripted model loads a skill and runs its script."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import pytest
from langchain_core.messages import ToolMessage

from chat_shell.agent import run_turn
from chat_shell.contracts import Event, SkillSpec, TurnRequest
from chat_shell.ports import InMemoryFrontendChannel, InMemoryPackageSource
from chat_shell.sandbox import BubblewrapSandbox
from chat_shell.skills.registry import ProviderRegistry
from chat_shell.tools.sandbox import SandboxAccess
from tests.support.fakes import FakeToolChatModel, call, done, load, request, say, skill, skill_zip
from tests.support.sandbox import require_sandbox

REPORT = """\
import os, sys
out = os.environ["OUTPUT_DIR"]
with open(os.path.join(out, "report.txt"), "w") as f:
    f.write("rows: " + sys.argv[1])
with open(os.path.join(out, "chart.png"), "wb") as f:
    f.write(bytes(range(256)))
with open("table.csv", "w") as f:
    f.write("a,b\\n1,2\\n")
print("wrote report for", sys.argv[1])
"""


def packaged(source: InMemoryPackageSource, *, public: bool = True) -> SkillSpec:
    sha = source.add(skill_zip("reports", {"scripts/report.py": REPORT}))
    return skill("reports", public=public, sha256=sha)


async def turn(
    turn_request: TurnRequest,
    model: FakeToolChatModel,
    source: InMemoryPackageSource,
    access: SandboxAccess | None,
) -> list[Event]:
    return [
        event
        async for event in run_turn(
            turn_request,
            package_source=source,
            frontend=InMemoryFrontendChannel(),
            model=model,
            providers=ProviderRegistry(),
            sandbox=access,
        )
    ]


def tool_results(model: FakeToolChatModel) -> list[ToolMessage]:
    return [m for m in model.calls[-1].messages if isinstance(m, ToolMessage)]


def run_result(message: ToolMessage) -> dict[str, Any]:
    assert message.status != "error", message.text
    found: dict[str, Any] = json.loads(message.text)
    return found


async def test_a_skill_script_runs_and_its_outputs_come_back_with_mime_types(
    sandbox: BubblewrapSandbox,
) -> None:
    source = InMemoryPackageSource()
    model = FakeToolChatModel(
        script=[
            load("reports"),
            call(
                "skill_run",
                skill="reports",
                command="python3 $SKILL_DIR/scripts/report.py 42",
                output_files=["*.csv"],
            ),
            say("done"),
        ]
    )
    events = await turn(request(skills=[packaged(source)]), model, source, SandboxAccess(sandbox))

    result = run_result(tool_results(model)[-1])
    assert done(events).text == "done"
    assert model.calls[1].tool_names == ["load_skill", "skill_run"]
    assert (result["exit_code"], result["timed_out"]) == (0, False)
    assert result["stdout"] == "wrote report for 42\n" and result["stderr"] == ""
    assert result["output_files"] == [
        {"path": "out/chart.png", "mime_type": "image/png", "size": 256},
        {"path": "out/report.txt", "mime_type": "text/plain", "size": 8, "content": "rows: 42"},
        {"path": "table.csv", "mime_type": "text/csv", "size": 8, "content": "a,b\n1,2\n"},
    ]


async def test_the_workspace_lasts_for_the_turn_and_goes_with_it(
    sandbox: BubblewrapSandbox,
) -> None:
    source = InMemoryPackageSource()
    workspaces_before = {p.name for p in sandbox.state_dir.glob("ws-*")}
    model = FakeToolChatModel(
        script=[
            load("reports"),
            call("skill_run", skill="reports", command="echo first > notes.txt"),
            call("skill_run", skill="reports", command="cat notes.txt"),
            say("done"),
        ]
    )
    await turn(request(skills=[packaged(source)]), model, source, SandboxAccess(sandbox))

    assert run_result(tool_results(model)[-1])["stdout"] == "first\n"
    assert {p.name for p in sandbox.state_dir.glob("ws-*")} == workspaces_before


async def test_a_timeout_shortens_the_run(sandbox: BubblewrapSandbox) -> None:
    source = InMemoryPackageSource()
    model = FakeToolChatModel(
        script=[
            load("reports"),
            call("skill_run", skill="reports", command="echo go; sleep 600", timeout=1),
            say("done"),
        ]
    )
    await turn(request(skills=[packaged(source)]), model, source, SandboxAccess(sandbox))

    result = run_result(tool_results(model)[-1])
    assert result["timed_out"] is True and result["limits_hit"] == ["wall_time"]
    assert result["stdout"] == "go\n" and result["workspace_saved"] is False


@pytest.mark.parametrize(
    ("user_skills", "allowed"), [(False, False), (True, True)], ids=["default", "enabled"]
)
async def test_users_own_skills_run_only_when_the_host_allows_it(
    sandbox: BubblewrapSandbox, user_skills: bool, allowed: bool
) -> None:
    source = InMemoryPackageSource()
    public_skill = skill("helper", public=True)
    model = FakeToolChatModel(
        script=[
            load("reports"),
            call("skill_run", skill="reports", command="echo ran"),
            say("done"),
        ]
    )
    await turn(
        request(skills=[packaged(source, public=False), public_skill]),
        model,
        source,
        SandboxAccess(sandbox, user_skills=user_skills),
    )

    message = tool_results(model)[-1]
    if allowed:
        assert run_result(message)["stdout"] == "ran\n"
    else:
        assert message.status == "error"
        assert "user's own skill" in message.text and "public skills only" in message.text


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"skill": "reports", "command": "echo x"}, "not active: load it with load_skill"),
        ({"skill": "nope", "command": "echo x"}, "Unknown skill 'nope'"),
        ({"skill": "other", "command": " "}, "non-empty shell command"),
        ({"skill": "other", "command": "true", "timeout": -1}, "positive number of seconds"),
        # JSON tool arguments may carry NaN: min(NaN, cap) is NaN, a run "timed out" at once
        ({"skill": "other", "command": "true", "timeout": math.nan}, "positive number of"),
        ({"skill": "other", "command": "true", "output_files": ["*"] * 21}, "at most 20"),
    ],
)
async def test_a_refused_call_is_a_clear_tool_error(
    sandbox: BubblewrapSandbox, arguments: dict[str, Any], error: str
) -> None:
    source = InMemoryPackageSource()
    model = FakeToolChatModel(script=[load("other"), call("skill_run", **arguments), say("done")])
    await turn(
        request(skills=[packaged(source), skill("other", public=True)]),
        model,
        source,
        SandboxAccess(sandbox),
    )

    message = tool_results(model)[-1]
    assert message.status == "error"
    assert error in message.text


async def test_a_skill_without_a_package_runs_without_skill_dir(
    sandbox: BubblewrapSandbox,
) -> None:
    source = InMemoryPackageSource()
    model = FakeToolChatModel(
        script=[
            load("plain"),
            call("skill_run", skill="plain", command='echo "[${SKILL_DIR:-none}]"'),
            say("done"),
        ]
    )
    await turn(request(skills=[skill("plain", public=True)]), model, source, SandboxAccess(sandbox))

    assert run_result(tool_results(model)[-1])["stdout"] == "[none]\n"


async def test_the_tool_is_not_offered_without_a_working_sandbox(tmp_path: Any) -> None:
    missing = BubblewrapSandbox(bwrap=str(tmp_path / "no-bwrap"), state_dir=tmp_path)
    source = InMemoryPackageSource()
    model = FakeToolChatModel(script=[say("done")])
    await turn(request(skills=[packaged(source)]), model, source, SandboxAccess(missing))

    assert model.calls[0].tool_names == ["load_skill"]


async def test_the_tool_is_not_offered_when_no_skill_may_run(sandbox: BubblewrapSandbox) -> None:
    source = InMemoryPackageSource()
    model = FakeToolChatModel(script=[say("done")])
    await turn(
        request(skills=[packaged(source, public=False)]), model, source, SandboxAccess(sandbox)
    )

    assert model.calls[0].tool_names == ["load_skill"]


async def test_without_a_sandbox_there_is_no_tool(sandbox: BubblewrapSandbox) -> None:
    source = InMemoryPackageSource()
    model = FakeToolChatModel(script=[say("done")])
    await turn(request(skills=[packaged(source)]), model, source, None)

    assert model.calls[0].tool_names == ["load_skill"]


async def test_a_mounted_skill_folder_outlives_a_full_cache_until_its_run_ends(
    sandbox: BubblewrapSandbox,
) -> None:
    """Another turn's new package pushes the cache past its size while a run still reads its
    own files: that folder stays until the run ends, then goes."""
    small = BubblewrapSandbox(skill_cache_bytes=1)
    require_sandbox(await small.availability())
    source = InMemoryPackageSource()
    first = packaged(source)
    notes = source.add(skill_zip("notes", {"notes.txt": "second"}))
    second = skill("notes", public=True, sha256=notes)
    slow = FakeToolChatModel(
        script=[
            load("reports"),
            call("skill_run", skill="reports", command="sleep 1; head -n 1 $SKILL_DIR/scripts/*"),
            say("done"),
        ]
    )
    quick = FakeToolChatModel(
        script=[
            load("notes"),
            call("skill_run", skill="notes", command="cat $SKILL_DIR/notes.txt"),
            say("done"),
        ]
    )
    try:
        await asyncio.gather(
            turn(request(skills=[first]), slow, source, SandboxAccess(small)),
            turn(request(skills=[second]), quick, source, SandboxAccess(small)),
        )
        assert run_result(tool_results(slow)[-1])["stdout"] == "import os, sys\n"
        assert run_result(tool_results(quick)[-1])["stdout"] == "second"
        folders = [p for p in (small.state_dir / "skills").iterdir() if p.name[0] != "."]
        assert folders == []  # both idle and over the size: removed
    finally:
        small.close()
