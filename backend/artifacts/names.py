"""File names users and sandboxes choose: checked before storing, made safe before serving."""

from __future__ import annotations

import unicodedata
from urllib.parse import quote

from backend.errors import InvalidRequest

MAX_NAME_BYTES = 255
# Types served as themselves; anything else (HTML, SVG, XML, scripts, unknown) is served as
# application/octet-stream, so no artifact can run in the gateway's origin.
SAFE_TYPES = frozenset(
    {
        "text/plain",
        "text/csv",
        "text/markdown",
        "application/json",
        "application/pdf",
        "application/zip",
        "application/gzip",
        "application/x-tar",
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/webp",
    }
)


def _unsafe_char(char: str) -> bool:
    # Cc: control characters; Cf: format characters (e.g. right-to-left overrides);
    # Zl/Zp: line and paragraph separators.
    return unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp")


def check_file_name(name: str) -> str:
    """An uploaded file's name, flat and printable; 422 `invalid_file_name` otherwise."""
    problem = None
    if not name or name.strip() != name:
        problem = "must be non-empty, without leading or trailing spaces"
    elif name in (".", "..") or "/" in name or "\\" in name:
        problem = "must be a plain file name (no folders, '.' or '..')"
    elif any(_unsafe_char(c) for c in name):
        problem = "must not contain control or formatting characters"
    elif len(name.encode("utf-8")) > MAX_NAME_BYTES:
        problem = f"must be at most {MAX_NAME_BYTES} bytes long"
    if problem is not None:
        raise InvalidRequest(
            f"the file name {problem}", code="invalid_file_name", details={"name": name[:300]}
        )
    return name


def served_type(mime_type: str) -> str:
    if mime_type not in SAFE_TYPES:
        return "application/octet-stream"
    return mime_type + "; charset=utf-8" if mime_type.startswith("text/") else mime_type


def content_disposition(name: str) -> str:
    """`attachment` with the base name: an ASCII fallback and the UTF-8 name (RFC 6266)."""
    base = name.rsplit("/", 1)[-1]
    printable = "".join("_" if _unsafe_char(c) else c for c in base) or "download"
    fallback = "".join(c if c.isascii() and c not in '"\\;' else "_" for c in printable)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(printable, safe='')}"
