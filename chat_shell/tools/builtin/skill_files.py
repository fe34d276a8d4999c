"""`list_skill_files(skill)` and `read_skill_file(skill, path, offset?, limit?)`: level 3.

A loaded skill's resources (`references/`, `scripts/`, `assets/`...) are read on demand, from the
skill's stored package through the one package reader (`chat_shell.packages`), so a path means
exactly what it means on upload and in the file API: only the package's own files resolve, and
unsafe or ignored names are refused before the package is opened. Only skills active in the turn
are readable. Reading is not executing, so users' own skills get these tools too.

Text comes back in pages: `offset` and `limit` count bytes of the file's UTF-8 text (the unit of
`size`), a page never splits a character, and `limit` is capped by the host's setting. A binary
file (not UTF-8, or holding a NUL byte) comes back as its type and size, never its bytes.

A file up to `WHOLE_FILE_BYTES` is read whole, judged whole, and kept for the next page; a
larger one (a package may hold a file of up to 100 MiB) is never held: each page inflates the
file only up to the page's end and keeps just the page, and the file counts as binary when its
first `SNIFF_BYTES` hold a NUL byte or the page is not UTF-8.

One tool object each serves every turn (like load_skill); they find their turn through the
injected runtime, and the turn's `SkillFileReader` keeps each opened package for the turn.
"""

# No `from __future__ import annotations`: LangChain resolves the tool function's type hints.

import asyncio
import json
import mimetypes
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

from langchain.tools import ToolRuntime
from langchain_core.tools import BaseTool, StructuredTool, ToolException

from chat_shell.contracts import SkillSpec
from chat_shell.errors import ChatShellError
from chat_shell.packages import SKILL_MD_NAMES, Package, is_ignored, open_package, path_problem
from chat_shell.ports import PackageSource
from chat_shell.skills.active import ActiveSkills

LIST_SKILL_FILES_TOOL = "list_skill_files"
READ_SKILL_FILE_TOOL = "read_skill_file"

LIST_DESCRIPTION = (
    "List the files of an active skill (load it first): its references, scripts and assets, "
    "with their sizes in bytes. Read one with read_skill_file."
)
READ_DESCRIPTION = (
    "Read a file of an active skill (load it first) by its path in the skill, e.g. "
    "`references/guide.md`. Text comes back in pages: `offset` and `limit` count bytes of the "
    "UTF-8 text (the page size is capped by the server, 32 KiB by default); continue from "
    "`next_offset` until it is null. A binary file comes back as its type and size only."
)


def has_resources(skill: SkillSpec) -> bool:
    """Whether the skill lists files besides SKILL.md (the tools are offered for those)."""
    return skill.sha256 is not None and any(f.path not in SKILL_MD_NAMES for f in skill.files)


WHOLE_FILE_BYTES = 1024 * 1024  # files up to this size are read whole and kept for paging
SNIFF_BYTES = 8192  # a larger file's start, where a NUL byte makes it binary (as git judges)
_LOOKAHEAD = 8  # bytes read past a page's end: moving its ends to character boundaries


@dataclass(frozen=True)
class _Bytes:
    """Bytes of one file from `base` on: all of it (`whole`), or a window around a page."""

    size: int
    base: int
    data: bytes
    whole: bool


class SkillFileReader:
    """The turn's reads: each package opened once (by sha256), the last small file read kept
    so paging through it does not inflate it again, and the per-call cap."""

    def __init__(self, source: PackageSource, max_bytes: int) -> None:
        self._source = source
        self.max_bytes = max_bytes
        self._packages: dict[str, asyncio.Task[Package]] = {}
        self._last: tuple[str, str, bytes] | None = None

    async def package(self, sha256: str) -> Package:
        task = self._packages.get(sha256)
        if task is None:
            task = self._packages[sha256] = asyncio.create_task(self._open(sha256))
        try:
            return await asyncio.shield(task)
        except ChatShellError:
            self._packages.pop(sha256, None)  # not kept: the next call tries again
            raise

    async def read(self, sha256: str, path: str, offset: int, limit: int) -> _Bytes | None:
        """The bytes a page at `offset` needs; None when the file is binary (by its start)."""
        if self._last is not None and self._last[:2] == (sha256, path):
            data = self._last[2]
            return _Bytes(len(data), 0, data, whole=True)
        package = await self.package(sha256)
        listed = package.files.get(path)  # `files` builds its mapping on each access
        size = listed.size if listed is not None else 0
        if size <= WHOLE_FILE_BYTES:  # unknown paths too: `read` says file_not_found
            data = await asyncio.to_thread(package.read, path)
            self._last = (sha256, path, data)
            return _Bytes(len(data), 0, data, whole=True)
        head = await asyncio.to_thread(package.read_range, path, 0, SNIFF_BYTES)
        if b"\x00" in head:
            return None
        stop = offset + limit + _LOOKAHEAD
        window = await asyncio.to_thread(package.read_range, path, offset, stop)
        return _Bytes(size, offset, window, whole=False)

    async def _open(self, sha256: str) -> Package:
        data = await self._source.get(sha256)
        return await asyncio.to_thread(open_package, data, self._source.limits)


class SkillFilesHost(Protocol):
    """What the file tools need from the turn."""

    active: ActiveSkills
    skills: Mapping[str, SkillSpec]  # the turn's skills fetched in full so far
    skill_names: Sequence[str]  # every skill of the Ghost (catalog and search included)
    skill_files: SkillFileReader


class HostContext(Protocol):
    @property
    def session(self) -> SkillFilesHost: ...


