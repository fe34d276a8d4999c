"""The output files of a `skill_run`: what is returned, with MIME types, small text inline."""

from __future__ import annotations

import mimetypes
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from fnmatch import fnmatchcase
from pathlib import PurePosixPath
from typing import Any

from chat_shell.sandbox import OUTPUT_DIR, WORKSPACE_DIR, Workspace

MAX_OUTPUT_FILES = 50
INLINE_FILE_BYTES = 16 * 1024  # a text file up to this size comes back inline...
INLINE_TOTAL_BYTES = 64 * 1024  # ...while the run's inline text stays under this
TEXT_TYPES = frozenset(
    {"application/json", "application/xml", "application/javascript", "application/x-yaml"}
)
OUTPUT_PREFIX = PurePosixPath(OUTPUT_DIR).relative_to(WORKSPACE_DIR).as_posix() + "/"


@dataclass(frozen=True)
class OutputFile:
    path: str  # relative to the workspace, e.g. "out/report.csv"
    mime_type: str
    size: int
    content: str | None = None  # the text itself, when small enough to come inline

    def as_dict(self) -> dict[str, Any]:
        found = asdict(self)
        if self.content is None:
            del found["content"]
        return found


def normalize_pattern(pattern: str) -> str:
    """A pattern relative to the workspace: `$OUTPUT_DIR/x`, `/workspace/x` and `./x` work."""
    pattern = pattern.strip()
    for prefix, replacement in (
        ("$OUTPUT_DIR/", OUTPUT_PREFIX),
        ("${OUTPUT_DIR}/", OUTPUT_PREFIX),
        ("$WORKSPACE_DIR/", ""),
        ("${WORKSPACE_DIR}/", ""),
        (WORKSPACE_DIR + "/", ""),
        ("./", ""),
    ):
        if pattern.startswith(prefix):
            return replacement + pattern.removeprefix(prefix)
    return pattern


def collect_outputs(workspace: Workspace, patterns: Sequence[str]) -> tuple[list[OutputFile], bool]:
    """Every file under the output folder plus those matching `patterns` (fnmatch on the path
    relative to the workspace, `*` crossing folders); True when more than the cap matched."""
    wanted = [normalize_pattern(p) for p in patterns]
    matched = [
        f
        for f in workspace.files()
        if f.path.startswith(OUTPUT_PREFIX) or any(fnmatchcase(f.path, p) for p in wanted)
    ]
    budget = INLINE_TOTAL_BYTES
    outputs: list[OutputFile] = []
    for found in matched[:MAX_OUTPUT_FILES]:
        mime = mimetypes.guess_type(found.path, strict=False)[0]
        content = None
        if found.size <= min(INLINE_FILE_BYTES, budget) and (mime is None or _is_text(mime)):
            data = workspace.read(found.path, max_bytes=INLINE_FILE_BYTES)
            try:
                content = data.decode("utf-8")
            except UnicodeDecodeError:
                content = None
            else:
                budget -= len(data)
                mime = mime or "text/plain"
        outputs.append(
            OutputFile(found.path, mime or "application/octet-stream", found.size, content)
        )
    return outputs, len(matched) > MAX_OUTPUT_FILES


def _is_text(mime: str) -> bool:
    return mime.startswith("text/") or mime in TEXT_TYPES or mime.endswith(("+json", "+xml"))
