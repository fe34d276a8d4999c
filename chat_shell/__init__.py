"""The agent engine: runs one chat turn. Imports nothing from `backend` (docs/architecture.md).

This is its public API: backend imports only these names, from `chat_shell` itself
(`tests/test_architecture_doc.py` checks it). They load on first use, so importing one contract
does not import the agent's LangChain stack.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "chat_shell.agent._runner": ["run_turn"],
    "chat_shell.contracts": [
        "ArtifactEvent",
        "CatalogEntry",
        "ErrorEvent",
        "Event",
        "HistoryMessage",
        "McpCallEvent",
        "McpErrorEvent",
        "ModelSettings",
        "SkillErrorEvent",
        "SkillLoadedEvent",
        "SkillMatch",
        "SkillSpec",
        "StartEvent",
        "SubstitutionContext",
        "TokenEvent",
        "ToolEndEvent",
        "ToolStartEvent",
        "TurnRequest",
        "UsageEvent",
        "UserRef",
    ],
    "chat_shell.errors": ["ChatShellError", "ProviderLoadError"],
    "chat_shell.models": ["OFFLINE_MODEL", "open_chat_model"],
    "chat_shell.net": [
        "EgressForbidden",
        "EgressPolicy",
        "EgressTransport",
        "content_encoding",
        "egress_client",
        "readable_url",
    ],
    "chat_shell.observe": ["McpScope", "set_observer"],
    "chat_shell.packages": [
        "ArchiveLimits",
        "DEFAULT_ARCHIVE_LIMITS",
        "PackageFile",
        "PackageReadError",
        "ReadCode",
        "SKILL_MD_NAMES",
        "check_archive_size",
        "is_ignored",
        "open_package",
        "path_problem",
        "shown_name",
    ],
    "chat_shell.packages._archive": ["open_archive"],
    "chat_shell.ports": ["PackageSource", "SkillDirectory"],
    "chat_shell.sandbox": ["BubblewrapSandbox", "SandboxLimits", "WORKSPACE_DIR"],
    "chat_shell.sandbox.workspace": ["safe_relative_path"],
    "chat_shell.skills.active": ["last_loaded_records"],
    "chat_shell.skills.allowed": ["tool_allowed"],
    "chat_shell.tools.mcp": [
        "McpConfigError",
        "McpPlaceholderError",
        "McpServerConfig",
        "McpSessionPool",
        "McpStdioForbiddenError",
        "check_stdio_allowed",
        "find_placeholders",
        "merge_mcp_servers",
        "parse_mcp_server",
        "parse_mcp_servers",
        "validate_placeholders",
    ],
    "chat_shell.tools.pending_requests": [
        "InMemoryPendingRequestRegistry",
        "PendingRequestRegistry",
        "RedisPendingRequestRegistry",
        "RegistryUnavailable",
    ],
    "chat_shell.tools.pending.base": ["honour_cancellation"],
    "chat_shell.tools.sandbox": ["SandboxAccess"],
    "chat_shell.tools.sandbox._files": ["ArtifactLimits", "NewArtifact", "SavedArtifact"],
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "ArchiveLimits",
    "ArtifactEvent",
    "ArtifactLimits",
    "BubblewrapSandbox",
    "CatalogEntry",
    "ChatShellError",
    "DEFAULT_ARCHIVE_LIMITS",
    "EgressForbidden",
    "EgressPolicy",
    "EgressTransport",
    "ErrorEvent",
    "Event",
    "HistoryMessage",
    "InMemoryPendingRequestRegistry",
    "McpCallEvent",
    "McpConfigError",
    "McpErrorEvent",
    "McpPlaceholderError",
    "McpScope",
    "McpServerConfig",
    "McpSessionPool",
    "McpStdioForbiddenError",
    "ModelSettings",
    "NewArtifact",
    "OFFLINE_MODEL",
    "PackageFile",
    "PackageReadError",
    "PackageSource",
    "PendingRequestRegistry",
    "ProviderLoadError",
    "ReadCode",
    "RedisPendingRequestRegistry",
    "RegistryUnavailable",
    "SKILL_MD_NAMES",
    "SandboxAccess",
    "SandboxLimits",
    "SavedArtifact",
    "SkillDirectory",
    "SkillErrorEvent",
    "SkillLoadedEvent",
    "SkillMatch",
    "SkillSpec",
    "StartEvent",
    "SubstitutionContext",
    "TokenEvent",
    "ToolEndEvent",
    "ToolStartEvent",
    "TurnRequest",
    "UsageEvent",
    "UserRef",
    "WORKSPACE_DIR",
    "check_archive_size",
    "check_stdio_allowed",
    "content_encoding",
    "egress_client",
    "find_placeholders",
    "honour_cancellation",
    "is_ignored",
    "last_loaded_records",
    "merge_mcp_servers",
    "open_archive",
    "open_chat_model",
    "open_package",
    "parse_mcp_server",
    "parse_mcp_servers",
    "path_problem",
    "readable_url",
    "run_turn",
    "safe_relative_path",
    "shown_name",
    "set_observer",
    "tool_allowed",
    "validate_placeholders",
]

if TYPE_CHECKING:
    from chat_shell.agent._runner import run_turn
    from chat_shell.contracts import (
        ArtifactEvent,
        CatalogEntry,
        ErrorEvent,
        Event,
        HistoryMessage,
        McpCallEvent,
        McpErrorEvent,
        ModelSettings,
        SkillErrorEvent,
        SkillLoadedEvent,
        SkillMatch,
        SkillSpec,
        StartEvent,
        SubstitutionContext,
        TokenEvent,
        ToolEndEvent,
        ToolStartEvent,
        TurnRequest,
        UsageEvent,
        UserRef,
    )
    from chat_shell.errors import ChatShellError, ProviderLoadError
    from chat_shell.models import OFFLINE_MODEL, open_chat_model
    from chat_shell.net import (
        EgressForbidden,
        EgressPolicy,
        EgressTransport,
        content_encoding,
        egress_client,
        readable_url,
    )
    from chat_shell.observe import McpScope, set_observer
    from chat_shell.packages import (
        DEFAULT_ARCHIVE_LIMITS,
        SKILL_MD_NAMES,
        ArchiveLimits,
        PackageFile,
        PackageReadError,
        ReadCode,
        check_archive_size,
        is_ignored,
        open_package,
        path_problem,
        shown_name,
    )
    from chat_shell.packages._archive import open_archive
    from chat_shell.ports import PackageSource, SkillDirectory
    from chat_shell.sandbox import WORKSPACE_DIR, BubblewrapSandbox, SandboxLimits
    from chat_shell.sandbox.workspace import safe_relative_path
    from chat_shell.skills.active import last_loaded_records
    from chat_shell.skills.allowed import tool_allowed
    from chat_shell.tools.mcp import (
        McpConfigError,
        McpPlaceholderError,
        McpServerConfig,
        McpSessionPool,
        McpStdioForbiddenError,
        check_stdio_allowed,
        find_placeholders,
        merge_mcp_servers,
        parse_mcp_server,
        parse_mcp_servers,
        validate_placeholders,
    )
    from chat_shell.tools.pending.base import honour_cancellation
    from chat_shell.tools.pending_requests import (
        InMemoryPendingRequestRegistry,
        PendingRequestRegistry,
        RedisPendingRequestRegistry,
        RegistryUnavailable,
    )
    from chat_shell.tools.sandbox import SandboxAccess
    from chat_shell.tools.sandbox._files import ArtifactLimits, NewArtifact, SavedArtifact


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'chat_shell' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once loaded, a plain attribute
    return value
