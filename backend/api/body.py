"""Small request bodies (JSON, YAML) read with a size cap, refused at the cap while streaming."""

from __future__ import annotations

import asyncio
import json
from typing import Any, NoReturn

from fastapi import Request

from backend.errors import InvalidRequest, PayloadTooLarge

JSON_TYPES = frozenset({"application/json"})
# Bodies up to this size parse faster than a hop to a worker thread costs.
INLINE_PARSE_BYTES = 64 * 1024
YAML_TYPES = frozenset({"application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml"})


def media_type(request: Request) -> str:
    return request.headers.get("content-type", "").partition(";")[0].strip().lower()


def unsupported(expected: str) -> InvalidRequest:
    return InvalidRequest(
        f"send the body as {expected}", code="unsupported_media_type", status_code=415
    )


async def read_body(request: Request, limit: int) -> bytes:
    too_large = PayloadTooLarge(
        f"the body exceeds the {limit} byte limit",
        code="body_too_large",
        details={"limit_bytes": limit},
    )
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise too_large  # refused before reading a byte
    data = bytearray()
    async for chunk in request.stream():
        data.extend(chunk)
        if len(data) > limit:
            raise too_large
    return bytes(data)


def _no_constants(name: str) -> NoReturn:
    # NaN and Infinity are not JSON and PostgreSQL's json type refuses them.
    raise ValueError(f"{name} is not valid JSON")


def parse_json(data: bytes) -> Any:
    try:
        return json.loads(data, parse_constant=_no_constants)
    except json.JSONDecodeError as exc:
        raise InvalidRequest(
            f"the body is not valid JSON: {exc.msg}", code="invalid_json"
        ) from None
    except (ValueError, RecursionError) as exc:  # bad encoding, NaN, nesting too deep
        message = str(exc) if isinstance(exc, ValueError) else "nested too deeply"
        raise InvalidRequest(
            f"the body is not valid JSON: {message}", code="invalid_json"
        ) from None


async def read_json(request: Request, limit: int) -> Any:
    if media_type(request) not in JSON_TYPES:
        raise unsupported("application/json")
    data = await read_body(request, limit)
    if len(data) <= INLINE_PARSE_BYTES:
        return parse_json(data)
    return await asyncio.to_thread(parse_json, data)  # large: off the event loop
