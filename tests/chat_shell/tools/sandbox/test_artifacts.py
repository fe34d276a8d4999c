"""skill_run keeps output files through its host: artifacts, uploads, a conversation workspace."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from langchain_core.messages import ToolMessage

from chat_shell.agent import run_turn
from chat_shell.contracts import Event, TurnRequest
from chat_shell.ports import InMemoryFrontendChannel, InMemoryPackageSource
from chat_shell.sandbox import BubblewrapSandbox, Workspace
from chat_shell.skills.registry import ProviderRegistry
from chat_shell.tools.sandbox import SandboxAccess
from chat_shell.tools.sandbox._files import ArtifactLimits, NewArtifact, SavedArtifact
from tests.support.fakes import FakeToolChatModel, call, load, of_type, request, say, skill


@dataclass
class MemoryFiles:
    """A conversation's files held in memory (the host's side of `ConversationFiles`)."""

    limits: ArtifactLimits = field(default_factory=ArtifactLimits)
    keeps_workspace: bool = False
    uploads: dict[str, bytes] = field(default_factory=dict)
    saved: list[NewArtifact] = field(default_factory=list)
    workspace: bytes | None = None
    fail: bool = False

    async def save_artifact(self, artifact: NewArtifact) -> SavedArtifact:
        if self.fail:
            raise RuntimeError("database down")
        self.saved.append(artifact)
        number = str(len(self.saved))
        return SavedArtifact(
            id=number,
            name=artifact.name,
            mime_type=artifact.mime_type,
            size=len(artifact.data),
            sha256=artifact.sha256,
            url=f"/artifacts/{number}",
        )

    async def inputs(self) -> Mapping[str, bytes]:
        return dict(self.uploads)

    async def load_workspace(self) -> bytes | None:
        return self.workspace

    async def save_workspace(self, archive: bytes) -> None:
        if self.fail:
            raise RuntimeError("database down")
        self.workspace = archive


async def turn(
    sandbox: BubblewrapSandbox, files: MemoryFiles, *commands: str, **run: Any
) -> tuple[list[Event], list[dict[str, Any]]]:
    """One turn running `commands` in order; its events and each run's result."""
    model = FakeToolChatModel(
        script=[
            load("tools"),
            *(call("skill_run", skill="tools", command=c, **run) for c in commands),
            say("done"),
        ]
    )
    turn_request: TurnRequest = request(skills=[skill("tools", public=True)])
    events = [
        event
        async for event in run_turn(
            turn_request,
            package_source=InMemoryPackageSource(),
            frontend=InMemoryFrontendChannel(),
            model=model,
            providers=ProviderRegistry(),
            sandbox=SandboxAccess(sandbox, files=files),
        )
    ]
    messages = [m for m in model.calls[-1].messages if isinstance(m, ToolMessage)][1:]
    assert all(m.status != "error" for m in messages), [m.text for m in messages]
    return events, [json.loads(m.text) for m in messages]


async def test_output_files_become_artifacts_announced_in_the_turns_events(
    sandbox: BubblewrapSandbox,
) -> None:
    files = MemoryFiles()
    events, [result] = await turn(
        sandbox,
        files,
        "printf 'a,b\\n' > $OUTPUT_DIR/table.csv && mkdir $OUTPUT_DIR/sub && "
        "printf x > $OUTPUT_DIR/sub/x.bin && echo keep > notes.md",
        output_files=["*.md"],
    )

    assert [(a.name, a.mime_type, a.data) for a in files.saved] == [
        ("notes.md", "text/markdown", b"keep\n"),
        ("sub/x.bin", "application/octet-stream", b"x"),
        ("table.csv", "text/csv", b"a,b\n"),
    ]
    announced = of_type(events, "artifact")
    assert [(e.id, e.name, e.size, e.url) for e in announced] == [
        ("1", "notes.md", 5, "/artifacts/1"),
        ("2", "sub/x.bin", 1, "/artifacts/2"),
        ("3", "table.csv", 4, "/artifacts/3"),
    ]
    assert [(o["path"], o["artifact_id"], o["url"]) for o in result["output_files"]] == [
        ("notes.md", "1", "/artifacts/1"),
        ("out/sub/x.bin", "2", "/artifacts/2"),
        ("out/table.csv", "3", "/artifacts/3"),
    ]


async def test_a_file_unchanged_by_a_later_run_of_the_turn_is_kept_once(
    sandbox: BubblewrapSandbox,
) -> None:
    files = MemoryFiles()
    events, results = await turn(
        sandbox, files, "echo 1 > $OUTPUT_DIR/a.txt", "echo 2 > $OUTPUT_DIR/b.txt"
    )

    assert [a.name for a in files.saved] == ["a.txt", "b.txt"]
    assert len(of_type(events, "artifact")) == 2
    assert [o["artifact_id"] for o in results[1]["output_files"]] == ["1", "2"]


async def test_files_over_the_limits_are_reported_not_kept(sandbox: BubblewrapSandbox) -> None:
    files = MemoryFiles(limits=ArtifactLimits(max_bytes=1024, per_turn=2, turn_bytes=1_000_000))
    _, [result] = await turn(
        sandbox,
        files,
        "head -c 2000 /dev/zero > $OUTPUT_DIR/big.bin && "
        "for n in 1 2 3; do echo $n > $OUTPUT_DIR/f$n.txt; done",
    )

    outcome = {
        o["path"]: o.get("artifact_refused", o.get("artifact_id")) for o in result["output_files"]
    }
    assert outcome == {
        "out/big.bin": "larger than the 1024 byte artifact limit",
        "out/f1.txt": "1",
        "out/f2.txt": "2",
        "out/f3.txt": "the turn already kept 2 artifacts (its limit)",
    }


