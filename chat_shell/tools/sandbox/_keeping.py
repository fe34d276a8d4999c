"""One turn's side of `ConversationFiles`: restore and save the workspace, place the user's
files, and keep output files as artifacts within the turn's limits.

A file a later run of the same turn still holds unchanged is not kept twice: it gets the
artifact it already has. Files over a limit stay in the result, marked `artifact_refused`.
"""

from __future__ import annotations

import hashlib
import io
import logging
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from chat_shell.contracts import ArtifactEvent, Event
from chat_shell.sandbox import Workspace, run_to_end
from chat_shell.sandbox.workspace import WorkspaceRejected
from chat_shell.tools.sandbox._files import (
    INPUTS_DIR,
    ConversationFiles,
    NewArtifact,
    SavedArtifact,
)
from chat_shell.tools.sandbox._outputs import OUTPUT_PREFIX, OutputFile

log = logging.getLogger(__name__)

MAX_NAME_CHARS = 255
Emit = Callable[[Event], None]


def artifact_name(path: str) -> str:
    """The artifact's name: its path below the output folder, else below the workspace, with
    control, format and line-break characters (a newline, a right-to-left override, U+2028)
    made `_`: the name is shown in the console and in headers, where they would forge or
    reorder what is read."""
    name = path.removeprefix(OUTPUT_PREFIX)
    return "".join("_" if unicodedata.category(c) in _HIDDEN else c for c in name)


_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp"})  # controls, format, line and paragraph breaks


class ArtifactKeeper:
    def __init__(self, files: ConversationFiles) -> None:
        self._files = files
        self._kept: dict[tuple[str, str], SavedArtifact] = {}
        self._inputs: set[tuple[str, str]] = set()  # (path, sha256) placed from uploads
        self._count = 0
        self._bytes = 0
        self._workspace_sha: str | None = None

    async def prepare(self, workspace: Workspace, *, max_bytes: int) -> None:
        """A new turn's workspace: the kept one (if any), then the user's files in `inputs/`.

        Hashing, unpacking and writing run in a worker thread: a workspace or an upload can be
        many megabytes, and the event loop carries every other turn of the worker."""
        if self._files.keeps_workspace:
            archive = await self._files.load_workspace()
            if archive is not None:
                self._workspace_sha = await run_to_end(_restore, workspace, archive, max_bytes)
        inputs = await self._files.inputs()
        placed = await run_to_end(_place_inputs, workspace, inputs)
        self._inputs.update(placed)

    async def save_workspace(self, workspace: Workspace) -> bool:
        """Keep the workspace for the next turn (when the host keeps it and it changed);
        False when it could not be stored (the next turn gets the previous one)."""
        if not self._files.keeps_workspace:
            return True
        archive, digest = await run_to_end(_packed, workspace)
        if digest != self._workspace_sha:
            try:
                await self._files.save_workspace(archive)
            except Exception:
                log.exception("the conversation's workspace could not be stored")
                return False
            self._workspace_sha = digest
        return True

    async def keep(
        self, workspace: Workspace, outputs: Sequence[OutputFile], emit: Emit
    ) -> list[dict[str, Any]]:
        """The outputs as the tool returns them, each with its artifact (`artifact_id`, `url`)
        or the reason it was not kept (`artifact_refused`)."""
        listed = []
        for output in outputs:
            found = output.as_dict()
            try:
                kept = await self._keep_one(workspace, output, emit)
            except _Refused as refused:
                found["artifact_refused"] = str(refused)
            else:
                if kept is not None:
                    found["artifact_id"], found["url"] = kept.id, kept.url
            listed.append(found)
        return listed

    async def _keep_one(
        self, workspace: Workspace, output: OutputFile, emit: Emit
    ) -> SavedArtifact | None:
        limits = self._files.limits
        if output.size > limits.max_bytes:
            raise _Refused(f"larger than the {limits.max_bytes} byte artifact limit")
        try:
            data, digest = await run_to_end(_read, workspace, output.path, limits.max_bytes + 1)
        except OSError:
            raise _Refused("not a readable regular file") from None
        if len(data) > limits.max_bytes:
            raise _Refused(f"larger than the {limits.max_bytes} byte artifact limit")
        key = (output.path, digest)
        if key in self._inputs:
            return None  # the user's own upload, unchanged: already theirs
        if key in self._kept:
            return self._kept[key]
        name = artifact_name(output.path)
        if len(name) > MAX_NAME_CHARS:
            raise _Refused(f"its name is longer than {MAX_NAME_CHARS} characters")
        if self._count >= limits.per_turn:
            raise _Refused(f"the turn already kept {limits.per_turn} artifacts (its limit)")
        if self._bytes + len(data) > limits.turn_bytes:
            raise _Refused(f"over the turn's limit of {limits.turn_bytes} artifact bytes")
        try:
            saved = await self._files.save_artifact(
                NewArtifact(name=name, mime_type=output.mime_type, data=data, sha256=digest)
            )
        except Exception:
            log.exception("artifact %s could not be stored", name)
            raise _Refused("it could not be stored; try again") from None
        self._count += 1
        self._bytes += len(data)
        self._kept[key] = saved
        emit(
            ArtifactEvent(
                id=saved.id,
                name=saved.name,
                mime_type=saved.mime_type,
                size=saved.size,
                url=saved.url,
            )
        )
        return saved


class _Refused(Exception):
    """An output file that is not kept; the text says why."""


def _restore(workspace: Workspace, archive: bytes, max_bytes: int) -> str:
    """Unpack the kept workspace; its archive's SHA-256 (to tell whether a turn changed it)."""
    try:
        workspace.replace_from_tar(io.BytesIO(archive), max_bytes=max_bytes)
    except WorkspaceRejected as exc:  # e.g. the workspace limit was lowered
        log.warning("kept workspace not restored: %s", exc)
    return hashlib.sha256(archive).hexdigest()


def _place_inputs(workspace: Workspace, inputs: Mapping[str, bytes]) -> set[tuple[str, str]]:
    placed = set()
    for name, data in inputs.items():
        path = f"{INPUTS_DIR}/{name}"
        workspace.put(path, data)
        placed.add((path, hashlib.sha256(data).hexdigest()))
    return placed


def _packed(workspace: Workspace) -> tuple[bytes, str]:
    buffer = io.BytesIO()
    workspace.to_tar(buffer)
    archive = buffer.getvalue()
    return archive, hashlib.sha256(archive).hexdigest()


def _read(workspace: Workspace, path: str, max_bytes: int) -> tuple[bytes, str]:
    data = workspace.read(path, max_bytes=max_bytes)
    return data, hashlib.sha256(data).hexdigest()
