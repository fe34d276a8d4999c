"""MCP skill plans: `POST /namespaces/{ns}/skills/{name}/plan` and `.../plan/execute`.

Planning reads the skill only. Executing runs the skill's MCP tools, so it needs both the
operator's `SKILLHIVE_SKILL_PLAN_EXECUTION=true` and, in the body, a Ghost of the same namespace
with `allowPlanExecution: true` (the owner opting in per agent).
"""

# No `from __future__ import annotations`: FastAPI resolves the dependency signatures at runtime.
from contextlib import AsyncExitStack

from fastapi import APIRouter, Request
from langchain_core.language_models import BaseChatModel

from backend.api.deps import CurrentUser, SessionDep, SettingsDep
from backend.api.errors import errors
from backend.api.resources import own_scope
from backend.chat.builder import model_settings
from backend.crd.ghost import GhostModel
from backend.errors import Forbidden, InvalidRequest
from backend.ghosts.service import find as find_ghost
from backend.skills import plans, service
from chat_shell import open_chat_model

router = APIRouter(prefix="/namespaces/{namespace}/skills/{name}", tags=["skill plans"])


@router.post("/plan", responses=errors(404, 422))
async def plan_skill(
    namespace: str,
    name: str,
    body: plans.PlanRequest,
    request: Request,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
) -> plans.Plan:
    """Plan the skill's MCP tool calls for `request`: from its `plan:` section, else the model."""
    crd = await service.get(session, own_scope(namespace, user), name)
    allowed, servers = plans.mcp_skill(crd)
    declared = plans.declarative_plan(crd, body.request)
    notes: list[str] = []
    if declared is not None:
        steps, source = declared, "declarative"
    else:
        async with AsyncExitStack() as stack:
            model: BaseChatModel | None = request.app.state.chat.model
            if model is None:
                chosen = model_settings(GhostModel(), settings, {})
                model = await stack.enter_async_context(open_chat_model(chosen, settings.egress))
            steps, notes = await plans.model_plan(
                model, crd, body.request, allowed, settings.skill_plan_max_steps
            )
        source = "model"
    kept, refused = plans.check_steps(steps, allowed, list(servers), settings.skill_plan_max_steps)
    return plans.Plan(
        plan=kept, tools=allowed, notes=[f"plan from {source}", *notes, *refused], source=source
    )


@router.post("/plan/execute", responses=errors(403, 404, 422))
async def execute_skill_plan(
    namespace: str,
    name: str,
    body: plans.ExecuteRequest,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
) -> plans.Execution:
    """Run a plan's steps through the skill's MCP servers, recording each one's outcome."""
    scope = own_scope(namespace, user)
    crd = await service.get(session, scope, name)
    allowed, servers = plans.mcp_skill(crd)
    if not settings.skill_plan_execution:
        raise Forbidden(
            "executing skill plans is turned off on this server", code="plan_execution_disabled"
        )
    ghost = await find_ghost(session, scope, body.ghost)
    if ghost is None or not ghost.json["spec"].get("allowPlanExecution"):
        raise Forbidden(
            f"Ghost {body.ghost!r} does not allow plan execution (allowPlanExecution: true)",
            code="plan_execution_not_allowed",
            details={"ghost": body.ghost},
        )
    kept, refused = plans.check_steps(
        body.plan, allowed, list(servers), settings.skill_plan_max_steps
    )
    if refused:
        raise InvalidRequest(
            "the plan breaks the skill's rules: " + "; ".join(refused),
            code="plan_invalid",
            details={"problems": refused},
        )
    context = {
        "user": {"id": user.id, "name": user.name},
        "conversation": {"id": ""},
        "secrets": {},
    }
    return await plans.execute_plan(
        crd,
        kept,
        context=context,
        egress=settings.egress,
        call_timeout_s=settings.mcp_code_call_timeout_seconds,
    )
