"""Skills at run time: tool providers (interface, registry, loading from ZIPs), active state."""

from chat_shell.skills.provider import ProviderContext, SkillToolProvider
from chat_shell.skills.registry import ProviderRegistry, default_registry

__all__ = ["ProviderContext", "ProviderRegistry", "SkillToolProvider", "default_registry"]
