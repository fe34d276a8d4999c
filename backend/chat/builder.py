"""The one mapping from Skillhive's CRDs and rows to chat_shell's `TurnRequest`.

Pure: callers load the Ghost, its catalog and starting skills (backend/chat/catalog.py), the
history and the secrets; this decides what the engine sees.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import SecretStr

from backend.config import Settings
from backend.db.models import Message
from backend.errors import InvalidRequest
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
    find_placeholders,
    last_loaded_records,
    merge_mcp_servers,
    parse_mcp_servers,
)


@dataclass(frozen=True)
class TurnInputs:
    conversation_id: str
    user_id: int
    user_name: str
    ghost: Mapping[str, Any]  # the Ghost CRD
    ghost_is_public: bool
    catalog: Sequence[CatalogEntry]  # what the prompt lists of the Ghost's enabled skills
    skills: Sequence[SkillSpec]  # the skills the turn starts with in full
    skill_search: bool  # the catalog is compact: the model searches for the rest
    history: Sequence[Message]
    user_turns_before: int
    user_message: str
    secrets: Mapping[str, str]
    disabled_preloads: Sequence[str] = ()  # preloaded skills left out because they are disabled
    # The server's MCP servers, parsed once per process (`TurnRunner`); None parses settings.
    global_servers: Mapping[str, McpServerConfig] | None = None


def skill_spec(crd: Mapping[str, Any]) -> SkillSpec:
    spec, status = crd["spec"], crd["status"]
    public = bool(status.get("public"))
    return SkillSpec(
        name=crd["metadata"]["name"],
        description=spec.get("description", ""),
        display_name=spec.get("displayName"),
        prompt=spec.get("prompt", ""),
        tools=[
            {"name": t["name"], "provider": t.get("provider") or "", "config": t.get("config", {})}
            for t in spec.get("tools", [])
        ],
        provider=spec.get("provider"),
        config=spec.get("config", {}),
        # A skill's own servers are trusted (stdio allowed) only when the skill is public.
        mcp_servers=parse_mcp_servers(spec.get("mcpServers", {}), trusted=public),
        public=public,
        sha256=status.get("sha256"),
        files=[{"path": f["path"], "size": f["size"]} for f in spec.get("files", [])],
        allowed_tools=spec.get("allowedTools") or None,  # empty: not declared
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
    ghost_model: Mapping[str, Any],
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
    own_endpoint = ghost_model.get("baseUrl")
    key: SecretStr | None = None if own_endpoint else settings.openai_api_key
    secret_name = ghost_model.get("apiKeySecret")
    if secret_name:
        if secret_name not in secrets:
            raise InvalidRequest(
                f"the Ghost's model key secret {secret_name!r} does not exist",
                code="secret_not_found",
                details={"secret": secret_name},
            )
        key = SecretStr(secrets[secret_name])
    name = ghost_model.get("name") or settings.model
    max_tokens = ghost_model.get("maxTokens")
    if not own_endpoint and not secret_name:  # the server's endpoint and key
        check_server_model(name, settings)
        max_tokens = min(max_tokens or settings.model_max_tokens, settings.model_max_tokens)
    return ModelSettings(
        name=name,
        base_url=own_endpoint or settings.openai_base_url,
        api_key=key,
        temperature=ghost_model.get("temperature"),
        max_tokens=max_tokens,
        trusted=not own_endpoint or ghost_is_public,
        timeout_s=settings.model_timeout_s,
        max_retries=settings.model_max_retries,
    )


def history(messages: Sequence[Message]) -> list[HistoryMessage]:
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
    server = inputs.global_servers
    ghost = parse_mcp_servers(
        inputs.ghost["spec"].get("mcpServers", {}), trusted=inputs.ghost_is_public
    )
    return merge_mcp_servers(global_servers(settings) if server is None else server, ghost, {})


def mcp_uses_secrets(servers: Mapping[str, McpServerConfig]) -> bool:
    """Whether a server's `${{secrets.NAME}}` placeholder names a user secret (found by the
    placeholder parser over the fields it substitutes)."""
    return any(
        path.partition(".")[0] == "secrets"
        for config in servers.values()
        for path in find_placeholders(config)
    )


def stored_mcp_uses_secrets(raw: Mapping[str, Any] | None) -> bool:
    """`mcp_uses_secrets` of stored (already validated) `mcpServers` JSON."""
    return bool(raw) and mcp_uses_secrets(parse_mcp_servers(raw or {}, trusted=False))


def needs_secrets(
    ghost: Mapping[str, Any],
    server_mcp: Mapping[str, McpServerConfig],
    *,
    skills_use_secrets: bool,
) -> bool:
    """Whether anything this turn may use refers to a user secret (key or placeholder);
    `skills_use_secrets`: whether one of the Ghost's skills does (backend/chat/catalog.py)."""
    spec = ghost["spec"]
    if skills_use_secrets or (spec.get("model") or {}).get("apiKeySecret"):
        return True
    return mcp_uses_secrets(server_mcp) or stored_mcp_uses_secrets(spec.get("mcpServers"))


def retention_turns(ghost: Mapping[str, Any], settings: Settings) -> int:
    retention = ghost["spec"].get("retentionTurns")
    return settings.retention_turns if retention is None else int(retention)


def turn_index(user_turns_before: int, messages: Sequence[Message]) -> int:
    return user_turns_before + sum(1 for m in messages if m.role == "user")


def wanted_skills(
    ghost: Mapping[str, Any],
    messages: Sequence[Message],
    user_turns_before: int,
    settings: Settings,
) -> list[str]:
    """The skills a turn starts with: the preloaded ones and those still retained from history."""
    turn = turn_index(user_turns_before, messages)
    retention = retention_turns(ghost, settings)
    recent = [
        r.name
        for r in last_loaded_records(history(messages))
        if 0 <= turn - r.last_used_turn <= retention
    ]
    return list(dict.fromkeys([*ghost["spec"].get("preloadSkills", []), *recent]))


def disabled_notice(name: str) -> SkillErrorEvent:
    return SkillErrorEvent(
        skill=name,
        code="skill_disabled",
        message=f"the preloaded skill {name!r} is disabled; this turn runs without it",
    )


def build_turn_request(inputs: TurnInputs, settings: Settings) -> TurnRequest:
    spec = inputs.ghost["spec"]
    names = {s.name for s in inputs.skills}
    preloads = spec.get("preloadSkills", [])
    return TurnRequest(
        conversation_id=inputs.conversation_id,
        user_id=inputs.user_id,
        system_prompt=spec.get("systemPrompt", ""),
        model=model_settings(
            spec.get("model") or {},
            settings,
            inputs.secrets,
            ghost_is_public=inputs.ghost_is_public,
        ),
        skills=list(inputs.skills),
        preload_skills=[n for n in preloads if n in names],
        catalog=list(inputs.catalog),
        skill_search=inputs.skill_search,
        mcp_servers=ghost_servers(inputs, settings),
        mcp_tool_mode=spec.get("mcpToolMode") or "direct",
        history=history(inputs.history),
        user_message=inputs.user_message,
        retention_turns=retention_turns(inputs.ghost, settings),
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
