"""Read one uploaded file (a user's input for the sandbox) with its name, capped while streaming.

`multipart/form-data` (field `file`, its filename the name unless `?name=` says otherwise) or a
raw body of any other type with `?name=`. Over `limit` bytes: 413 `file_too_large` at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request
from python_multipart.multipart import parse_options_header

from backend.api.upload import FILE_FIELD, Chunks, MultipartFile
from backend.errors import PayloadTooLarge


@dataclass(frozen=True)
class UploadedFile:
    name: str | None  # as sent; checked by the caller
    data: bytes
    sha256: str  # taken by this process as the bytes arrived


def _check(size: int, limit: int) -> None:
    if size > limit:
        raise too_large(limit)


def too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"the file is larger than {limit} bytes",
        code="file_too_large",
        details={"limit_bytes": limit},
    )


async def read_file(request: Request, limit: int, name: str | None) -> UploadedFile:
    content_type, options = parse_options_header(request.headers.get("content-type", ""))
    if content_type != b"multipart/form-data":
        raw = Chunks()
        async for chunk in request.stream():
            raw.add(chunk)
            _check(raw.size, limit)
        received = raw.received()
        return UploadedFile(name, received.data, received.sha256)
    part = MultipartFile(options.get(b"boundary", b""), lambda size: _check(size, limit))
    async for chunk in request.stream():
        part.write(chunk)
    file = part.file()
    return UploadedFile(name or part.filename, file.data, file.sha256)


FILE_BODY_OPENAPI = {
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
            "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
        },
    }
}
