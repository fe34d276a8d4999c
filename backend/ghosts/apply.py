"""kubectl-style apply: create-or-update Ghost CRDs from a YAML stream or a JSON list.

All or nothing: every document is validated before anything is written, and every write of
one apply happens in one transaction. A failure names the document by its 0-based `index` in
the stream (empty YAML documents count, so the index matches the `---` separators).

Each document goes to its `metadata.namespace` (default `default`) of the caller;
`namespace: public` addresses the public Ghosts, which only admins may write.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from backend.config import Settings
from backend.crd.ghost import GHOST_KIND
from backend.db.models import User
from backend.errors import Forbidden, InvalidRequest, SkillhiveError
from backend.ghosts import PUBLIC_GHOSTS, PUBLIC_NAMESPACE, service
from backend.ghosts.status import served_many
from backend.ghosts.validation import GhostInput, parse_ghost
from backend.kinds.store import Scope
from backend.ops.quotas import check_stored
from chat_shell import EgressPolicy


@dataclass(frozen=True)
class _Target:
    index: int
    scope: Scope
    ghost: GhostInput


@contextmanager
def _document(index: int) -> Iterator[None]:
    try:
        yield
    except SkillhiveError as exc:
        exc.message = f"document {index}: {exc.message}"
        exc.details = {"index": index, **exc.details}
        raise


def _scope(user: User, document: Any) -> Scope:
    if not isinstance(document, dict):
        raise InvalidRequest("each document must be a Ghost CRD (an object)", code="invalid_ghost")
    kind = document.get("kind")
    if kind != GHOST_KIND:
        raise InvalidRequest(
            f"apply takes kind {GHOST_KIND!r} only", code="unsupported_kind", details={"kind": kind}
        )
    metadata = document.get("metadata")
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    if namespace == PUBLIC_NAMESPACE:
        if not user.is_admin:
            raise Forbidden("public Ghosts are written by admins only", code="admin_required")
        return PUBLIC_GHOSTS
    # A missing or malformed namespace fails in parse_ghost, which validates metadata.
    return Scope(user.id, namespace if isinstance(namespace, str) else "default")


def _targets(user: User, documents: list[Any], egress: EgressPolicy | None) -> list[_Target]:
    targets: list[_Target] = []
    seen: dict[tuple[Scope, str], int] = {}
    for index, document in enumerate(documents):
        if document is None:  # an empty YAML document, as kubectl skips them
            continue
        with _document(index):
            scope = _scope(user, document)
            ghost = parse_ghost(document, scope, egress=egress)
            key = (scope, ghost.ghost.metadata.name)
            if key in seen:
                raise InvalidRequest(
                    f"{scope.namespace}/{key[1]} also appears as document {seen[key]}",
                    code="duplicate_object",
                    details={"first": seen[key]},
                )
            seen[key] = index
        targets.append(_Target(index, scope, ghost))
    if not targets:
        raise InvalidRequest("no objects to apply", code="no_objects")
    return targets


async def apply(
    session: AsyncSession,
    user: User,
    documents: list[Any],
    *,
    egress: EgressPolicy | None = None,
    dry_run: bool = False,
    settings: Settings | None = None,
) -> list[dict[str, Any]]:
    """Create or update every Ghost; per object `created`, `configured` or `unchanged`, and
    the warnings its `status` shows. A dry run makes every check and write, then rolls back."""
    targets = _targets(user, documents, egress)  # every check without the database first
    try:
        # Then every check with it, before the first write: all skill locks are taken before
        # any Ghost row is, as a skill delete takes them (no lock-order deadlock).
        plans = []
        for target in targets:
            with _document(target.index):
                row = await service.find(session, target.scope, target.ghost.ghost.metadata.name)
                action = await service.prepare(
                    session, target.scope, target.ghost, row, caller_id=user.id
                )
            plans.append((target, row, action))
        created = sum(1 for t, _, a in plans if a == "created" and t.scope.user_id == user.id)
        if settings is not None and created:  # ops: the Ghosts quota counts applied ones too
            await check_stored(session, settings, user.id, {"ghosts": created})
        for target, row, action in plans:
            with _document(target.index):
                await service.write(session, target.scope, target.ghost, row, action)
        if dry_run:
            await session.rollback()
        else:
            await session.commit()
    except Exception:
        await session.rollback()  # one failure: none of the earlier objects stay written
        raise
    served = await served_many(session, [(t.scope, t.ghost.crd) for t, _, _ in plans])
    return [
        {
            "kind": GHOST_KIND,
            "namespace": target.scope.namespace,
            "name": target.ghost.ghost.metadata.name,
            "action": action,
            "warnings": crd["status"]["warnings"],
        }
        for (target, _, action), crd in zip(plans, served, strict=True)
    ]
