"""`skill_run(skill, command, output_files?, timeout?)`: a shell command in the sandbox.

The command runs (bash, or sh where bash is missing) for a skill active in the turn: the skill's
files read-only at `$SKILL_DIR`, a writable workspace at `$WORKSPACE_DIR` (the working directory)
kept for the rest of the turn, files written under `$OUTPUT_DIR` returned. Public skills may run
by default; users' own skills only when the host allows it. Every refusal is a tool error the
model sees, never a silent skip. The tool is offered only where the sandbox works.

One tool object serves every turn (like load_skill); it finds its turn through the runtime.
"""

# No `from __future__ import annotations`: LangChain resolves the tool function's type hints.

import asyncio
import json
import math
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, cast

from langchain.tools import ToolRuntime
from langchain_core.tools import BaseTool, StructuredTool, ToolException

from chat_shell.contracts import CatalogEntry, Event, SkillSpec
from chat_shell.observe import observer, tracer
from chat_shell.ports import PackageSource
from chat_shell.sandbox import (
    Sandbox,
    SandboxResult,
    SandboxRun,
    SandboxUnavailable,
    Workspace,
    run_to_end,
)
from chat_shell.skills.active import ActiveSkills
from chat_shell.skills.package_loader import PackageFiles
from chat_shell.tools.sandbox._files import ConversationFiles
from chat_shell.tools.sandbox._keeping import ArtifactKeeper
from chat_shell.tools.sandbox._outputs import collect_outputs

SKILL_RUN_TOOL = "skill_run"
MAX_COMMAND_CHARS = 16 * 1024
MAX_PATTERNS = 20

DESCRIPTION = (
    "Run a shell command in an isolated sandbox for an active skill (load it first). The "
    "skill's files are read-only at $SKILL_DIR (e.g. `python3 $SKILL_DIR/scripts/tool.py`); "
    "the working directory is a writable workspace ($WORKSPACE_DIR) kept for this turn (or "
    "the conversation, where the server keeps it); write "
    "results to $OUTPUT_DIR to get them back (they become files the user can download). "
    "Files the user uploaded are in $WORKSPACE_DIR/inputs. No network. Returns exit_code, "
    "timed_out, duration_ms, stdout, stderr and output_files (path, mime_type, size, small "
    "text inline, the artifact's url)."
)


@dataclass(frozen=True)
class SandboxAccess:
    """The sandbox a host lends to its turns, and whether users' own skills may use it.

    `files` is the turn's conversation (a host sets it per turn): outputs are kept there as
    artifacts, uploads and a kept workspace come from there. None: nothing outlives the turn.
    `mcp_call_*`: the MCP bridge of code mode (per-call timeout, calls per execution)."""

    sandbox: Sandbox
    user_skills: bool = False
    files: ConversationFiles | None = None
    mcp_call_timeout_s: float = 30.0
    mcp_call_budget: int = 50


async def package_files(source: PackageSource, sha256: str) -> Mapping[str, bytes]:
    """A package's files by path; the one place skill_run reads a package (swap it here)."""
    return PackageFiles.from_zip(await source.get(sha256), source.limits).files


class SkillRunner:
    """skill_run for one turn: its workspace (made on first use, removed with the turn's stack),
    the skills' folders, and who may run. Runs of one turn take turns on the workspace."""

    def __init__(self, access: SandboxAccess, source: PackageSource, stack: AsyncExitStack):
        self._access = access
        self._source = source
        self._stack = stack
        self._workspace: Workspace | None = None
        self._lock = asyncio.Lock()
        self._keeper = ArtifactKeeper(access.files) if access.files is not None else None

    async def offered(
        self, skills: Sequence[SkillSpec | CatalogEntry], *, searchable: bool
    ) -> bool:
        """Whether to show the tool: the sandbox works and some skill may run in it (with a
        compact catalog, skills found by search may: the tool is offered)."""
        if not searchable and not any(self.may_run(s) for s in skills):
            return False
        return (await self._access.sandbox.availability()).available

    def may_run(self, skill: SkillSpec | CatalogEntry) -> bool:
        return skill.public or self._access.user_skills

    async def run(
        self,
        skill: SkillSpec,
        command: str,
        patterns: Sequence[str],
        seconds: float | None,
        emit: Callable[[Event], None] = lambda _: None,
    ) -> dict[str, Any]:
        """Run and collect the outputs; `seconds` shortens the wall-time limit, never extends."""
        sandbox = self._access.sandbox
        limits = sandbox.limits
        if seconds is not None:
            limits = replace(limits, wall_seconds=min(seconds, limits.wall_seconds))
        async with self._skill_dir(skill) as skill_dir, self._lock:
            workspace = await self._workspace_for_turn()
            with tracer.start_as_current_span("sandbox.run"):
                result = await sandbox.run(SandboxRun(command, workspace, skill_dir, limits))
            observer().sandbox_run(tuple(result.limits_hit))
            # reads files (inline text) and walks the workspace: off the event loop
            outputs, more = await run_to_end(collect_outputs, workspace, patterns)
            kept = True
            if self._keeper is None:
                listed = [o.as_dict() for o in outputs]
            else:
                listed = await self._keeper.keep(workspace, outputs, emit)
                if result.workspace_saved:
                    kept = await self._keeper.save_workspace(workspace)
        return {
            **result_fields(result),
            "output_files": listed,
            **({"output_files_truncated": True} if more else {}),
            **({} if kept else {"workspace_kept": False}),
        }

    def _skill_dir(self, skill: SkillSpec) -> AbstractAsyncContextManager[Path | None]:
        """The package's folder, held for the run; none for a skill without a package (the
        command then runs without $SKILL_DIR)."""
        sha256 = skill.sha256
        if sha256 is None:
            return nullcontext()
        return self._access.sandbox.skill_dir(sha256, lambda: package_files(self._source, sha256))

    async def _workspace_for_turn(self) -> Workspace:
        if self._workspace is None:
            workspace = self._access.sandbox.new_workspace()
            # removing up to the workspace's cap of files: off the event loop too
            self._stack.push_async_callback(run_to_end, workspace.close)
            if self._keeper is not None:
                limit = self._access.sandbox.limits.workspace_bytes
                await self._keeper.prepare(workspace, max_bytes=limit)
            self._workspace = workspace
        return self._workspace


