"""The agent engine: runs one chat turn. Imports nothing from `backend` (docs/architecture.md).

This is its public API: backend imports only these names, from `chat_shell` itself
(`tests/test_architecture_doc.py` checks it). They load on first use, so importing one contract
does not import the agent's LangChain stack.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "chat_shell.agent.graph": ["inline_tracing_hooks"],
    "chat_shell.agent.runner": ["run_turn"],
    "chat_shell.contracts": [
        "CatalogEntry",
        "ErrorEvent",
        "Event",
        "HistoryMessage",
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
    "chat_shell.models": ["OFFLINE_MODEL"],
    "chat_shell.net": ["EgressForbidden", "EgressPolicy"],
    "chat_shell.packages": [
        "DEFAULT_ARCHIVE_LIMITS",
        "SKILL_MD_NAMES",
        "ArchiveLimits",
        "PackageFile",
        "PackageReadError",
        "check_archive_size",
        "open_package",
    ],
    "chat_shell.ports": ["PackageSource", "SkillDirectory"],
    "chat_shell.sandbox": ["BubblewrapSandbox", "SandboxLimits"],
    "chat_shell.skills.active": ["last_loaded_records"],
    "chat_shell.tools.mcp": [
        "McpConfigError",
        "McpPlaceholderError",
        "McpServerConfig",
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
    ],
    "chat_shell.tools.sandbox": ["SandboxAccess"],
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "DEFAULT_ARCHIVE_LIMITS",
    "OFFLINE_MODEL",
    "SKILL_MD_NAMES",
    "ArchiveLimits",
    "BubblewrapSandbox",
    "CatalogEntry",
    "ChatShellError",
    "EgressForbidden",
    "EgressPolicy",
    "ErrorEvent",
    "Event",
    "HistoryMessage",
    "InMemoryPendingRequestRegistry",
    "McpConfigError",
    "McpErrorEvent",
    "McpPlaceholderError",
    "McpServerConfig",
    "McpStdioForbiddenError",
    "ModelSettings",
    "PackageFile",
    "PackageReadError",
    "PackageSource",
    "PendingRequestRegistry",
    "ProviderLoadError",
    "RedisPendingRequestRegistry",
    "SandboxAccess",
    "SandboxLimits",
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
    "check_archive_size",
    "check_stdio_allowed",
    "find_placeholders",
    "inline_tracing_hooks",
    "last_loaded_records",
    "merge_mcp_servers",
    "open_package",
    "parse_mcp_server",
    "parse_mcp_servers",
    "run_turn",
    "validate_placeholders",
]

if TYPE_CHECKING:
    from chat_shell.agent.graph import inline_tracing_hooks
    from chat_shell.agent.runner import run_turn
    from chat_shell.contracts import (
        CatalogEntry,
        ErrorEvent,
        Event,
        HistoryMessage,
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
    from chat_shell.models import OFFLINE_MODEL
    from chat_shell.net import EgressForbidden, EgressPolicy
    from chat_shell.packages import (
        DEFAULT_ARCHIVE_LIMITS,
        SKILL_MD_NAMES,
        ArchiveLimits,
        PackageFile,
        PackageReadError,
        check_archive_size,
        open_package,
    )
    from chat_shell.ports import PackageSource, SkillDirectory
    from chat_shell.sandbox import BubblewrapSandbox, SandboxLimits
    from chat_shell.skills.active import last_loaded_records
    from chat_shell.tools.mcp import (
        McpConfigError,
        McpPlaceholderError,
        McpServerConfig,
        McpStdioForbiddenError,
        check_stdio_allowed,
        find_placeholders,
        merge_mcp_servers,
        parse_mcp_server,
        parse_mcp_servers,
        validate_placeholders,
    )
    from chat_shell.tools.pending_requests import (
        InMemoryPendingRequestRegistry,
        PendingRequestRegistry,
        RedisPendingRequestRegistry,
    )
    from chat_shell.tools.sandbox import SandboxAccess


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'chat_shell' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once loaded, a plain attribute
    return value
