"""Read an uploaded skill archive from the request body, refusing oversize bodies while streaming.

Accepts `multipart/form-data` (field `file`) or a raw `application/zip` body. The archive is
held in memory only up to the configured cap; a larger body is refused with 413 as soon as the
cap is crossed, without reading the rest.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from fastapi import Request
from python_multipart.multipart import MultipartParser, parse_options_header

from backend.errors import InvalidRequest, SkillhiveError
from backend.skills.limits import ArchiveLimits
from backend.skills.package import check_archive_size

FILE_FIELD = "file"
# Room for multipart boundaries, part headers and small fields around the archive itself.
MULTIPART_OVERHEAD = 64 * 1024
RAW_TYPES = {b"application/zip", b"application/octet-stream", b"application/x-zip-compressed"}


class Chunks:
    """A body's bytes as they arrive, joined once at the end, and their SHA-256 taken as they
    arrive. Growing one buffer and copying it out made two fresh buffers of the body's size: on
    a 10 MiB upload their first touch (page faults) and copies cost about as much as parsing the
    multipart body. Hashing each chunk between the network's reads takes the digest off the
    path after the last byte (about 7 ms for 10 MiB here)."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._hash = hashlib.sha256()
        self.size = 0

    def add(self, chunk: bytes) -> None:
        self._parts.append(chunk)
        self._hash.update(chunk)
        self.size += len(chunk)

    def join(self) -> bytes:
        return b"".join(self._parts)

    def received(self) -> Received:
        return Received(self.join(), self._hash.hexdigest())


@dataclass(frozen=True)
class Received:
    """Uploaded bytes and their SHA-256, computed by this process as they arrived."""

    data: bytes
    sha256: str


class MultipartFile:
    """Collects the bytes (and filename) of the part named `file` as they arrive; `check` gets
    the running size and raises when it is too large. Shared by every upload reader."""

    def __init__(self, boundary: bytes, check: Callable[[int], None]) -> None:
        self.check = check
        self.data = Chunks()
        self.found = False
        self.filename: str | None = None
        self._in_file = False
        self._header_field = bytearray()
        self._header_value = bytearray()
        self._disposition = b""
        self.parser = MultipartParser(
            boundary,
            {
                "on_part_begin": self._part_begin,
                "on_header_field": lambda d, s, e: self._header_field.extend(d[s:e]),
                "on_header_value": lambda d, s, e: self._header_value.extend(d[s:e]),
                "on_header_end": self._header_end,
                "on_headers_finished": self._headers_finished,
                "on_part_data": self._part_data,
            },
            max_header_count=16,
        )

    def write(self, chunk: bytes) -> None:
        try:
            self.parser.write(chunk)
        except SkillhiveError:  # the size check's own answer
            raise
        except Exception as exc:  # python-multipart raises its own parse errors
            raise InvalidRequest(
                f"malformed multipart body: {exc}", code="malformed_multipart"
            ) from exc

    def file(self) -> Received:
        if not self.found:
            raise InvalidRequest(f"multipart field '{FILE_FIELD}' is missing", code="file_missing")
        return self.data.received()

    def _part_begin(self) -> None:
        self._in_file = False
        self._disposition = b""

    def _header_end(self) -> None:
        if bytes(self._header_field).lower() == b"content-disposition":
            self._disposition = bytes(self._header_value)
        self._header_field.clear()
        self._header_value.clear()

    def _headers_finished(self) -> None:
        _, options = parse_options_header(self._disposition)
        self._in_file = options.get(b"name") == FILE_FIELD.encode() and not self.found
        if self._in_file:
            self.found = True
            raw = options.get(b"filename")
            self.filename = raw.decode("utf-8", "replace") if raw is not None else None

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        if self._in_file:
            self.data.add(data[start:end])
            self.check(self.data.size)


async def read_archive(request: Request, limits: ArchiveLimits) -> Received:
    """The archive's bytes and digest; 413 `archive_too_large` (the package reader's own
    check) as soon as the body is known to be over the cap. The body may exceed the archive by
    the multipart overhead, so `received - overhead` is a lower bound of the archive's size."""
    content_type, options = parse_options_header(request.headers.get("content-type", ""))
    multipart = content_type == b"multipart/form-data"
    if not multipart and content_type not in RAW_TYPES:
        raise InvalidRequest(
            "send the archive as multipart/form-data (field 'file') or as application/zip",
            code="unsupported_media_type",
            status_code=415,
        )
    overhead = MULTIPART_OVERHEAD if multipart else 0
    declared = request.headers.get("content-length")
    if declared and declared.isdigit():
        check_archive_size(int(declared) - overhead, limits)  # refused before reading a byte

    received = 0
    boundary = options.get(b"boundary", b"")
    collector = (
        MultipartFile(boundary, lambda size: check_archive_size(size, limits))
        if multipart
        else None
    )
    raw = Chunks()
    async for chunk in request.stream():
        received += len(chunk)
        check_archive_size(received - overhead, limits)
        if collector is not None:
            collector.write(chunk)
        else:
            raw.add(chunk)
    archive = raw.received() if collector is None else collector.file()
    if not archive.data:
        raise InvalidRequest("the archive is empty", code="not_a_zip")
    return archive


# OpenAPI description of the request body (the body is parsed by hand to enforce the cap).
ARCHIVE_BODY_OPENAPI = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": [FILE_FIELD],
                    "properties": {FILE_FIELD: {"type": "string", "format": "binary"}},
                }
            },
            "application/zip": {"schema": {"type": "string", "format": "binary"}},
        },
    }
}