async def test_the_turns_byte_limit_counts_every_kept_file(sandbox: BubblewrapSandbox) -> None:
    files = MemoryFiles(limits=ArtifactLimits(max_bytes=1024, per_turn=10, turn_bytes=1500))
    _, [result] = await turn(
        sandbox, files, "for n in 1 2; do head -c 1000 /dev/zero > $OUTPUT_DIR/f$n; done"
    )

    assert [o.get("artifact_refused") for o in result["output_files"]] == [
        None,
        "over the turn's limit of 1500 artifact bytes",
    ]


async def test_a_storage_failure_is_reported_in_the_result(sandbox: BubblewrapSandbox) -> None:
    files = MemoryFiles(fail=True)
    events, [result] = await turn(sandbox, files, "echo hi > $OUTPUT_DIR/a.txt")

    assert result["exit_code"] == 0
    assert result["output_files"][0]["artifact_refused"] == "it could not be stored; try again"
    assert of_type(events, "artifact") == []


async def test_uploaded_files_are_in_the_workspace_and_not_kept_again(
    sandbox: BubblewrapSandbox,
) -> None:
    files = MemoryFiles(uploads={"data.csv": b"x,y\n1,2\n"})
    _, [result] = await turn(sandbox, files, "wc -l < inputs/data.csv", output_files=["inputs/*"])

    assert result["stdout"] == "2\n"
    assert files.saved == []
    assert result["output_files"][0]["path"] == "inputs/data.csv"


async def test_a_turn_workspace_starts_empty_in_the_next_turn(sandbox: BubblewrapSandbox) -> None:
    files = MemoryFiles()
    await turn(sandbox, files, "echo first > notes.txt")
    _, [result] = await turn(sandbox, files, "cat notes.txt 2>&1 || true")

    assert files.workspace is None
    assert "No such file" in result["stdout"]


async def test_a_conversation_workspace_carries_files_into_the_next_turn(
    sandbox: BubblewrapSandbox,
) -> None:
    files = MemoryFiles(keeps_workspace=True, uploads={"in.txt": b"upload\n"})
    await turn(sandbox, files, "echo first > notes.txt && echo changed > inputs/in.txt")
    _, [result] = await turn(sandbox, files, "cat notes.txt inputs/in.txt")

    assert result["stdout"] == "first\nupload\n"  # the upload is placed again over the copy


async def test_a_workspace_that_cannot_be_kept_is_reported(sandbox: BubblewrapSandbox) -> None:
    files = MemoryFiles(keeps_workspace=True, fail=True)
    _, [result] = await turn(sandbox, files, "echo x > notes.txt")

    assert (result["exit_code"], result["workspace_kept"]) == (0, False)


async def test_every_name_of_a_hard_link_is_kept_and_a_name_not_utf8_never_breaks_the_turn(
    sandbox: BubblewrapSandbox,
) -> None:
    # tar stored a hard link's second name as a link, which the host drops; a name of
    # bytes that are not UTF-8 came back as a lone surrogate, which no result could encode
    files = MemoryFiles()
    _, [result] = await turn(
        sandbox,
        files,
        "echo same > $OUTPUT_DIR/a.txt && ln $OUTPUT_DIR/a.txt $OUTPUT_DIR/b.txt && "
        "printf x > \"$OUTPUT_DIR/$(printf 'caf\\351')\" && "
        "printf y > \"$OUTPUT_DIR/$(printf 'r\\342\\200\\256x')\"",
    )
    assert [o["path"] for o in result["output_files"]] == ["out/a.txt", "out/b.txt", "out/r\u202ex"]
    # a format character (here a right-to-left override) never reaches an artifact's name
    assert [(a.name, a.data) for a in files.saved] == [
        ("a.txt", b"same\n"),
        ("b.txt", b"same\n"),
        ("r_x", b"y"),
    ]


async def test_unpacking_listing_reading_and_packing_a_workspace_run_off_the_event_loop(
    sandbox: BubblewrapSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    # each is disk work up to the workspace's size: on the loop it stalled every other turn
    methods = ("replace_from_tar", "files", "read", "to_tar", "put")
    threads: dict[str, set[int]] = {m: set() for m in methods}

    def recording(name: str) -> Any:
        original = getattr(Workspace, name)

        def method(self: Workspace, *args: Any, **kwargs: Any) -> Any:
            threads[name].add(threading.get_ident())
            return original(self, *args, **kwargs)

        return method

    for name in methods:
        monkeypatch.setattr(Workspace, name, recording(name))
    kept = MemoryFiles(keeps_workspace=True, uploads={"in.txt": b"up"})
    await turn(sandbox, kept, "echo 1 > kept.txt")  # the first turn keeps a workspace
    assert kept.workspace is not None
    await turn(sandbox, kept, "echo 2 > $OUTPUT_DIR/a.txt")  # the next restores it
    assert all(threads.values()), threads
    assert all(threading.get_ident() not in used for used in threads.values()), threads
