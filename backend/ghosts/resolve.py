"""What a Ghost reference and a Ghost's skill names point to, for chat and for validation.

A reference is `<namespace>/<name>` (the caller's own Ghost) or `public/<name>`. A skill name
resolves to the owner's skill in the Ghost's namespace, else to the public skill of that name;
a public Ghost sees public skills only.
"""

from __future__ import annotations

import dataclasses
import json
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType

from sqlalchemy import (
    ColumnExpressionArgument,
    Integer,
    ScalarSelect,
    Text,
    and_,
    case,
    cast,
    func,
    or_,
    select,
)
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

from backend.chat.mcp import engine_servers, secret_names
from backend.crd.common import name_problem, parse_skill_ref
from backend.crd.ghost import GHOST_KIND, Ghost, GhostSpec
from backend.crd.plugin import PLUGIN_KIND
from backend.crd.skill import SKILL_KIND, Skill
from backend.crd.stored import stored
from backend.db.models import SYSTEM_USER_ID, Kind
from backend.errors import InvalidRequest
from backend.ghosts import PUBLIC_GHOSTS, PUBLIC_NAMESPACE
from backend.ghosts.pins import pins as skill_pins
from backend.kinds import store
from backend.kinds.store import Scope
from backend.skills.search.selection import GhostSkills
from backend.skills.service import PUBLIC_SCOPE as PUBLIC_SKILLS
from chat_shell import McpServerConfig

Executor = AsyncSession | AsyncConnection


@dataclass(frozen=True)
class ResolvedGhost:
    """A Ghost as a turn uses it: the stored CRD validated once, its owner, its MCP servers
    parsed once (trusted when the Ghost is public), and the user secrets it names."""

    crd: Ghost
    owner: Scope
    mcp_servers: Mapping[str, McpServerConfig]
    secrets: frozenset[str]  # model.apiKeySecret and the `${{secrets.NAME}}` of its servers

    @classmethod
    def of(cls, crd: Ghost, owner: Scope) -> ResolvedGhost:
        servers = engine_servers(crd.spec.mcp_servers, trusted=owner.user_id == SYSTEM_USER_ID)
        key = crd.spec.model.api_key_secret
        return cls(crd, owner, servers, secret_names(servers) | ({key} if key else set()))

    @property
    def spec(self) -> GhostSpec:
        return self.crd.spec

    @property
    def public(self) -> bool:
        return self.owner.user_id == SYSTEM_USER_ID

    @cached_property
    def pins(self) -> Mapping[str, int]:
        """skill name -> the version `spec.skills` pins it to (`name@3`; `backend/ghosts/pins.py`).
        Made once per stored Ghost (`GhostCache` keeps this instance), not once per turn."""
        return MappingProxyType(skill_pins(self.spec.skills))

    @cached_property
    def unpinned(self) -> ResolvedGhost:
        """The Ghost with bare names in `skills` and `preloadSkills` (`name@3` -> `name`): what
        the rest of a turn reads once the pins are taken. Made once per stored Ghost."""
        spec = self.spec.model_copy(
            update={
                "skills": [parse_skill_ref(r).name for r in self.spec.skills],
                "preload_skills": [parse_skill_ref(r).name for r in self.spec.preload_skills],
            }
        )
        return dataclasses.replace(self, crd=self.crd.model_copy(update={"spec": spec}))

    def with_preloads(self, skills: Sequence[str]) -> ResolvedGhost:
        """The Ghost as one turn sees it: `skills` preloaded on top of its own preloads."""
        preloads = list(dict.fromkeys([*self.spec.preload_skills, *skills]))
        spec = self.spec.model_copy(update={"preload_skills": preloads})
        return dataclasses.replace(self, crd=self.crd.model_copy(update={"spec": spec}))


def parse_ref(user_id: int, ref: str) -> tuple[Scope, str]:
    """(owner scope, name) of `ns/name` (the caller's) or `public/name`."""
    namespace, _, name = ref.partition("/")
    if any(name_problem(part) is not None for part in (namespace, name)):
        raise InvalidRequest(
            "a Ghost reference is '<namespace>/<name>' or 'public/<name>'",
            code="invalid_ghost_ref",
            details={"ref": ref[:200]},
        )
    if namespace == PUBLIC_NAMESPACE:
        return PUBLIC_GHOSTS, name
    return Scope(user_id, namespace), name


async def ghost_row(session: AsyncSession, user_id: int, ref: str) -> tuple[Kind, Scope]:
    """The Ghost row `ref` names for `user_id` and its owner scope; 404 `ghost_not_found`."""
    scope, name = parse_ref(user_id, ref)
    return await store.get(session, GHOST_KIND, scope, name), scope


async def resolve_ghost(session: AsyncSession, user_id: int, ref: str) -> ResolvedGhost:
    """The Ghost `ref` names for `user_id`, validated; 404 `ghost_not_found`, 409
    `stored_crd_invalid` for a stored row that no longer validates."""
    row, scope = await ghost_row(session, user_id, ref)
    return ResolvedGhost.of(stored(Ghost, row.json), scope)


# The stored JSON as the database's text (no decoding): the key of `GhostCache`.
_GHOST_TEXT = select(cast(Kind.json, Text)).where(store.GET_WHERE)


class _SlashAt(FunctionElement[int]):
    """1-based position of the first `/` in a string, 0 if none (`str.partition`'s split)."""

    type = Integer()
    inherit_cache = True


@compiles(_SlashAt)
def _slash_at_sqlite(element: _SlashAt, compiler: SQLCompiler, **kw: object) -> str:
    return f"instr({compiler.process(element.clauses, **kw)}, '/')"


