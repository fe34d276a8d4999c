"""The skills of a turn at any catalog size: the catalog it lists, the skills it starts with in
full, and the directory (chat_shell's `SkillDirectory`) that finds and fetches the others.

A turn reads catalog fields from `skill_search` only, and never more rows than the catalog
budget could hold: when the Ghost's enabled skills fit its budget the catalog lists them all
(as it always did); when they do not, it lists the preloaded and recently used skills and the
best matches for the user's message, and the model gets `search_skills`. Once the process keeps
the counts of a selection too large for its budget, a turn reads none of its catalog rows, and
on PostgreSQL its search's candidates come in the same round trip as the statement confirming
those counts (`_large`). Full definitions
(instructions, tools) are read for the skills a turn starts with and for each skill it loads,
through `SkillSpecCache`, keyed by the package's content hash. A skill the Ghost pins
(`name@3`) is that version's CRD and package, read from `skill_versions`; the others are the
current ones. Each skill's version is noted (`UsedVersion`) for the conversation's record.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from backend.chat.builder import skill_spec
from backend.chat.skill_versions import UsedVersion
from backend.crd.skill import Skill
from backend.crd.stored import stored
from backend.db.hot_reads import driver_rows
from backend.db.models import SYSTEM_USER_ID, Kind, SkillSearch, SkillVersion
from backend.db.pipeline import run_all
from backend.errors import SkillhiveError
from backend.skills import versions
from backend.skills.search.condition import Where, where_sql
from backend.skills.search.engine import (
    GIN_ONLY,
    Counts,
    CountsQuery,
    Prefetch,
    prefetch,
    request_stems,
    search,
)
from backend.skills.search.index import ENTRY_OVERHEAD_CHARS
from backend.skills.search.selection import GhostSkills
from backend.skills.search.semantic import SemanticRanker
from backend.skills.search.text import QueryTerm, query_terms
from chat_shell import CatalogEntry, SkillMatch, SkillSpec

COMPACT_MATCHES = 5  # best matches for the user's message in a compact catalog
CHARS_PER_TOKEN = 4  # chat_shell's estimate (chat_shell/offline.py)
_MIN_ENTRY_CHARS = ENTRY_OVERHEAD_CHARS + 2


@dataclass(frozen=True)
class TurnSkills:
    catalog: list[CatalogEntry]
    specs: list[SkillSpec]  # the skills the turn starts with, in full
    search: bool  # the catalog is compact: search_skills finds the rest
    uses_secrets: bool  # one of the Ghost's skills names a user secret in its MCP servers
    versions: dict[str, UsedVersion]  # name -> version of each skill in `specs`


class SkillSpecCache:
    """Full skill definitions by content hash (and trust: public skills may run code).

    Content-addressed like the package cache, so an entry is never stale: a re-upload has a new
    hash. Shared by all turns of a process.
    """

    def __init__(self, max_entries: int = 1024) -> None:
        self._entries: OrderedDict[tuple[str, bool], SkillSpec] = OrderedDict()
        self._max = max_entries
        self.hits = 0
        self.misses = 0

    async def get(
        self, session: AsyncSession, kind_id: int, sha256: str, public: bool
    ) -> SkillSpec:
        key = (sha256, public)
        cached = self._lookup(key)
        if cached is not None:
            return cached
        crd = await session.scalar(select(Kind.json).where(Kind.id == kind_id))
        if crd is None:  # deleted since the index was read
            raise SkillhiveError("the skill was deleted meanwhile", code="skill_not_found")
        skill = stored(Skill, crd)  # validated once per package: later turns hit the cache
        spec = skill_spec(skill)
        if skill.status.sha256 == sha256:  # not replaced since the index was read
            self._remember(key, spec)
        return spec

    async def get_version(
        self, session: AsyncSession, kind_id: int, number: int, public: bool
    ) -> SkillSpec:
        """The skill as version `number` defined it (a pinned skill). Versions are immutable,
        so an entry by that version's hash is as good as one by the current package's."""
        sha256 = await session.scalar(
            select(SkillVersion.sha256).where(
                SkillVersion.kind_id == kind_id, SkillVersion.number == number
            )
        )
        if sha256 is None:  # e.g. an own skill now shadows the public one the Ghost pinned
            raise SkillhiveError(
                f"the pinned version {number} of a skill of this Ghost is not stored; "
                "pin a version it has (GET .../skills/{name}/versions)",
                code="skill_version_not_found",
                details={"version": number},
            )
        key = (sha256, public)
        cached = self._lookup(key)
        if cached is not None:
            return cached
        spec = skill_spec(stored(Skill, await versions.crd_of(session, kind_id, number)))
        self._remember(key, spec)
        return spec

    def _lookup(self, key: tuple[str, bool]) -> SkillSpec | None:
        cached = self._entries.get(key)
        if cached is None:
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return cached

    def _remember(self, key: tuple[str, bool], spec: SkillSpec) -> None:
        self._entries[key] = spec
        if len(self._entries) > self._max:
            self._entries.popitem(last=False)


_ENTRY_COLUMNS = (
    SkillSearch.kind_id,
    SkillSearch.user_id,
    SkillSearch.name,
    SkillSearch.description,
    SkillSearch.sha256,
)


def _entry(row: Any, pinned: Mapping[str, str]) -> CatalogEntry:
    public = row.user_id == SYSTEM_USER_ID
    description = pinned.get(row.name, row.description)
    return CatalogEntry(name=row.name, description=description, public=public)


async def _pinned_descriptions(
    session: AsyncSession, cache: SkillSpecCache, found: Sequence[Any], pins: Mapping[str, int]
) -> dict[str, str]:
    """name -> the description of the version the Ghost pins, for the pinned skills among
    `found` (rows or search hits): the catalog and search describe the skill a load gives.

    A pinned version not stored keeps the current description here; loading that skill
    answers `skill_version_not_found` (`SkillSpecCache.get_version`)."""
    described: dict[str, str] = {}
    for r in found:
        pin = pins.get(r.name)
        if pin is None or r.name in described:
            continue
        try:
            spec = await cache.get_version(session, r.kind_id, pin, r.user_id == SYSTEM_USER_ID)
        except SkillhiveError:
            continue
        described[r.name] = spec.description
    return described


@dataclass(frozen=True)
class _Catalog:
    fits: bool  # the full catalog fits the budget
    secrets: bool  # a skill names a user secret in its MCP servers
    counts: Counts | None  # when it does not fit: the statistics of the search for the message
    rows: list[Any]  # when it fits: its entries (`_ENTRY_COLUMNS`), by name
    # The search's candidates read ahead in the same round trip, and their rows (`Prefetch`).
    prefetched: tuple[Prefetch, list[Any]] | None = None


@dataclass(frozen=True)
class _Entry:
    """A catalog row, as `select(*_ENTRY_COLUMNS)` gives it."""

    kind_id: int
    user_id: int
    name: str
    description: str
    sha256: str


_ENTRY_SQL = ", ".join(f"sizes.{c.key}" for c in _ENTRY_COLUMNS)


class FittingCatalogs:
    """Catalogs that fit their budget, kept per process under the skill generations of their
    selection's owners (`Where.owners`), which the turn's window read (conversations.py).

    Every write of what a selection reads (search rows, labels, plugins) draws its owner a new
    generation (triggers, migration 0009; search/sample.py relies on the same), so a turn that
    reads the generations a catalog was kept under lists the same rows: it reads none of them
    again. A catalog read while a write landed is kept under the generations read before it:
    only a turn that read those, so started before the write, can get it, and gets the newer
    rows. Keyed by the selection's SQL and parameters and the budget; least recently used out.
    """

    def __init__(self, max_entries: int = 256) -> None:
        self._entries: OrderedDict[tuple[Any, ...], _Catalog] = OrderedDict()
        self._max = max_entries
        self.hits = 0

    @staticmethod
    def key(
        dialect: str, where: Where, budget_chars: int, generations: Mapping[int, str]
    ) -> tuple[Any, ...] | None:
        """The catalog's key, None when the generations read do not cover its owners."""
        if not where.owners or any(owner not in generations for owner in where.owners):
            return None
        owned = tuple(generations[owner] for owner in where.owners)
        return (dialect, where.sql, repr(sorted(where.params.items())), budget_chars, owned)

    def get(self, key: tuple[Any, ...]) -> _Catalog | None:
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
            self.hits += 1
        return found

    def keep(self, key: tuple[Any, ...], catalog: _Catalog) -> None:
        self._entries[key] = catalog
        if len(self._entries) > self._max:
            self._entries.popitem(last=False)


