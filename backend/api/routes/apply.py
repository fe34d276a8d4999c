"""`POST /apply`: Ghost CRDs as multi-document YAML or a JSON list, applied all or nothing."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel

from backend.api.body import JSON_TYPES, YAML_TYPES, media_type, parse_json, read_body, unsupported
from backend.api.deps import CurrentUser, SessionDep, SettingsDep
from backend.api.errors import errors
from backend.crd.ghost import GhostWarning
from backend.errors import InvalidRequest
from backend.ghosts.apply import apply
from backend.skills.safe_yaml import YamlError, load_yaml_all

router = APIRouter(tags=["apply"])

MAX_APPLY_BYTES = 4 * 1024 * 1024
MAX_DOCUMENTS = 100
# Aliases may repeat nodes: what the YAML expands to is bounded like the body itself.
MAX_EXPANDED = 2 * MAX_APPLY_BYTES

_BODY_OPENAPI = {
    "requestBody": {
        "required": True,
        "content": {
            "application/yaml": {"schema": {"type": "string"}},
            "application/json": {"schema": {"type": "array", "items": {"type": "object"}}},
        },
    }
}


class Applied(BaseModel):
    kind: Literal["Ghost"]
    namespace: str
    name: str
    action: Literal["created", "configured", "unchanged"]
    warnings: list[GhostWarning]


class ApplyResult(BaseModel):
    items: list[Applied]


def parse_documents(data: bytes, media: str) -> list[Any]:
    """The documents of a YAML stream or a JSON list (or one JSON object)."""
    if media in YAML_TYPES:
        try:
            return load_yaml_all(
                data.decode("utf-8"), max_expanded=MAX_EXPANDED, max_documents=MAX_DOCUMENTS
            )
        except UnicodeDecodeError:
            raise InvalidRequest("YAML must be UTF-8", code="invalid_yaml") from None
        except YamlError as exc:
            where = f" (line {exc.line})" if exc.line else ""
            raise InvalidRequest(
                f"invalid YAML{where}: {exc}",
                code="yaml_too_complex" if exc.too_complex else "invalid_yaml",
                details={"line": exc.line},
            ) from None
    if media in JSON_TYPES:
        value = parse_json(data)
        documents = value if isinstance(value, list) else [value]
        if len(documents) > MAX_DOCUMENTS:
            raise InvalidRequest(
                f"at most {MAX_DOCUMENTS} objects per apply",
                code="too_many_documents",
                details={"limit": MAX_DOCUMENTS},
            )
        return documents
    raise unsupported("application/yaml (multi-document) or application/json (a list)")


@router.post(
    "/apply",
    response_model=ApplyResult,
    responses=errors(
        (403, "a document is in namespace `public` and the caller is no admin"),
        (409, "another request created one of the Ghosts meanwhile (`ghost_exists`); retry"),
        412,
        413,
        415,
        422,
        (429, "the caller's Ghosts quota is reached (`quota_ghosts`); nothing is written"),
    ),
    openapi_extra=_BODY_OPENAPI,
)
async def apply_objects(
    request: Request,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    dry_run: Annotated[bool, Query(alias="dryRun")] = False,
) -> Any:
    """Create or update each Ghost; per object its `action` (`created`, `configured` or
    `unchanged`) and the `warnings` its `status` shows. One refused object: the error names its
    `index` in `details`, and nothing is written. `dryRun=true` answers the same after every
    check and writes nothing."""
    media = media_type(request)
    if media not in YAML_TYPES | JSON_TYPES:
        raise unsupported("application/yaml (multi-document) or application/json (a list)")
    data = await read_body(request, MAX_APPLY_BYTES)
    # Up to 4 MiB of YAML takes seconds to parse: off the event loop, which keeps serving.
    documents = await asyncio.to_thread(parse_documents, data, media)
    items = await apply(
        session, user, documents, egress=settings.egress, dry_run=dry_run, settings=settings
    )
    return {"items": items}
