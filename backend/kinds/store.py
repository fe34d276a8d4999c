"""CRD rows: lookup scoped by owner, keyset-paginated listing, optimistic updates.

The stored `json` is always the complete, current CRD (metadata.resourceVersion and
creationTimestamp included), so reads hand it out as stored; listing never decodes it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Text, and_, bindparam, cast, func, or_, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from backend.db.models import SYSTEM_USER_ID, Kind
from backend.db.types import utcnow
from backend.errors import Conflict, NotFound, PreconditionFailed
from backend.kinds import cursor
from backend.kinds.cursor import MAX_ID

MAX_PAGE = 500


class NotFoundError(NotFound):
    """A CRD that is not there (or not the caller's)."""


@dataclass(frozen=True)
class Scope:
    """Whose objects, in which namespace: every query is filtered by one or more scopes."""

    user_id: int
    namespace: str


@dataclass(frozen=True)
class Page:
    items_json: list[str]  # each the stored CRD, serialized
    next_token: str | None

    def render(self) -> bytes:
        token = json.dumps(self.next_token)
        return f'{{"items":[{",".join(self.items_json)}],"continue":{token}}}'.encode()


def _place(kind: str, scope: Scope) -> str:
    """Where an object is, in a message (public skills live in user 0's namespace `default`)."""
    if scope.user_id == SYSTEM_USER_ID:
        return f"among public {kind}s"
    return f"in namespace {scope.namespace!r}"


def _where(name: str, scope: Scope) -> dict[str, Any]:
    public = scope.user_id == SYSTEM_USER_ID
    return {"name": name, "namespace": scope.namespace, "public": public}


def _in_scopes(scopes: list[Scope]) -> ColumnElement[bool]:
    return or_(*(and_(Kind.user_id == s.user_id, Kind.namespace == s.namespace) for s in scopes))


# Built once with bind parameters: every turn reads its Ghost, and building the statement and
# its cache key cost more than the lookup (SQLAlchemy memoizes a built statement's key).
GET_WHERE = and_(
    Kind.kind == bindparam("kind"),
    Kind.user_id == bindparam("uid"),
    Kind.namespace == bindparam("ns"),
    Kind.name == bindparam("name"),
)
_GET = select(Kind).where(GET_WHERE)


def get_params(kind: str, scope: Scope, name: str) -> dict[str, Any]:
    """The bind parameters of `_GET`'s condition (`GET_WHERE`) for one object."""
    return {"kind": kind, "uid": scope.user_id, "ns": scope.namespace, "name": name}


def not_found(kind: str, scope: Scope, name: str) -> NotFoundError:
    # Someone else's object is indistinguishable from none.
    return NotFoundError(
        f"{kind} {name!r} not found {_place(kind, scope)}",
        code=f"{kind.lower()}_not_found",
        details=_where(name, scope),
    )


async def get(session: AsyncSession, kind: str, scope: Scope, name: str) -> Kind:
    row = await session.scalar(_GET, get_params(kind, scope, name))
    if row is None:
        raise not_found(kind, scope, name)
    return row


def _tag_filter(dialect: str, tag: str) -> ColumnElement[bool]:
    if dialect == "postgresql":
        clause = text("CAST(kinds.json -> 'spec' -> 'tags' AS jsonb) @> CAST(:tag_json AS jsonb)")
        return clause.bindparams(tag_json=json.dumps([tag]))  # type: ignore[return-value]
    clause = text(
        "EXISTS (SELECT 1 FROM json_each(kinds.json, '$.spec.tags') AS t WHERE t.value = :tag)"
    )
    return clause.bindparams(tag=tag)  # type: ignore[return-value]


async def list_page(
    session: AsyncSession,
    kind: str,
    scopes: list[Scope],
    *,
    limit: int = MAX_PAGE,
    token: str | None = None,
    query: str | None = None,
    tag: str | None = None,
) -> Page:
    dialect = session.get_bind().dialect.name
    stmt = select(Kind.id, Kind.name, cast(Kind.json, Text)).where(
        Kind.kind == kind, _in_scopes(scopes)
    )
    if token:
        after_name, after_id = cursor.decode(token)
        stmt = stmt.where(
            or_(Kind.name > after_name, and_(Kind.name == after_name, Kind.id > after_id))
        )
    if query:
        needle = query.lower()
        description = func.lower(Kind.json["spec"]["description"].as_string())
        stmt = stmt.where(
            or_(
                Kind.name.contains(needle, autoescape=True),
                description.contains(needle, autoescape=True),
            )
        )
    if tag:
        stmt = stmt.where(_tag_filter(dialect, tag))
    rows = (await session.execute(stmt.order_by(Kind.name, Kind.id).limit(limit + 1))).all()
    more = len(rows) > limit
    rows = rows[:limit]
    next_token = cursor.encode(rows[-1][1], rows[-1][0]) if more and rows else None
    return Page(items_json=[r[2] for r in rows], next_token=next_token)


def _stamp(crd: dict[str, Any], version: int, created: str) -> dict[str, Any]:
    crd["metadata"]["resourceVersion"] = version
    crd["metadata"]["creationTimestamp"] = created
    return crd


async def insert(
    session: AsyncSession, kind: str, scope: Scope, name: str, crd: dict[str, Any]
) -> Kind:
    """Add a row (flushed, not committed). A taken name is 409 `<kind>_exists`."""
    now = utcnow()
    row = Kind(
        user_id=scope.user_id,
        kind=kind,
        namespace=scope.namespace,
        name=name,
        json=_stamp(crd, 1, now.isoformat()),
        resource_version=1,
        created_at=now,
        updated_at=now,
    )
    session.add(row)
    try:
        await session.flush()
    except IntegrityError as exc:
        await session.rollback()
        raise Conflict(
            f"{kind} {name!r} already exists {_place(kind, scope)}",
            code=f"{kind.lower()}_exists",
            details=_where(name, scope),
        ) from exc
    return row


def check_version(row: Kind, expected: int | None) -> None:
    if expected is not None and expected != row.resource_version:
        raise PreconditionFailed(
            f"resourceVersion is {row.resource_version}, not {expected}",
            code="resource_version_mismatch",
            details={"current": row.resource_version, "expected": expected},
        )


async def replace(
    session: AsyncSession, row: Kind, crd: dict[str, Any], *, expected: int | None = None
) -> Kind:
    """Store a new version of `row` (flushed, not committed) unless someone else got there first."""
    check_version(row, expected)
    version = row.resource_version + 1
    stamped = _stamp(crd, version, row.created_at.isoformat())
    result = await session.execute(
        update(Kind)
        .where(Kind.id == row.id, Kind.resource_version == row.resource_version)
        .values(json=stamped, resource_version=version, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    if result.rowcount != 1:  # type: ignore[attr-defined]
        raise PreconditionFailed(
            "the object changed while this request ran; read it again and retry",
            code="resource_version_mismatch",
        )
    await session.refresh(row)
    return row


_VERSION = re.compile(r"[0-9]{1,19}")


def parse_if_match(value: str | None) -> int | None:
    """`If-Match: "3"` / `3` -> 3; `*` or absent -> None (no precondition)."""
    if value is None or value.strip() == "*":
        return None
    raw = value.strip().removeprefix("W/").strip('"')
    # ASCII digits of a version that fits its column: `isdigit()` also takes "²" and "٣",
    # which int() refuses, and 5,000 digits Python will not parse (both were 500s).
    if not _VERSION.fullmatch(raw) or int(raw) > MAX_ID:
        raise PreconditionFailed(
            "If-Match must carry a resourceVersion", code="resource_version_mismatch"
        )
    return int(raw)