def result_fields(result: SandboxResult) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
        "duration_ms": result.duration_ms,
        "stdout": result.stdout,
        "stderr": result.stderr,
    }
    if result.stdout_truncated:
        fields["stdout_truncated"] = True
    if result.stderr_truncated:
        fields["stderr_truncated"] = True
    if result.limits_hit:
        fields["limits_hit"] = list(result.limits_hit)
    if not result.workspace_saved:
        fields["workspace_saved"] = False  # stopped by a limit: this run's changes are gone
    return fields


class SkillRunHost(Protocol):
    """What skill_run needs from the turn."""

    active: ActiveSkills
    skills: Mapping[str, SkillSpec]  # the turn's skills fetched in full so far
    skill_names: Sequence[str]  # every skill of the Ghost (catalog and search included)
    skill_runner: SkillRunner | None

    def emit(self, event: Event) -> None: ...


class HostContext(Protocol):
    @property
    def session(self) -> SkillRunHost: ...


async def skill_run(
    host: SkillRunHost,
    skill: str,
    command: str,
    output_files: Sequence[str] | None = None,
    seconds: float | None = None,
) -> str:
    """Run `command` for `skill`; the result as JSON. Every refusal raises `ToolException`."""
    runner = host.skill_runner
    if runner is None:
        raise ToolException("Running commands is not available in this conversation.")
    if skill not in host.skills and skill not in host.skill_names:
        raise ToolException(f"Unknown skill {skill!r}.")
    spec = host.skills.get(skill)
    if spec is None or skill not in host.active:
        raise ToolException(f"Skill {skill!r} is not active: load it with load_skill first.")
    if not runner.may_run(spec):
        raise ToolException(
            f"Skill {skill!r} is a user's own skill; this server runs scripts of public skills "
            "only (the operator has not enabled user skills in the sandbox)."
        )
    patterns = _checked_arguments(command, output_files, seconds)
    try:
        result = await runner.run(spec, command, patterns, seconds, host.emit)
    except SandboxUnavailable as exc:
        raise ToolException(exc.message) from exc
    host.active.touch(skill)
    return json.dumps(result, ensure_ascii=False)


def _checked_arguments(
    command: str, output_files: Sequence[str] | None, seconds: float | None
) -> list[str]:
    if not isinstance(command, str) or not command.strip():
        raise ToolException("command must be a non-empty shell command.")
    if len(command) > MAX_COMMAND_CHARS:
        raise ToolException(f"command is longer than {MAX_COMMAND_CHARS} characters.")
    patterns = list(output_files or [])
    if len(patterns) > MAX_PATTERNS or not all(isinstance(p, str) for p in patterns):
        raise ToolException(f"output_files must be at most {MAX_PATTERNS} glob patterns.")
    if seconds is not None and (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or math.isnan(seconds)
        or seconds <= 0
    ):
        raise ToolException("timeout must be a positive number of seconds.")
    return patterns


PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "skill": {"type": "string", "description": "The active skill whose files to use."},
        "command": {"type": "string", "description": "The shell command to run."},
        "output_files": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Glob patterns (relative to the workspace) of further files to "
            "return; everything under $OUTPUT_DIR is returned anyway.",
        },
        "timeout": {
            "type": "number",
            "description": "Seconds before the command is killed (capped by the server).",
        },
    },
    "required": ["skill", "command"],
}


async def _run(
    skill: str,
    command: str,
    runtime: ToolRuntime,
    output_files: list[str] | None = None,
    timeout: float | None = None,  # noqa: ASYNC109 - the tool's argument, named by the issue
) -> str:
    host = cast(HostContext, runtime.context).session
    return await skill_run(host, skill, command, output_files, timeout)


SKILL_RUN: BaseTool = StructuredTool(
    name=SKILL_RUN_TOOL,
    description=DESCRIPTION,
    args_schema=PARAMETERS,  # checked in skill_run; the runtime never goes through pydantic
    coroutine=_run,
    handle_tool_error=True,
)
