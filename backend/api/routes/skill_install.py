"""`POST /namespaces/{ns}/skills/install`: a skill package a conversation's turn wrote becomes
one of the caller's skills, under every upload rule, with its source in `status.source`."""

# No `from __future__ import annotations`: FastAPI resolves the Annotated dependencies.
from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from backend.api.deps import CurrentUser, SessionDep, SettingsDep
from backend.api.resources import QUOTA_SKILLS, crd_errors, crd_response, own_scope
from backend.artifacts import store
from backend.artifacts.packages import package_zip
from backend.chat import conversations
from backend.crd.skill import Skill
from backend.db.types import NoNul
from backend.kinds.store import Scope
from backend.skills import service
from backend.skills.limits import ArchiveLimits

router = APIRouter(prefix="/namespaces/{namespace}/skills", tags=["skills"])


class SkillInstall(BaseModel):
    conversation: Annotated[str, NoNul] = Field(
        min_length=1, max_length=36, description="the caller's conversation"
    )
    artifact: Annotated[str, NoNul] = Field(
        min_length=1, max_length=36, description="its artifact: a ZIP or tar"
    )


@router.post(
    "/install",
    status_code=201,
    response_model=Skill,
    responses=crd_errors(
        (
            404,
            "no such conversation of the caller, or no such artifact in it "
            "(`conversation_not_found`, `artifact_not_found`)",
        ),
        (409, "a skill of that name exists (`skill_exists`)"),
        413,
        422,
        QUOTA_SKILLS,
        own=True,
    ),
)
async def install_skill(
    body: SkillInstall,
    scope: Annotated[Scope, Depends(own_scope)],
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    strict: bool = False,
) -> JSONResponse:
    """Install the skill package a turn wrote (a ZIP, or a tar of the skill's folder) into the
    namespace; the same checks and error codes as an upload."""
    await conversations.get(session, user.id, body.conversation)
    artifact = await store.get(session, body.conversation, body.artifact, with_data=True)
    data = package_zip(artifact.data, ArchiveLimits.from_settings(settings))
    source = {"type": "artifact", "conversation": body.conversation, "artifact": artifact.id}
    crd = await service.create(
        session,
        settings,
        scope,
        data,
        strict=strict,
        actor=user.id,
        source=source,
        source_in_status=True,
    )
    return crd_response(crd, 201)
