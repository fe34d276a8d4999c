"""The one mapping from Skillhive's CRDs and rows to chat_shell's `TurnRequest`.

Pure: callers load the Ghost, its catalog and starting skills (backend/chat/catalog.py), the
history and the secrets; this decides what the engine sees.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import SecretStr

from backend.chat.conversations import WindowMessage
from backend.chat.mcp import engine_servers, secret_names
from backend.config import Settings
from backend.crd.ghost import GhostModel, GhostSpec
from backend.crd.skill import Skill
from backend.errors import InvalidRequest
from backend.ghosts.resolve import ResolvedGhost
from chat_shell import (
    OFFLINE_MODEL,
    CatalogEntry,
    HistoryMessage,
    McpServerConfig,
    ModelSettings,
    SkillErrorEvent,
    SkillSpec,
    SubstitutionContext,
    TurnRequest,
    UserRef,
    last_loaded_records,
    merge_mcp_servers,
    parse_mcp_servers,
)


@dataclass(frozen=True)
class TurnInputs:
    conversation_id: str
    user_id: int
    user_name: str
    ghost: ResolvedGhost
    catalog: Sequence[CatalogEntry]  # what the prompt lists of the Ghost's enabled skills
    skills: Sequence[SkillSpec]  # the skills the turn starts with in full
    skill_search: bool  # the catalog is compact: the model searches for the rest
    history: Sequence[WindowMessage]
    user_turns_before: int
    user_message: str
    secrets: Mapping[str, str]
    disabled_preloads: Sequence[str] = ()  # preloaded skills left out because they are disabled
    # The server's MCP servers, parsed once per process (`TurnRunner`); None parses settings.
    global_servers: Mapping[str, McpServerConfig] | None = None


def skill_spec(skill: Skill) -> SkillSpec:
    spec, public = skill.spec, skill.status.public
    return SkillSpec(
        name=skill.metadata.name,
        description=spec.description,
        display_name=spec.display_name,
        prompt=spec.prompt,
        tools=[
            {"name": t.name, "provider": t.provider or "", "config": t.config} for t in spec.tools
        ],
        provider=spec.provider.model_dump(by_alias=True) if spec.provider else None,
        config=spec.config,
        # A skill's own servers are trusted (stdio allowed) only when the skill is public.
        mcp_servers=engine_servers(spec.mcp_servers, trusted=public),
        public=public,
        sha256=skill.status.sha256,
        files=[{"path": f.path, "size": f.size} for f in spec.files],
        allowed_tools=spec.allowed_tools or None,  # empty: not declared
    )


def check_server_model(name: str, settings: Settings) -> None:
    """On the server's endpoint and key, a Ghost may ask for the operator's models only."""
    allowed = settings.allowed_models or [settings.model]
    if name != OFFLINE_MODEL and name not in allowed:
        raise InvalidRequest(
            f"model {name!r} is not available with the server's key; allowed: "
            + ", ".join(allowed),
            code="model_not_allowed",
            details={"model": name, "allowed": allowed},
        )


def model_settings(
    ghost_model: GhostModel,
    settings: Settings,
    secrets: Mapping[str, str],
    *,
    ghost_is_public: bool = False,
) -> ModelSettings:
    """Ghost `model` over the server default. The server's API key only ever goes to the
    server's endpoint: a Ghost that names its own `baseUrl` must bring its own key secret.

    A Ghost on the server's endpoint and key is bounded by the operator (allowed models, a
    `maxTokens` ceiling). A Ghost's own endpoint is the tenant's choice, reached through the
    egress policy, unless the Ghost is public (written by an admin)."""
    own_endpoint = ghost_model.base_url
    key: SecretStr | None = None if own_endpoint else settings.openai_api_key
    secret_name = ghost_model.api_key_secret
    if secret_name:
        if secret_name not in secrets:
            raise InvalidRequest(
                f"the Ghost's model key secret {secret_name!r} does not exist",
                code="secret_not_found",
                details={"secret": secret_name},
            )
        key = SecretStr(secrets[secret_name])
    name = ghost_model.name or settings.model
    max_tokens = ghost_model.max_tokens
    if not own_endpoint and not secret_name:  # the server's endpoint and key
        check_server_model(name, settings)
        max_tokens = min(max_tokens or settings.model_max_tokens, settings.model_max_tokens)
    return ModelSettings(
        name=name,
        base_url=own_endpoint or settings.openai_base_url,
        api_key=key,
        temperature=ghost_model.temperature,
        max_tokens=max_tokens,
        trusted=not own_endpoint or ghost_is_public,
        timeout_s=settings.model_timeout_s,
        max_retries=settings.model_max_retries,
    )


def history(messages: Sequence[WindowMessage]) -> list[HistoryMessage]:
    return [
        HistoryMessage(
            role="user" if m.role == "user" else "assistant",
            content=m.content,
            tool_calls=m.tool_calls or [],
            loaded_skills=m.loaded_skills,
        )
        for m in messages
    ]


def global_servers(settings: Settings) -> dict[str, McpServerConfig]:
    return parse_mcp_servers(settings.mcp_servers, trusted=True)


def ghost_servers(inputs: TurnInputs, settings: Settings) -> dict[str, McpServerConfig]:
    """The server's MCP servers under the Ghost's (both parsed once, not per turn)."""
    server = inputs.global_servers
    return merge_mcp_servers(
        global_servers(settings) if server is None else server, inputs.ghost.mcp_servers, {}
    )


def needs_secrets(
    ghost: ResolvedGhost,
    server_mcp: Mapping[str, McpServerConfig],
    *,
    skills_use_secrets: bool,
) -> bool:
    """Whether anything this turn may use refers to a user secret (key or placeholder);
    `skills_use_secrets`: whether one of the Ghost's skills does (backend/chat/catalog.py)."""
    return skills_use_secrets or bool(ghost.secrets) or bool(secret_names(server_mcp))