async def _catalog(
    session: AsyncSession,
    source: GhostSkills,
    budget_tokens: int,
    message: str,
    terms: list[QueryTerm],
    kept: tuple[FittingCatalogs, Mapping[int, str]] | None = None,
) -> _Catalog:
    """Whether the full catalog fits the budget, whether a skill names a user secret, and when
    it fits its entries, else the counts of the search for the message (its `terms`).

    When the counts kept for the selection's sample (engine.CountsQuery) hold more rows than
    the budget could, the catalog does not fit unless the selection shrank since: one statement
    reads the secrets flag and the owners' generations (`_large`; the sample's fingerprint
    too, in one more statement, when a generation changed: engine.CountsQuery), and on
    PostgreSQL the search's candidates statement, planned on the kept counts, goes in the same
    round trip (`engine.Prefetch`). Otherwise `_sized` reads the catalog's sizes. `kept`: the
    catalogs kept and the generations the turn read; one kept under them is the catalog."""
    dialect = session.get_bind().dialect.name
    where = where_sql(session, source)
    budget_chars = budget_tokens * CHARS_PER_TOKEN
    key = FittingCatalogs.key(dialect, where, budget_chars, kept[1]) if kept else None
    if kept is not None and key is not None:
        found = kept[0].get(key)
        if found is not None:
            return found
    most = budget_chars // _MIN_ENTRY_CHARS
    stems = request_stems(terms)
    query = CountsQuery.of(dialect, where, stems) if stems else None
    if query is not None and query.known is not None and query.known.rows > most:
        large = await _large(session, dialect, where, query, (message, terms), most)
        if large is not None:
            return large
    sized = await _sized(session, dialect, where, query, budget_chars, most)
    if kept is not None and key is not None and sized.fits:
        kept[0].keep(key, sized)
    return sized


