"""The provider tools of one skill for one turn, with every failure reported, none raised."""

from __future__ import annotations

from dataclasses import replace

from langchain_core.tools import BaseTool

from chat_shell.contracts import SkillErrorEvent, SkillSpec
from chat_shell.errors import ProviderError
from chat_shell.ports import PackageSource
from chat_shell.skills.provider import ProviderContext, SkillToolProvider
from chat_shell.skills.registry import ProviderRegistry


async def create_provider_tools(
    skill: SkillSpec,
    *,
    registry: ProviderRegistry,
    source: PackageSource,
    context: ProviderContext,
) -> tuple[list[BaseTool], list[SkillErrorEvent]]:
    """Tools for the skill's declarations: its own package's provider first, then built-ins."""
    if not skill.tools:
        return [], []
    errors: list[SkillErrorEvent] = []
    own: SkillToolProvider | None = None
    package_failed = False
    if skill.provider is not None:
        try:
            loaded = await registry.load(skill, source)
        except ProviderError as exc:
            errors.append(SkillErrorEvent(skill=skill.name, code=exc.code, message=exc.message))
            package_failed = True
        else:
            own = loaded.provider
            context = replace(context, files=loaded.files)
    tools: list[BaseTool] = []
    for declaration in skill.tools:
        provider = own if own and own.provider_name == declaration.provider else None
        provider = provider or registry.builtin(declaration.provider)
        if provider is None:
            if not package_failed:  # a failed package was reported once already
                message = f"no tool provider named {declaration.provider!r}"
                errors.append(_error(skill, "provider_unknown", message))
            continue
        if declaration.name not in provider.supported_tools:
            message = f"provider {declaration.provider!r} has no tool {declaration.name!r}"
            errors.append(_error(skill, "tool_unsupported", message))
            continue
        config = {**skill.config, **declaration.config}  # the declaration's config wins
        try:
            tools.append(provider.create_tool(declaration.name, context, config))
        except Exception as exc:
            message = f"creating tool {declaration.name!r} failed: {type(exc).__name__}: {exc}"
            errors.append(_error(skill, "tool_create_failed", message))
    return tools, errors


def _error(skill: SkillSpec, code: str, message: str) -> SkillErrorEvent:
    return SkillErrorEvent(skill=skill.name, code=code, message=message)