def retention_turns(spec: GhostSpec, settings: Settings) -> int:
    retention = spec.retention_turns
    return settings.retention_turns if retention is None else retention


def turn_index(user_turns_before: int, messages: Sequence[WindowMessage]) -> int:
    return user_turns_before + sum(1 for m in messages if m.role == "user")


def wanted_skills(
    spec: GhostSpec,
    messages: Sequence[WindowMessage],
    user_turns_before: int,
    settings: Settings,
) -> list[str]:
    """The skills a turn starts with: the preloaded ones and those still retained from history."""
    turn = turn_index(user_turns_before, messages)
    retention = retention_turns(spec, settings)
    recent = [
        r.name
        for r in last_loaded_records(history(messages))
        if 0 <= turn - r.last_used_turn <= retention
    ]
    return list(dict.fromkeys([*spec.preload_skills, *recent]))


def disabled_notice(name: str) -> SkillErrorEvent:
    return SkillErrorEvent(
        skill=name,
        code="skill_disabled",
        message=f"the preloaded skill {name!r} is disabled; this turn runs without it",
    )


def build_turn_request(inputs: TurnInputs, settings: Settings) -> TurnRequest:
    spec = inputs.ghost.spec
    names = {s.name for s in inputs.skills}
    return TurnRequest(
        conversation_id=inputs.conversation_id,
        user_id=inputs.user_id,
        system_prompt=spec.system_prompt,
        model=model_settings(
            spec.model, settings, inputs.secrets, ghost_is_public=inputs.ghost.public
        ),
        skills=list(inputs.skills),
        preload_skills=[n for n in spec.preload_skills if n in names],
        catalog=list(inputs.catalog),
        skill_search=inputs.skill_search,
        mcp_servers=ghost_servers(inputs, settings),
        mcp_tool_mode=spec.mcp_tool_mode or "direct",
        history=history(inputs.history),
        user_message=inputs.user_message,
        retention_turns=retention_turns(spec, settings),
        loaded_skills_token_budget=settings.loaded_skills_token_budget,
        recursion_limit=settings.recursion_limit,
        mcp_connect_timeout_s=settings.mcp_connect_timeout_s,
        mcp_call_timeout_s=settings.mcp_call_timeout_s,
        skill_file_read_bytes=settings.skill_file_read_bytes,
        turn_index=turn_index(inputs.user_turns_before, inputs.history),
        context=SubstitutionContext(
            user=UserRef(id=inputs.user_id, name=inputs.user_name),
            secrets={k: SecretStr(v) for k, v in inputs.secrets.items()},
        ),
        egress=settings.egress,
        notices=[disabled_notice(n) for n in inputs.disabled_preloads],
    )
