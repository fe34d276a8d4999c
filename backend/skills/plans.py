"""MCP skill plans: a skill's steps planned (by the model or its `plan:` section) and run.

An MCP skill has MCP servers and an `allowed-tools` allowlist. A plan is a list of steps
`{tool, arguments, reason}`; a step naming a tool outside the allowlist is refused, and a plan
is cut to `SKILLHIVE_SKILL_PLAN_MAX_STEPS`. A declarative plan is the skill's frontmatter
`plan:` (a list of steps, or `{steps: [...]}`) with `{{prompt}}` and `{{workspace_root}}`
substituted in its strings; no model is asked. Otherwise the model gets a bounded prompt (the
skill's instructions, the request, the allowed tools, the step limit) and answers JSON.

Execution runs the steps in order through the skill's own MCP servers (the usual trust,
placeholders and egress policy), stopping at the first failure; the rest are `skipped`.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel, Field, ValidationError

from backend.errors import InvalidRequest
from chat_shell import WORKSPACE_DIR, EgressPolicy, McpSessionPool, parse_mcp_servers, tool_allowed

MAX_REQUEST_CHARS = 4000
MAX_INSTRUCTIONS_CHARS = 8000
MAX_PROMPT_TOOLS = 100
MAX_RESULT_CHARS = 4000
MAX_EXECUTE_STEPS = 50
_JSON = re.compile(r"\{.*\}|\[.*\]", re.DOTALL)


class PlanStep(BaseModel):
    tool: str = Field(min_length=1, max_length=200)
    arguments: dict[str, Any] = Field(default_factory=dict)
    reason: str = Field("", max_length=1000)


class PlanRequest(BaseModel):
    request: str = Field(min_length=1, max_length=MAX_REQUEST_CHARS)


class Plan(BaseModel):
    plan: list[PlanStep]
    tools: list[str]  # the skill's allowlist
    notes: list[str]  # refused steps, the cut, where the plan came from
    source: Literal["declarative", "model"]


class ExecuteRequest(BaseModel):
    plan: list[PlanStep] = Field(min_length=1, max_length=MAX_EXECUTE_STEPS)
    ghost: str = Field(min_length=1, max_length=63, description="a Ghost of the namespace with "
                       "`allowPlanExecution: true`")  # fmt: skip


class StepOutcome(BaseModel):
    tool: str
    arguments: dict[str, Any]
    status: Literal["ok", "failed", "skipped"]
    result: str | None = None
    error: dict[str, str] | None = None


class Execution(BaseModel):
    ok: bool
    steps: list[StepOutcome]


def _invalid(code: str, message: str, **details: Any) -> InvalidRequest:
    return InvalidRequest(message, code=code, details=details)


def mcp_skill(crd: Mapping[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """(allowlist, MCP servers) of an MCP skill; `skill_not_plannable` for any other skill."""
    spec = crd["spec"]
    allowed, servers = spec.get("allowedTools") or [], spec.get("mcpServers") or {}
    if not allowed or not servers:
        raise _invalid(
            "skill_not_plannable",
            "only a skill with MCP servers and an allowed-tools list can be planned",
            skill=crd["metadata"]["name"],
        )
    return list(allowed), dict(servers)


def check_steps(
    steps: Sequence[PlanStep], allowed: Sequence[str], servers: Sequence[str], limit: int
) -> tuple[list[PlanStep], list[str]]:
    """Steps on allowed tools (of any of the skill's `servers`), cut to `limit`, and a note for
    each refusal and the cut."""
    kept, notes = [], []
    for index, step in enumerate(steps, 1):
        server, sep, name = step.tool.partition("/")
        candidates = [(name, server)] if sep else [(step.tool, s) for s in servers]
        if any(tool_allowed(t, s, allowed) for t, s in candidates):
            kept.append(step)
        else:
            notes.append(f"step {index} refused: {step.tool!r} is not in the skill's allowed-tools")
    if len(kept) > limit:
        notes.append(f"plan cut from {len(kept)} to {limit} steps")
        kept = kept[:limit]
    return kept, notes


def declarative_plan(crd: Mapping[str, Any], request: str) -> list[PlanStep] | None:
    """The skill's `plan:` steps with substitutions; None when it has none."""
    raw = (crd["spec"].get("extra") or {}).get("plan")
    if raw is None:
        return None
    if isinstance(raw, dict):
        raw = raw.get("steps")
    values = {"prompt": request, "workspace_root": WORKSPACE_DIR}
    try:
        if not isinstance(raw, list):
            raise ValueError("plan must be a list of steps")
        return [PlanStep.model_validate(_substitute(step, values)) for step in raw]
    except (ValidationError, ValueError) as exc:
        raise _invalid(
            "invalid_skill_plan", f"the skill's plan: section is invalid: {exc}"[:500]
        ) from None


def _substitute(value: Any, values: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        for key, text in values.items():
            value = value.replace("{{" + key + "}}", text)
        return value
    if isinstance(value, list):
        return [_substitute(v, values) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, values) for k, v in value.items()}
    return value


def planning_prompt(crd: Mapping[str, Any], allowed: Sequence[str], limit: int) -> str:
    instructions = str(crd["spec"].get("prompt") or "")[:MAX_INSTRUCTIONS_CHARS]
    tools = ", ".join(allowed[:MAX_PROMPT_TOOLS])
    return (
        "You plan tool calls for a skill; you never run them. Answer with JSON only: "
        '{"plan": [{"tool": "<name>", "arguments": {...}, "reason": "<why>"}]}. '
        f"Use at most {limit} steps and only these tools: {tools}.\n\n"
        f"Skill {crd['metadata']['name']!r} instructions:\n{instructions}"
    )


async def model_plan(
    model: BaseChatModel, crd: Mapping[str, Any], request: str, allowed: Sequence[str], limit: int
) -> tuple[list[PlanStep], list[str]]:
    """The model's steps (unchecked) and notes about its answer."""
    reply = await model.ainvoke(
        [SystemMessage(planning_prompt(crd, allowed, limit)), HumanMessage(request)]
    )
    text = reply.text
    match = _JSON.search(text)
    try:
        data = json.loads(match.group(0) if match else text)
        raw = data.get("plan") if isinstance(data, dict) else data
        if not isinstance(raw, list):
            raise ValueError("no plan list")
        steps, notes = [], []
        for index, item in enumerate(raw, 1):
            try:
                steps.append(PlanStep.model_validate(item))
            except ValidationError:
                notes.append(f"step {index} refused: not a {{tool, arguments, reason}} object")
        return steps, notes
    except (ValueError, RecursionError):  # RecursionError: nested too deeply to parse
        return [], ["the model's answer was not a JSON plan"]


async def execute_plan(
    crd: Mapping[str, Any],
    steps: Sequence[PlanStep],
    *,
    context: Mapping[str, Any],
    egress: EgressPolicy,
    call_timeout_s: float,
) -> Execution:
    """Run `steps` (already checked) through the skill's MCP servers, in order."""
    allowed, raw_servers = mcp_skill(crd)
    public = bool(crd["status"].get("public"))
    servers = parse_mcp_servers(raw_servers, trusted=public)
    outcomes: list[StepOutcome] = []
    async with McpSessionPool(egress=egress, call_timeout_s=call_timeout_s) as pool:
        tools, failures = await pool.connect(servers, context, scope=crd["metadata"]["name"])
        by_name = {}
        for tool in tools:
            key = pool.server_of(tool)
            server = key[1] if key else None
            if tool_allowed(tool.name, server, allowed):
                by_name[tool.name] = tool
                if server:
                    by_name.setdefault(f"{server}/{tool.name}", tool)
        failed = False
        for index, step in enumerate(steps):
            if failed:
                outcomes.append(StepOutcome(**_step(step), status="skipped"))
                continue
            outcome = await _run_step(step, by_name, failures, index, call_timeout_s)
            failed = outcome.status == "failed"
            outcomes.append(outcome)
    return Execution(ok=not failed, steps=outcomes)


def _step(step: PlanStep) -> dict[str, Any]:
    return {"tool": step.tool, "arguments": step.arguments}


async def _run_step(
    step: PlanStep, tools: Mapping[str, Any], failures: Sequence[Any], index: int, limit_s: float
) -> StepOutcome:
    tool = tools.get(step.tool)
    if tool is None:
        reasons = "; ".join(f"{f.server}: {f.code}" for f in failures)
        message = f"no allowed MCP tool {step.tool!r} is connected" + (
            f" ({reasons})" if reasons else ""
        )
        return StepOutcome(
            **_step(step),
            status="failed",
            error={"code": "plan_tool_unavailable", "message": message},
        )
    call = {"type": "tool_call", "id": f"plan-{index}", "name": tool.name, "args": step.arguments}
    try:
        message = await asyncio.wait_for(tool.ainvoke(call), limit_s)
    except TimeoutError:
        error = {"code": "mcp_tool_timeout", "message": f"no answer within {limit_s:g}s"}
        return StepOutcome(**_step(step), status="failed", error=error)
    except Exception as exc:  # arguments the tool's schema refuses, among others
        error = {"code": "mcp_tool_failed", "message": f"{type(exc).__name__}: {exc}"[:1000]}
        return StepOutcome(**_step(step), status="failed", error=error)
    text = message.text if isinstance(message, ToolMessage) else str(message)
    text = text[:MAX_RESULT_CHARS]
    if isinstance(message, ToolMessage) and message.status == "error":
        code, _, rest = text.partition("] ")
        error = (
            {"code": code[1:], "message": rest}
            if code.startswith("[") and rest
            else {"code": "mcp_tool_failed", "message": text}
        )
        return StepOutcome(**_step(step), status="failed", error=error)
    return StepOutcome(**_step(step), status="ok", result=text)