def _secrets_sql(where: Where) -> str:
    return (
        f"EXISTS (SELECT 1 FROM skill_search WHERE ({where.sql}) "
        "AND skill_search.uses_secrets IS true)"
    )


async def _large(
    session: AsyncSession,
    dialect: str,
    where: Where,
    query: CountsQuery,
    message: tuple[str, list[QueryTerm]],
    most: int,
) -> _Catalog | None:
    """`_catalog` of a selection whose kept sample holds more than `most` rows: no catalog row
    is read, the sample tells (it has as many rows as the selection, up to its cap). None when
    the sample now holds `most` rows or fewer: the catalog may fit, `_sized` tells."""
    columns = [_secrets_sql(where), query.sql()]
    ahead = None
    if dialect == "postgresql":  # SQLite has no round trip to save: the search reads its own
        columns.append(GIN_ONLY)
        ahead = prefetch(dialect, where, *message, query)
    statements = [(f"SELECT {', '.join(columns)}", where.params)]
    if ahead is not None:
        statements.append((ahead.sql, where.params))
    results = await run_all(session, statements)
    secrets, value = results[0][0][0], results[0][0][1]
    counts = await query.counts(session, value)
    if counts.rows <= most:
        return None
    prefetched = (ahead, results[1]) if ahead is not None else None
    return _Catalog(False, bool(secrets), counts, [], prefetched)


async def _sized(
    session: AsyncSession,
    dialect: str,
    where: Where,
    query: CountsQuery | None,
    budget_chars: int,
    most: int,
) -> _Catalog:
    """`_catalog` in one query that reads at most as many catalog rows as the budget could hold
    (and the search sample's fingerprint, with its word counts when they are not kept). The
    entries join only when it fits, the counts are made only when it does not (a CASE branch
    the database never enters otherwise). On PostgreSQL it also sets the plans for the search
    that follows."""
    read = most + 1  # enough to tell it does not fit
    total = "coalesce(sum(sizes.chars), 0)"
    fits = f"count(*) <= {most} AND {total} <= {budget_chars}"
    columns = [
        "count(*) AS n",
        f"{total} AS total",
        f"{_secrets_sql(where)} AS secrets",
        f"CASE WHEN {fits} THEN 1 ELSE 0 END AS fits",
    ]
    if query is not None:
        columns.append(f"CASE WHEN NOT ({fits}) THEN {query.sql()} END AS df")
    if dialect == "postgresql":
        columns.append(f"{GIN_ONLY} AS gin")
    entries = ", ".join(c.key for c in _ENTRY_COLUMNS)
    # Every row of the selection when it fits (then fewer than `read`: the LIMIT cuts none).
    sizes = (
        f"SELECT {entries}, skill_search.catalog_chars AS chars FROM skill_search "
        f"WHERE {where.sql} LIMIT {read}"
    )
    sql = (
        f"WITH sizes AS ({sizes}), size AS (SELECT {', '.join(columns)} FROM sizes) "
        f"SELECT size.n, size.total, size.secrets, {'size.df' if query else 'NULL'}, "
        f"{_ENTRY_SQL} FROM size LEFT JOIN sizes ON size.fits = 1 ORDER BY sizes.name"
    )
    found: Any = await driver_rows(await session.connection(), sql, where.params)
    head = found[0]
    count, chars, secrets = int(head[0]), int(head[1]), bool(head[2])
    fits_budget = count <= most and chars <= budget_chars
    counts = None
    if not fits_budget and query is not None:
        counts = await query.counts(session, head[3])
    width = len(_ENTRY_COLUMNS)
    rows = [_Entry(*r[4 : 4 + width]) for r in found if fits_budget and r[4] is not None]
    return _Catalog(fits_budget, secrets, counts, rows)