def _active_package_skill(host: SkillFilesHost, skill: object) -> tuple[str, str]:
    """(name, sha256) of an active skill with a package; every refusal a `ToolException`."""
    if not isinstance(skill, str) or (skill not in host.skills and skill not in host.skill_names):
        raise ToolException(f"Unknown skill {skill!r}.")
    if skill not in host.active or skill not in host.skills:
        raise ToolException(f"Skill {skill!r} is not active: load it with load_skill first.")
    sha256 = host.skills[skill].sha256
    if sha256 is None:
        raise ToolException(f"Skill {skill!r} has no files besides its instructions.")
    return skill, sha256


def _checked_path(path: object) -> str:
    """The upload's rules for names, before any package is opened."""
    if not isinstance(path, str):
        raise ToolException("path must be a string, the file's path inside the skill.")
    problem = path_problem(path)
    if problem is not None:
        raise ToolException(f"Unsafe path {path!r}: {problem}. Use a path from list_skill_files.")
    if is_ignored(path):
        raise ToolException(
            f"{path!r} is not part of the skill: dot-files and __MACOSX/ are never packaged."
        )
    return path


def _tool_error(exc: ChatShellError) -> ToolException:
    return ToolException(f"{exc.message} ({exc.code})")


async def list_skill_files(host: SkillFilesHost, skill: str) -> str:
    """The active skill's files as JSON `{skill, files: [{path, size}]}`."""
    name, sha256 = _active_package_skill(host, skill)
    try:
        package = await host.skill_files.package(sha256)
    except ChatShellError as exc:
        raise _tool_error(exc) from exc
    host.active.touch(name)
    files = [{"path": f.path, "size": f.size} for f in package.files.values()]
    return json.dumps({"skill": name, "files": files}, ensure_ascii=False)


async def read_skill_file(
    host: SkillFilesHost, skill: str, path: str, offset: object = 0, limit: object = None
) -> str:
    """One page of an active skill's file as JSON (see the module docstring)."""
    name, sha256 = _active_package_skill(host, skill)
    path = _checked_path(path)
    start = _non_negative_int("offset", 0 if offset is None else offset)
    cap = host.skill_files.max_bytes
    size = cap if limit is None else min(_non_negative_int("limit", limit), cap)
    if size < 1:
        raise ToolException("limit must be at least 1 byte.")
    try:
        found = await host.skill_files.read(sha256, path, start, size)
    except ChatShellError as exc:
        raise _tool_error(exc) from exc
    host.active.touch(name)
    page = None if found is None or (found.whole and _is_binary(found.data)) else found
    result = _page(path, page, start, size) if page is not None else None
    if result is None:  # binary: by the whole file, its start, or the page itself
        kind = mimetypes.guess_type(path)[0] or "application/octet-stream"
        total = found.size if found is not None else await _size(host, sha256, path)
        result = {"path": path, "size": total, "type": kind, "binary": True}
    return json.dumps(result, ensure_ascii=False)


async def _size(host: SkillFilesHost, sha256: str, path: str) -> int:
    return (await host.skill_files.package(sha256)).files[path].size


def _non_negative_int(field: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ToolException(f"{field} must be a whole number of bytes, 0 or more.")
    return value


def _is_binary(data: bytes) -> bool:
    if b"\x00" in data:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _page(path: str, found: _Bytes, offset: int, limit: int) -> dict[str, Any] | None:
    """Bytes [offset, offset + limit) of the file, moved to character boundaries: an offset
    inside a character starts at the next one, the end backs off to the last whole character
    (a page always holds at least one character). None when the page is not UTF-8."""
    size, base, data = found.size, found.base, found.data
    if offset > size:
        raise ToolException(f"offset {offset} is past the end of {path!r} ({size} bytes).")

    def continuation(index: int) -> bool:  # within the bytes read (see `_LOOKAHEAD`)
        at = index - base
        return 0 <= at < len(data) and data[at] & 0xC0 == 0x80

    while continuation(offset):
        offset += 1
    end = min(offset + limit, size)
    while end > offset and continuation(end):
        end -= 1
    if end == offset < size:  # the first character is longer than `limit`
        end += 1
        while continuation(end):
            end += 1
    try:
        content = data[offset - base : end - base].decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not found.whole and "\x00" in content:
        return None
    return {
        "path": path,
        "size": size,
        "offset": offset,
        "next_offset": end if end < size else None,
        "content": content,
    }


LIST_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"skill": {"type": "string", "description": "The active skill's name."}},
    "required": ["skill"],
}
READ_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "skill": {"type": "string", "description": "The active skill's name."},
        "path": {"type": "string", "description": "The file's path inside the skill."},
        "offset": {
            "type": "integer",
            "minimum": 0,
            "description": "Byte offset to start at (0 by default; use next_offset).",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "description": "Most bytes to return (capped by the server).",
        },
    },
    "required": ["skill", "path"],
}


async def _list(skill: str, runtime: ToolRuntime) -> str:
    return await list_skill_files(cast(HostContext, runtime.context).session, skill)


async def _read(
    skill: str,
    path: str,
    runtime: ToolRuntime,
    offset: int | None = None,
    limit: int | None = None,
) -> str:
    host = cast(HostContext, runtime.context).session
    return await read_skill_file(host, skill, path, offset, limit)


# JSON schemas, not models: arguments reach the functions as given (checked there) and the
# injected runtime is never pushed through pydantic.
LIST_SKILL_FILES: BaseTool = StructuredTool(
    name=LIST_SKILL_FILES_TOOL,
    description=LIST_DESCRIPTION,
    args_schema=LIST_PARAMETERS,
    coroutine=_list,
    handle_tool_error=True,
)
READ_SKILL_FILE: BaseTool = StructuredTool(
    name=READ_SKILL_FILE_TOOL,
    description=READ_DESCRIPTION,
    args_schema=READ_PARAMETERS,
    coroutine=_read,
    handle_tool_error=True,
)
