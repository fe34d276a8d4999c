"""Splitting SKILL.md into its YAML frontmatter and the Markdown body (the skill's prompt).

The frontmatter sits between a first line `---` and the next line that is exactly `---`; a
`---` inside a value is not a delimiter. Tolerated: a UTF-8 BOM, CRLF line endings, spaces or
tabs after a delimiter and a missing final newline. Line numbers in errors count from the first
line of SKILL.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from backend.skills.errors import ErrorCode, PackageError
from backend.skills.safe_yaml import YamlError, load_yaml

_BOM = b"\xef\xbb\xbf"
_DELIMITER = re.compile(r"^---[ \t]*$", re.MULTILINE)
# Without aliases the expanded size stays under ~2x the text; aliases may reuse, not multiply.
EXPANSION_FACTOR = 4


@dataclass(frozen=True)
class SkillMarkdown:
    frontmatter: dict[str, Any]
    raw_scalars: dict[str, str]  # top-level numbers/booleans as written, see safe_yaml
    body: str


def parse_skill_md(data: bytes, *, entry: str, max_frontmatter_bytes: int) -> SkillMarkdown:
    """Decode and split SKILL.md; `entry` names it in errors."""
    text = _decode(data, entry)
    opening = _DELIMITER.match(text)
    if opening is None:
        raise PackageError(
            ErrorCode.INVALID_FRONTMATTER,
            "SKILL.md must start with a '---' line opening the YAML frontmatter",
            entry=entry,
        )
    closing = _DELIMITER.search(text, opening.end())
    if closing is None:
        raise PackageError(
            ErrorCode.INVALID_FRONTMATTER,
            "the YAML frontmatter of SKILL.md is not closed by a '---' line",
            entry=entry,
        )
    yaml_text = text[opening.end() + 1 : closing.start()]
    size = len(yaml_text.encode())
    if size > max_frontmatter_bytes:
        raise PackageError(
            ErrorCode.FRONTMATTER_TOO_LARGE,
            f"frontmatter is {size} bytes, at most {max_frontmatter_bytes} are allowed",
            entry=entry,
            limit=max_frontmatter_bytes,
        )
    try:
        loaded = load_yaml(yaml_text, max_expanded=EXPANSION_FACTOR * max_frontmatter_bytes)
    except YamlError as exc:
        line = None if exc.line is None else exc.line + 1  # + the opening '---' line
        code = ErrorCode.FRONTMATTER_TOO_COMPLEX if exc.too_complex else ErrorCode.YAML_ERROR
        where = "" if line is None else f" at line {line}"
        raise PackageError(code, f"frontmatter{where}: {exc}", entry=entry, line=line) from exc
    if not isinstance(loaded.value, dict):
        kind = "empty" if loaded.value is None else f"a {type(loaded.value).__name__}"
        raise PackageError(
            ErrorCode.INVALID_FRONTMATTER,
            f"the frontmatter must be a YAML mapping, not {kind}",
            entry=entry,
        )
    return SkillMarkdown(loaded.value, loaded.raw_scalars, text[closing.end() :].strip())


def _decode(data: bytes, entry: str) -> str:
    bom = len(_BOM) if data.startswith(_BOM) else 0
    try:
        text = data[bom:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start + bom
        raise PackageError(
            ErrorCode.INVALID_UTF8,
            f"{entry} is not valid UTF-8 (byte offset {offset})",
            entry=entry,
            offset=offset,
        ) from exc
    return text.replace("\r\n", "\n")