async def _specs(
    session: AsyncSession,
    cache: SkillSpecCache,
    rows: Sequence[Any],
    pins: Mapping[str, int],
    used: dict[str, UsedVersion],
) -> list[SkillSpec]:
    """The full skills of `rows` (pinned ones as their version was); notes each in `used`."""
    latest = await versions.latest_numbers(session, [r.kind_id for r in rows if r.name not in pins])
    specs: list[SkillSpec] = []
    for r in rows:
        public = r.user_id == SYSTEM_USER_ID
        pin = pins.get(r.name)
        if pin is None:
            specs.append(await cache.get(session, r.kind_id, r.sha256, public))
            if r.kind_id in latest:
                used[r.name] = UsedVersion(latest[r.kind_id], pinned=False)
        else:
            specs.append(await cache.get_version(session, r.kind_id, pin, public))
            used[r.name] = UsedVersion(pin, pinned=True)
    return specs


async def turn_skills(
    session: AsyncSession,
    source: GhostSkills,
    cache: SkillSpecCache,
    *,
    budget_tokens: int,
    message: str,
    wanted: Sequence[str],
    threshold: float,
    pins: Mapping[str, int] | None = None,
    rerank: SemanticRanker | None = None,
    kept: tuple[FittingCatalogs, Mapping[int, str]] | None = None,
) -> TurnSkills:
    """The catalog and starting skills of a turn; `wanted` are the preloaded and recently used
    skills, which start in full; `pins`: name -> the version the Ghost pins; `kept`: the
    catalogs kept and the skill generations the turn's window read (`FittingCatalogs`)."""
    pins = pins or {}
    used: dict[str, UsedVersion] = {}
    where = source.condition()
    terms = query_terms(message)
    size = await _catalog(session, source, budget_tokens, message, terms, kept)
    if size.fits:
        rows = size.rows
        started = [r for r in rows if r.name in set(wanted)]
        specs = await _specs(session, cache, started, pins, used)
        pinned = await _pinned_descriptions(session, cache, rows, pins)
        catalog = [_entry(r, pinned) for r in rows]
        return TurnSkills(catalog, specs, False, size.secrets, used)
    started = []
    if wanted:
        stmt = select(*_ENTRY_COLUMNS).where(where, SkillSearch.name.in_(list(set(wanted))))
        started = list((await session.execute(stmt.order_by(SkillSearch.name))).all())
    matches = await search(
        session,
        source,
        message,
        limit=COMPACT_MATCHES,
        threshold=threshold,
        counts=size.counts,
        rerank=rerank,
        prefetched=size.prefetched,
    )
    pinned = await _pinned_descriptions(session, cache, [*started, *matches], pins)
    entries = {r.name: _entry(r, pinned) for r in started}
    for hit in matches:
        description = pinned.get(hit.name, hit.description)
        entries.setdefault(hit.name, CatalogEntry(name=hit.name, description=description))
    specs = await _specs(session, cache, started, pins, used)
    return TurnSkills(list(entries.values()), specs, True, size.secrets, used)


class GhostSkillDirectory:
    """chat_shell's `SkillDirectory` for one turn's Ghost: the API's search, the Ghost's skills.

    Each call opens its own short session: no connection is held while the turn runs. A skill
    it hands out is noted in `used` with its version (the turn's record, shared with it).
    """

    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        source: GhostSkills,
        cache: SkillSpecCache,
        *,
        threshold: float,
        pins: Mapping[str, int] | None = None,
        used: dict[str, UsedVersion] | None = None,
        rerank: SemanticRanker | None = None,
    ) -> None:
        self._pins = dict(pins or {})
        self.used = used if used is not None else {}
        self._sessionmaker = sessionmaker
        self._source = source
        self._cache = cache
        self._threshold = threshold
        self._rerank = rerank

    async def search(self, query: str, limit: int) -> list[SkillMatch]:
        async with self._sessionmaker() as session:
            hits = await search(
                session,
                self._source,
                query,
                limit=limit,
                threshold=self._threshold,
                rerank=self._rerank,
            )
            pinned = await _pinned_descriptions(session, self._cache, hits, self._pins)
        return [
            SkillMatch(
                name=h.name,
                namespace=h.namespace,
                description=pinned.get(h.name, h.description),
                score=h.score,
            )
            for h in hits
        ]

    async def get(self, name: str) -> SkillSpec | None:
        async with self._sessionmaker() as session:
            stmt = select(*_ENTRY_COLUMNS).where(self._source.condition(), SkillSearch.name == name)
            row = (await session.execute(stmt.limit(1))).first()
            if row is None:
                return None
            return (await _specs(session, self._cache, [row], self._pins, self.used))[0]
