"""A search's condition (tenancy and the Ghost's selection, selection.py) as driver SQL.

Every statement of a search pastes the same condition in as text: compiled once per source and
kept per process.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from sqlalchemy import Dialect, Select, literal_column, select
from sqlalchemy.ext.asyncio import AsyncSession

from backend.db.models import SkillSearch
from backend.skills.search.selection import SkillSource


@dataclass(frozen=True)
class Where:
    """A search's condition as driver SQL over `skill_search`, and its parameters; `owners`:
    the users whose rows it can match (their generations say when it may match others,
    sample.py)."""

    sql: str
    params: Mapping[str, Any]
    owners: tuple[int, ...]


_DIALECTS: dict[str, Dialect] = {}


def _driver_dialect(bound: Dialect) -> Dialect:
    """The session's dialect with named binds (SQLite's driver takes them natively), made
    once per process."""
    found = _DIALECTS.get(bound.name)
    if found is None:
        named = "named" if bound.paramstyle == "qmark" else bound.paramstyle
        found = _DIALECTS[bound.name] = type(bound)(paramstyle=named)  # type: ignore[call-arg]
    return found


_WHERE_CACHE_SIZE = 256
_WHERES: OrderedDict[tuple[str, str], Where] = OrderedDict()


def where_sql(session: AsyncSession, source: SkillSource) -> Where:
    """The condition of `source`, compiled once and pasted into each statement of a search as text.

    The statements differ per request (their stems), so SQLAlchemy could not cache them, and
    compiling the selection's condition a dozen times per search cost more than running the
    queries. A source is plain data (owner, names, selector), so its compiled condition is kept
    per process (least recently used out): it holds no row of the database, only the SQL that
    reads them. Compiled inside a SELECT so its correlated subqueries correlate to
    `skill_search`."""
    dialect = _driver_dialect(session.get_bind().dialect)
    key = (dialect.name, repr(source))
    found = _WHERES.get(key)
    if found is not None:
        _WHERES.move_to_end(key)
        return found
    stmt: Select[Any] = select(literal_column("1")).select_from(SkillSearch.__table__)
    compiled = stmt.where(source.condition()).compile(
        dialect=dialect, compile_kwargs={"render_postcompile": True}
    )
    head, _, condition = compiled.string.partition("WHERE ")
    assert head.split() == ["SELECT", "1", "FROM", "skill_search"], compiled.string
    found = _WHERES[key] = Where(
        condition, MappingProxyType(dict(compiled.params)), source.owners()
    )
    if len(_WHERES) > _WHERE_CACHE_SIZE:
        _WHERES.popitem(last=False)
    return found
