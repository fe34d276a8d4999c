"""Read one uploaded file (a user's input for the sandbox) with its name, capped while streaming.

`multipart/form-data` (field `file`, its filename the name unless `?name=` says otherwise) or a
raw body of any other type with `?name=`. Over `limit` bytes: 413 `file_too_large` at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request
from python_multipart.multipart import MultipartParser, parse_options_header

from backend.api.upload import FILE_FIELD
from backend.errors import InvalidRequest, PayloadTooLarge


@dataclass(frozen=True)
class UploadedFile:
    name: str | None  # as sent; checked by the caller
    data: bytes


def too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"the file is larger than {limit} bytes",
        code="file_too_large",
        details={"limit_bytes": limit},
    )


class _FilePart:
    def __init__(self, boundary: bytes, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.found = False
        self.filename: str | None = None
        self._in_file = False
        self._field = bytearray()
        self._value = bytearray()
        self._disposition = b""
        self.parser = MultipartParser(
            boundary,
            {
                "on_part_begin": self._part_begin,
                "on_header_field": lambda d, s, e: self._field.extend(d[s:e]),
                "on_header_value": lambda d, s, e: self._value.extend(d[s:e]),
                "on_header_end": self._header_end,
                "on_headers_finished": self._headers_finished,
                "on_part_data": self._part_data,
            },
            max_header_count=16,
        )

    def _part_begin(self) -> None:
        self._in_file = False
        self._disposition = b""

    def _header_end(self) -> None:
        if bytes(self._field).lower() == b"content-disposition":
            self._disposition = bytes(self._value)
        self._field.clear()
        self._value.clear()

    def _headers_finished(self) -> None:
        _, options = parse_options_header(self._disposition)
        self._in_file = options.get(b"name") == FILE_FIELD.encode() and not self.found
        if self._in_file:
            self.found = True
            raw = options.get(b"filename")
            self.filename = raw.decode("utf-8", "replace") if raw is not None else None

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        if self._in_file:
            self.data.extend(data[start:end])
            if len(self.data) > self.limit:
                raise too_large(self.limit)


async def read_file(request: Request, limit: int, name: str | None) -> UploadedFile:
    content_type, options = parse_options_header(request.headers.get("content-type", ""))
    if content_type != b"multipart/form-data":
        data = bytearray()
        async for chunk in request.stream():
            data.extend(chunk)
            if len(data) > limit:
                raise too_large(limit)
        return UploadedFile(name, bytes(data))
    part = _FilePart(options.get(b"boundary", b""), limit)
    async for chunk in request.stream():
        try:
            part.parser.write(chunk)
        except PayloadTooLarge:
            raise
        except Exception as exc:  # python-multipart raises its own parse errors
            raise InvalidRequest(
                f"malformed multipart body: {exc}", code="malformed_multipart"
            ) from exc
    if not part.found:
        raise InvalidRequest(f"multipart field '{FILE_FIELD}' is missing", code="file_missing")
    return UploadedFile(name or part.filename, bytes(part.data))


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
