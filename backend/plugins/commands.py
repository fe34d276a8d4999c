"""What a Ghost offers after `/`: its plugins' commands and its user-invocable skills.

A plugin command is offered as `/<command>`, and always as `/<plugin>:<command>` (the listing
shows the short name when no other plugin of the Ghost has a command of that name). A skill is
`/<skill>` (`/<plugin>/<skill>` or `/<plugin>:<skill>` for a plugin's skill), unless its
frontmatter says `user-invocable: false`. Commands win over skills of the same name.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from backend.chat.commands import Command, Invocation, expand, invoked_name
from backend.crd.ghost import GhostSpec
from backend.crd.plugin import Plugin
from backend.crd.stored import stored
from backend.db.models import Kind, SkillSearch
from backend.ghosts.resolve import ghost_skills, plugin_rows
from backend.kinds.store import Scope

MAX_SKILL_COMMANDS = 1000  # a Ghost selecting more skills offers the first ones by name


def _invocable(extra: Mapping[str, Any]) -> bool:
    value = extra.get("user-invocable", extra.get("userInvocable", True))
    return value is not False and str(value).lower() != "false"


async def ghost_commands(
    session: AsyncSession, owner: Scope, spec: GhostSpec
) -> tuple[list[Command], dict[str, Command]]:
    """(what to list, every name that invokes something -> its command)."""
    listed: list[Command] = []
    names: dict[str, Command] = {}
    plugins = spec.plugins or []
    rows = await plugin_rows(session, owner, plugins)
    found = [(p, stored(Plugin, rows[p].json).spec.commands) for p in plugins if p in rows]
    counts = Counter(c.name for _, commands in found for c in commands)
    for plugin, commands in found:
        for declared in commands:
            short = declared.name
            qualified = f"{plugin}:{short}"
            command = Command(
                name=short if counts[short] == 1 else qualified,
                description=declared.description,
                argument_hint=declared.argument_hint,
                source=f"plugin:{plugin}",
                prompt=declared.prompt,
                skills=tuple(declared.skills),
            )
            listed.append(command)
            names[qualified] = command
            names.setdefault(command.name, command)
    source = ghost_skills(owner, spec)
    # A skill's frontmatter fields beyond the format's (`spec.extra`): the listing needs two of
    # them, not the CRD with its instructions, nor its validation (a turn invoking the skill
    # reads and validates it as every turn does).
    stmt = (
        select(SkillSearch.name, SkillSearch.description, Kind.json[("spec", "extra")])
        .join(Kind, Kind.id == SkillSearch.kind_id)
        .where(source.condition())
        .order_by(SkillSearch.name)
        .limit(MAX_SKILL_COMMANDS)
    )
    for name, description, stored_extra in (await session.execute(stmt)).all():
        if name in names:
            continue
        extra = stored_extra if isinstance(stored_extra, Mapping) else {}
        if not _invocable(extra):
            continue
        hint = extra.get("argument-hint")
        command = Command(
            name=name,
            description=description,
            argument_hint=None if hint is None else str(hint),
            source="skill",
            skills=(name,),
        )
        listed.append(command)
        names[name] = command
        names.setdefault(name.replace("/", ":", 1), command)
    return listed, names


async def invocation_for(
    session: AsyncSession, owner: Scope, spec: GhostSpec, message: str
) -> Invocation | None:
    """The command `message` invokes on this Ghost (None: an ordinary message); 422
    `unknown_command` when the Ghost offers no such command."""
    if invoked_name(message) is None:
        return None
    _, names = await ghost_commands(session, owner, spec)
    return expand(message, names)