@compiles(_SlashAt, "postgresql")
def _slash_at_postgresql(element: _SlashAt, compiler: SQLCompiler, **kw: object) -> str:
    return f"strpos({compiler.process(element.clauses, **kw)}, '/')"


def ghost_text_of(
    ref: ColumnExpressionArgument[str], user_id: ColumnExpressionArgument[int]
) -> ScalarSelect[str]:
    """`_GHOST_TEXT` as a scalar subquery of a row holding a Ghost reference (`ref`) and the
    user it is resolved for, split in SQL as `parse_ref` splits it: a turn reads its Ghost in
    its window's statement. NULL when no row matches, including a reference `parse_ref`
    refuses (no stored Ghost has such a name): `GhostCache.resolve` then reads it itself and
    raises the same errors as without it."""
    slash = _SlashAt(ref)
    # Guarded: a negative length is an error on PostgreSQL (stored references have a `/`).
    namespace = case((slash > 0, func.substr(ref, 1, slash - 1)))
    return (
        select(cast(Kind.json, Text))
        .where(
            Kind.kind == GHOST_KIND,
            Kind.user_id
            == case((namespace == PUBLIC_NAMESPACE, PUBLIC_GHOSTS.user_id), else_=user_id),
            Kind.namespace == namespace,
            Kind.name == func.substr(ref, slash + 1),
        )
        .scalar_subquery()
    )


class GhostCache:
    """Resolved Ghosts by owner scope and stored JSON text, so a turn validates its Ghost only
    when the stored CRD is one this process has not seen (a write stamps a new
    resourceVersion into the JSON, so an entry is never stale). Keyed by content, not by row
    id: SQLite may reuse a deleted row's id. Shared by all turns of a process, and bounded
    both in entries and in the characters of the JSON it keeps (least recently used out): a
    Ghost's JSON may be a few hundred KiB, and tenants choose how many they chat with."""

    def __init__(self, max_entries: int = 256, max_chars: int = 16 * 1024 * 1024) -> None:
        self._entries: OrderedDict[tuple[Scope, str], ResolvedGhost] = OrderedDict()
        self._max = max_entries
        self._max_chars = max_chars
        self._chars = 0

    async def resolve(
        self, session: Executor, user_id: int, ref: str, text: str | None = None
    ) -> ResolvedGhost:
        """`resolve_ghost`'s answer: 404 `ghost_not_found`, 409 `stored_crd_invalid`. `text`:
        the stored JSON already read with `ghost_text_of` in the same transaction (None:
        read it here)."""
        scope, name = parse_ref(user_id, ref)
        if text is None:
            text = await session.scalar(_GHOST_TEXT, store.get_params(GHOST_KIND, scope, name))
        if text is None:
            raise store.not_found(GHOST_KIND, scope, name)
        key = (scope, text)
        cached = self._entries.get(key)
        if cached is not None:
            self._entries.move_to_end(key)
            return cached
        ghost = ResolvedGhost.of(stored(Ghost, json.loads(text)), scope)
        self._entries[key] = ghost
        self._chars += len(text)
        while len(self._entries) > self._max or self._chars > self._max_chars:
            (_, dropped), _ = self._entries.popitem(last=False)
            self._chars -= len(dropped)
        return ghost

    def __len__(self) -> int:
        return len(self._entries)


async def skill_rows(
    session: AsyncSession, owner: Scope, names: Sequence[str], *, lock: bool = False
) -> dict[str, Kind]:
    """name -> the skill row each name resolves to; unresolved names are absent.

    `lock` takes a shared row lock (PostgreSQL) so a concurrent skill delete waits for the
    Ghost write that relies on the skill, then sees the new reference.
    """
    return await _own_else_public(session, SKILL_KIND, owner, names, lock=lock)


async def _own_else_public(
    session: AsyncSession, kind: str, owner: Scope, names: Sequence[str], *, lock: bool
) -> dict[str, Kind]:
    wanted = set(names)
    if not wanted:
        return {}
    scopes = [PUBLIC_SKILLS]
    if owner.user_id != SYSTEM_USER_ID:
        scopes.append(owner)
    stmt = select(Kind).where(
        Kind.kind == kind,
        Kind.name.in_(wanted),
        or_(*(and_(Kind.user_id == s.user_id, Kind.namespace == s.namespace) for s in scopes)),
    )
    if lock:
        stmt = stmt.with_for_update(read=True)
    found: dict[str, Kind] = {}
    for row in await session.scalars(stmt):
        if row.name not in found or row.user_id != SYSTEM_USER_ID:  # own beats public
            found[row.name] = row
    return found


async def plugin_rows(
    session: AsyncSession, owner: Scope, names: Sequence[str], *, lock: bool = False
) -> dict[str, Kind]:
    """name -> the Plugin row each name resolves to (own, else public), as `skill_rows`."""
    return await _own_else_public(session, PLUGIN_KIND, owner, names, lock=lock)


async def resolve_skills(
    session: AsyncSession, owner_scope: Scope, names: Sequence[str]
) -> list[Skill]:
    """The Skills `names` resolve to, in the order given; unresolved names are skipped."""
    found = await skill_rows(session, owner_scope, names)
    return [stored(Skill, found[n].json) for n in dict.fromkeys(names) if n in found]


def ghost_skills(owner_scope: Scope, spec: GhostSpec) -> GhostSkills:
    """Which skills a Ghost uses: those it lists, those its `skillSelector` picks among the
    owner's skills in its namespace, and with `includePublicSkills` the public ones."""
    return GhostSkills.from_spec(owner_scope, spec)
