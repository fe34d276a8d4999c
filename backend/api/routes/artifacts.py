"""A conversation's files: artifacts its turns wrote, and files its owner uploads for them.

Owner-only like the conversation: anyone else's conversation is 404 `conversation_not_found`.
Downloads are always attachments, and types a browser could run (HTML, SVG, scripts) are
served as `application/octet-stream` with `nosniff` and a sandboxing CSP.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request, Response
from pydantic import BaseModel, Field

from backend.api.deps import CurrentUser, SessionDep, SettingsDep, TextId
from backend.api.errors import errors
from backend.api.file_upload import FILE_BODY_OPENAPI, read_file
from backend.artifacts import store
from backend.artifacts.names import check_file_name, content_disposition, served_type
from backend.chat import conversations
from backend.db.models import ConversationArtifact

router = APIRouter(prefix="/conversations", tags=["conversations"])

# 422: an id that cannot be one (NUL, over 64 characters: `TextId`)
_NOT_FOUND = errors((404, "no such conversation of the caller (`conversation_not_found`)"), 422)


class ArtifactOut(BaseModel):
    id: str
    conversation_id: str
    message_id: int | None = Field(description="the user message of the turn that wrote it")
    kind: Literal["output", "input"] = Field(
        description="`output`: a skill_run wrote it; `input`: the owner uploaded it"
    )
    name: str
    mime_type: str
    size: int
    sha256: str
    created_at: datetime
    url: str = Field(description="where the owner downloads it")


class ArtifactList(BaseModel):
    items: list[ArtifactOut]  # newest first


def _out(row: ConversationArtifact) -> ArtifactOut:
    return ArtifactOut(
        id=row.id,
        conversation_id=row.conversation_id,
        message_id=row.message_id,
        kind=row.kind,
        name=row.name,
        mime_type=row.mime_type,
        size=row.size,
        sha256=row.sha256,
        created_at=row.created_at,
        url=store.artifact_url(row.conversation_id, row.id),
    )


@router.get("/{conversation_id}/artifacts", responses=_NOT_FOUND)
async def list_artifacts(
    conversation_id: TextId,
    user: CurrentUser,
    session: SessionDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> ArtifactList:
    """The conversation's files, newest first: outputs of its turns and uploaded inputs."""
    await conversations.get(session, user.id, conversation_id)
    rows = await store.listing(session, conversation_id, limit=limit)
    return ArtifactList(items=[_out(r) for r in rows])


@router.get(
    "/{conversation_id}/artifacts/{artifact_id}",
    response_class=Response,
    responses={
        200: {
            "description": "the file as an attachment; HTML, SVG, scripts and unknown types "
            "as `application/octet-stream`",
            "content": {"*/*": {}},
        },
        **errors(
            (
                404,
                "no such conversation of the caller, or no such artifact in it "
                "(`conversation_not_found`, `artifact_not_found`)",
            ),
            422,
        ),
    },
)
async def download_artifact(
    conversation_id: TextId, artifact_id: TextId, user: CurrentUser, session: SessionDep
) -> Response:
    await conversations.get(session, user.id, conversation_id)
    row = await store.get(session, conversation_id, artifact_id, with_data=True)
    headers = {
        "Content-Disposition": content_disposition(row.name),
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": "sandbox; default-src 'none'",
        "ETag": f'"{row.sha256}"',
        "Cache-Control": "private, no-cache",
    }
    return Response(row.data, media_type=served_type(row.mime_type), headers=headers)


@router.post(
    "/{conversation_id}/files",
    status_code=201,
    responses={
        **_NOT_FOUND,
        **errors(
            (
                413,
                "the file is over `SKILLHIVE_CONVERSATION_FILE_MAX_BYTES` (`file_too_large`) "
                "or the conversation's files over `SKILLHIVE_CONVERSATION_FILES_BYTES` "
                "(`conversation_files_full`)",
            ),
            (422, "no usable file name (`invalid_file_name`), or a malformed body"),
        ),
    },
    openapi_extra=FILE_BODY_OPENAPI,
)
async def upload_file(
    conversation_id: TextId,
    request: Request,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    name: Annotated[str | None, Query(max_length=300)] = None,
) -> ArtifactOut:
    """Upload a file for the conversation's next turns: their sandbox workspace holds it at
    `$WORKSPACE_DIR/inputs/<name>`. A file of the same name is replaced. Send it as
    multipart (field `file`; its filename, unless `name` is given) or as a raw body with
    `name`."""
    await conversations.get(session, user.id, conversation_id)
    uploaded = await read_file(request, settings.conversation_file_max_bytes, name)
    file_name = check_file_name(uploaded.name or "")
    row = await store.put_input(
        session,
        conversation_id,
        file_name,
        uploaded.data,
        total_limit=settings.conversation_files_bytes,
        sha256=uploaded.sha256,
    )
    await session.commit()
    return _out(row)


@router.get("/{conversation_id}/files", responses=_NOT_FOUND)
async def list_files(
    conversation_id: TextId,
    user: CurrentUser,
    session: SessionDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> ArtifactList:
    """The uploaded files the conversation's workspace gets under `inputs/`, newest first."""
    await conversations.get(session, user.id, conversation_id)
    rows = await store.listing(session, conversation_id, (store.INPUT,), limit=limit)
    return ArtifactList(items=[_out(r) for r in rows])
