"""Plugin storage: a `Plugin` row in `kinds` owning `Skill` rows named `<plugin>/<skill>`.

An import reads and checks everything first (off the event loop), then writes every accepted
plugin with its skills, their versions and search rows in one transaction. Importing a plugin
that exists updates it in place, as a skill import updates a skill: a version only for changed
bytes. A plugin that cannot be imported (over quota, a refused MCP server, a remote source
without a fetcher, dropping a skill a Ghost names, ...) is reported with its code; so is a skill
a plugin cannot keep. Nothing is ever dropped silently.
"""

from __future__ import annotations

import asyncio
import posixpath
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlalchemy import Text, cast, select
from sqlalchemy.ext.asyncio import AsyncSession

from backend.config import Settings
from backend.crd.common import SYSTEM_LABEL_PREFIX, ObjectMeta
from backend.crd.ghost import GHOST_KIND, current_spelling
from backend.crd.plugin import PLUGIN_KIND, Plugin, PluginStatus
from backend.crd.skill import SKILL_KIND
from backend.db.models import SYSTEM_USER_ID, Kind, Secret
from backend.egress import check_egress
from backend.errors import Conflict, InvalidRequest, SkillhiveError
from backend.ghosts import check_user_namespace, pins
from backend.ghosts.pins import pinned_versions
from backend.ghosts.references import release_skill
from backend.ghosts.validation import check_stdio_servers
from backend.kinds import store
from backend.kinds.store import Scope
from backend.ops.quotas import Limit, check_stored
from backend.plugins.marketplace import Listing, RemoteFetcher, SharedBudget, listings
from backend.plugins.reader import PluginDraft, read_plugin, tree_json
from backend.plugins.tree import MARKETPLACE, TreeFile, read_tree, rooted, subtree
from backend.skills import versions
from backend.skills.limits import ArchiveLimits
from backend.skills.search.index import index_skill

PLUGIN_LABEL = f"{SYSTEM_LABEL_PREFIX}plugin"  # on each skill a plugin owns
Result = Literal["created", "updated", "unchanged"]


@dataclass
class Outcome:
    """What happened to one plugin of an import."""

    name: str
    draft: PluginDraft | None = None
    error: SkillhiveError | None = None
    source: dict[str, Any] = field(default_factory=dict)
    status: Result = "created"  # once written: or updated, unchanged (a re-import)
    skills: dict[str, Result] = field(default_factory=dict)  # skill name -> what happened
    removed: list[str] = field(default_factory=list)  # skills the new plugin no longer has

    def answer(self) -> dict[str, Any]:
        if self.draft is None:
            assert self.error is not None
            return {
                "name": self.name,
                "status": "refused",
                "code": self.error.code,
                "message": self.error.message,
                "details": self.error.details,
            }
        draft = self.draft
        skills: list[dict[str, Any]] = [
            {
                "name": s.name,
                "path": s.path,
                "status": self.skills.get(s.name, "created"),
                "warnings": [w.model_dump() for w in s.warnings + list(s.package.warnings)],
            }
            for s in draft.skills
        ]
        skills += [{**r.answer(), "status": "refused"} for r in draft.refused_skills]
        skills += [{"name": name, "status": "removed"} for name in self.removed]
        return {
            "name": draft.name,
            "status": self.status,
            "skills": skills,
            "commands": [c.name for c in draft.spec.commands],
            "mcpServers": sorted(draft.spec.mcp_servers),
            "secrets": draft.spec.secrets,
            "warnings": [w.model_dump() for w in draft.warnings],
        }


def _limits(settings: Settings) -> ArchiveLimits:
    return ArchiveLimits.from_settings(settings)


def _check_servers(draft: PluginDraft, settings: Settings) -> None:
    """A user's plugin: its skills' own servers start no process (`.mcp.json`'s are checked
    as it is read), and every server keeps to the egress policy."""
    for skill in draft.skills:
        check_stdio_servers(skill.package.spec.mcp_servers, trusted=False)
    urls = {n: s.url for n, s in draft.spec.mcp_servers.items() if s.url is not None}
    for skill in draft.skills:  # a skill's own servers too
        urls.update({n: s.url for n, s in skill.package.spec.mcp_servers.items() if s.url})
    check_egress(urls, settings.egress, key="server", what="MCP servers")


async def _read_listing(
    listing: Listing,
    tree: dict[str, TreeFile],
    settings: Settings,
    *,
    public: bool,
    fetcher: RemoteFetcher | None,
    origin: dict[str, Any] | None = None,
) -> Outcome:
    outcome = Outcome(listing.name)
    try:
        if listing.problem is not None:
            code, message = listing.problem
            raise InvalidRequest(f"plugin {listing.name!r}: {message}", code=code)
        if listing.remote is not None:
            remote = listing.remote
            outcome.source = {"type": remote.type, "url": remote.url, "commit": remote.commit}
            if fetcher is None:
                raise InvalidRequest(
                    f"plugin {listing.name!r} lives at a remote source ({remote.type}); "
                    "this server cannot fetch it here: import it from its own URL",
                    code="remote_source_unavailable",
                    details={"source": outcome.source},
                )
            files = await fetcher.fetch(remote)
        else:
            assert listing.folder is not None
            outcome.source = {"type": "marketplace", "path": listing.folder}
            if origin is not None:  # fetched from a URL: where in that source it came from
                path = posixpath.join(origin["path"], listing.folder).strip("/")
                outcome.source = {**origin, "type": "url", "path": path}
            files = subtree(tree, listing.folder)
        draft = await asyncio.to_thread(
            read_plugin,
            files,
            fallback_name=listing.name,
            entry=listing.entry,
            limits=_limits(settings),
            public=public,
        )
        if not public:
            _check_servers(draft, settings)
        outcome.draft = draft
    except SkillhiveError as exc:
        outcome.error = exc
    return outcome


def _skill_crd(
    draft: PluginDraft, index: int, scope: Scope, *, kept: Kind | None = None
) -> dict[str, Any]:
    """The CRD of the plugin's skill `index`; `kept`, the stored row a re-import updates, keeps
    its labels and `enabled` (they belong to the skill, not to a package)."""
    skill = draft.skills[index]
    labels, enabled = {PLUGIN_LABEL: draft.name}, True
    if kept is not None:
        labels = {**kept.json["metadata"].get("labels", {}), **labels}
        enabled = kept.json["status"].get("enabled", True)
    crd = skill.package.to_crd(namespace=scope.namespace, labels=labels, enabled=enabled)
    data = crd.model_dump(mode="json", exclude_none=True)
    data["metadata"]["name"] = skill.name
    data["status"]["warnings"] = [w.model_dump() for w in skill.warnings] + data["status"].get(
        "warnings", []
    )
    return data


def _plugin_crd(draft: PluginDraft, scope: Scope, source: dict[str, Any]) -> dict[str, Any]:
    spec = draft.spec.model_copy(update={"source": source})
    crd = Plugin(
        metadata=ObjectMeta(name=draft.name, namespace=scope.namespace),
        spec=spec,
        status=PluginStatus(public=scope.user_id == SYSTEM_USER_ID, warnings=draft.warnings),
    )
    return crd.model_dump(
        mode="json",
        exclude_none=True,
        exclude={"metadata": {"resource_version", "creation_timestamp"}},
    )


async def _write(
    session: AsyncSession, settings: Settings, scope: Scope, outcome: Outcome, actor: int
) -> None:
    """Create the plugin, or update it in place when it exists (a re-import).

    Every refusal (quota, a dropped skill a Ghost uses) comes before this plugin's first write,
    so a refused plugin leaves nothing behind while the others of a marketplace go on.
    """
    draft = outcome.draft
    assert draft is not None
    stored = await session.scalar(
        select(Kind)
        .where(
            Kind.kind == PLUGIN_KIND,
            Kind.user_id == scope.user_id,
            Kind.namespace == scope.namespace,
            Kind.name == draft.name,
        )
        .with_for_update()  # concurrent re-imports of one plugin update one after the other
    )
    owned = (
        {}
        if stored is None
        else {r.name: r for r in await _owned_skills(session, scope, draft.name)}
    )
    try:
        await _admit(session, settings, scope, draft, owned)
    except SkillhiveError as exc:
        outcome.draft, outcome.error = None, exc
        return
    crd = _plugin_crd(draft, scope, outcome.source)
    if stored is None:
        await store.insert(session, PLUGIN_KIND, scope, draft.name, crd)
        changed = True
    else:
        changed = (crd["spec"], crd["status"]) != (stored.json["spec"], stored.json["status"])
        if changed:
            await store.replace(session, stored, crd)
    for index, skill in enumerate(draft.skills):
        outcome.skills[skill.name] = await _write_skill(
            session, settings, scope, outcome, index, owned.get(skill.name), actor
        )
    outcome.removed = sorted(set(owned) - {s.name for s in draft.skills})
    await _remove(session, [owned[name] for name in outcome.removed])
    if stored is not None:
        changed = changed or bool(outcome.removed)
        changed = changed or any(r != "unchanged" for r in outcome.skills.values())
        outcome.status = "updated" if changed else "unchanged"


async def _admit(
    session: AsyncSession,
    settings: Settings,
    scope: Scope,
    draft: PluginDraft,
    owned: dict[str, Kind],
) -> None:
    """Refuse a write over the user's quotas, or an update dropping a skill a Ghost names."""
    for name in sorted(set(owned) - {s.name for s in draft.skills}):
        await release_skill(session, scope, name, force=False)  # 409 `skill_referenced`
    changed = [
        s
        for s in draft.skills
        if s.name not in owned or owned[s.name].json["status"]["sha256"] != s.package.sha256
    ]
    adding: dict[Limit, int] = {
        "skills": sum(s.name not in owned for s in changed),
        "skill_bytes": sum(s.package.size for s in changed),
    }
    await check_stored(session, settings, scope.user_id, adding)


async def _write_skill(
    session: AsyncSession,
    settings: Settings,
    scope: Scope,
    outcome: Outcome,
    index: int,
    row: Kind | None,
    actor: int,
) -> Result:
    """One skill of the plugin: created, updated (a new version) or unchanged (same bytes)."""
    draft = outcome.draft
    assert draft is not None
    skill = draft.skills[index]
    crd = _skill_crd(draft, index, scope, kept=row)
    created = row is None
    if row is None:
        row = await store.insert(session, SKILL_KIND, scope, skill.name, crd)
    elif row.json["status"]["sha256"] == skill.package.sha256:
        return "unchanged"
    else:
        await store.replace(session, row, crd)
    await versions.record(
        session,
        row.id,
        row.json,
        sha256=skill.package.sha256,
        size=skill.package.size,
        data=skill.data,
        created_by=actor,
        source={"type": "plugin", "plugin": draft.name, "path": skill.path},
        retain=settings.skill_versions_retain,
        pinned=lambda: pinned_versions(session, scope, skill.name),
        new=created,
    )
    await index_skill(session, row, new=created)
    return "created" if created else "updated"


async def _remove(session: AsyncSession, skills: list[Kind]) -> None:
    """Delete skills with their versions, and the bytes no other version uses."""
    hashes: set[str] = set()
    for skill in skills:
        hashes |= await versions.hashes_of(session, skill.id)
        await session.delete(skill)  # its versions and search row go with it (ON DELETE CASCADE)
    await session.flush()
    await versions.collect(session, hashes)


async def _missing_secrets(session: AsyncSession, scope: Scope, names: set[str]) -> list[str]:
    if scope.user_id == SYSTEM_USER_ID or not names:
        return sorted(names)  # public plugins use each chatting user's secrets
    have = set(
        await session.scalars(
            select(Secret.name).where(Secret.user_id == scope.user_id, Secret.name.in_(names))
        )
    )
    return sorted(names - have)


async def import_archive(
    session: AsyncSession,
    settings: Settings,
    scope: Scope,
    data: bytes,
    *,
    actor: int,
    fetcher: RemoteFetcher | None = None,
) -> tuple[bool, dict[str, Any]]:
    """Import a plugin or marketplace ZIP. Returns (any plugin created, the import answer).

    A plugin that exists is updated in place: changed skills get a new version, new ones are
    created, and the ones it no longer has are removed (refused while a Ghost names one). A
    single plugin that is refused raises its error (nothing else to report); a marketplace
    answers for each plugin it lists.
    """
    tree, folder = await asyncio.to_thread(lambda: rooted(read_tree(data, _limits(settings))))
    return await import_tree(
        session, settings, scope, tree, folder or "plugin", actor=actor, fetcher=fetcher
    )


async def import_tree(
    session: AsyncSession,
    settings: Settings,
    scope: Scope,
    tree: dict[str, TreeFile],
    fallback_name: str,
    *,
    actor: int,
    fetcher: RemoteFetcher | None = None,
    origin: dict[str, Any] | None = None,
    only: str | None = None,
) -> tuple[bool, dict[str, Any]]:
    """Import a plugin or marketplace tree (rooted); the answer as for `import_archive`.

    `only` (a sync): the tree must be plugin `only` itself, else 409 `source_changed`.
    """
    check_user_namespace(scope, "plugins")
    public = scope.user_id == SYSTEM_USER_ID
    if only is not None and MARKETPLACE in tree:
        raise _source_changed(only, "a marketplace")
    if fetcher is not None:
        fetcher = SharedBudget(
            fetcher,
            seconds=settings.import_timeout_seconds,
            max_bytes=settings.import_max_unpacked_bytes,
            max_download_bytes=settings.import_max_download_bytes,
        )
    marketplace = MARKETPLACE in tree
    if marketplace:
        document = tree_json(tree, MARKETPLACE, "invalid_marketplace")
        found = listings(tree, document)
    else:
        found = [Listing(fallback_name, {}, folder="")]
    outcomes = [
        await _read_listing(listing, tree, settings, public=public, fetcher=fetcher, origin=origin)
        for listing in found
    ]
    draft = outcomes[0].draft
    if only is not None and draft is not None and draft.name != only:
        raise _source_changed(only, f"plugin {draft.name!r}")
    seen: set[str] = set()
    for outcome in outcomes:  # a marketplace listing one plugin twice imports it once
        if outcome.draft is None:
            continue
        if outcome.draft.name in seen:
            outcome.draft, outcome.error = (
                None,
                InvalidRequest(
                    f"the marketplace lists plugin {outcome.name!r} twice", code="duplicate_plugin"
                ),
            )
            continue
        seen.add(outcome.draft.name)
    for outcome in outcomes:
        if outcome.draft is not None:
            await _write(session, settings, scope, outcome, actor)
    if not marketplace and outcomes[0].error is not None:
        await session.rollback()
        raise outcomes[0].error
    written = [o for o in outcomes if o.draft is not None]
    secrets = {s for o in written for s in o.draft.spec.secrets}  # type: ignore[union-attr]
    counts = {r: sum(o.status == r for o in written) for r in ("created", "updated", "unchanged")}
    answer = {
        "kind": "marketplace" if marketplace else "plugin",
        "name": str(document.get("name") or "") if marketplace else written[0].draft.name,  # type: ignore[union-attr]
        "plugins": [o.answer() for o in outcomes],
        **counts,
        "refused": len(outcomes) - len(written),
        "secrets": sorted(secrets),
        "missingSecrets": await _missing_secrets(session, scope, secrets),
    }
    await session.commit()
    return bool(counts["created"]), answer


def _source_changed(name: str, found: str) -> Conflict:
    return Conflict(
        f"the source of plugin {name!r} now holds {found}; import it as a new plugin instead",
        code="source_changed",
        details={"name": name},
    )


async def get(session: AsyncSession, scope: Scope, name: str) -> dict[str, Any]:
    return (await store.get(session, PLUGIN_KIND, scope, name)).json


async def _owned_skills(session: AsyncSession, scope: Scope, name: str) -> list[Kind]:
    return list(
        await session.scalars(
            select(Kind).where(
                Kind.kind == SKILL_KIND,
                Kind.user_id == scope.user_id,
                Kind.namespace == scope.namespace,
                Kind.name.startswith(f"{name}/", autoescape=True),
            )
        )
    )


def _uses(ghost: dict[str, Any], name: str) -> bool:
    spec = current_spelling(ghost)["spec"]
    return name in spec.get("plugins", []) or any(
        s.startswith(f"{name}/") for s in pins.names(spec.get("skills", []))
    )


async def referencing_ghosts(session: AsyncSession, scope: Scope, name: str) -> list[Kind]:
    """Ghosts using plugin `name` of `scope` (listing it, or one of its skills by name).

    A user's plugin is used by their Ghosts in its namespace; a public one by public Ghosts and
    by user Ghosts without an own plugin of that name in their namespace.
    """
    stmt = select(Kind).where(Kind.kind == GHOST_KIND, cast(Kind.json, Text).contains(name))
    if scope.user_id != SYSTEM_USER_ID:
        stmt = stmt.where(Kind.user_id == scope.user_id, Kind.namespace == scope.namespace)
    rows = [
        r
        for r in await session.scalars(stmt.order_by(Kind.namespace, Kind.name))
        if _uses(r.json, name)
    ]
    if scope.user_id != SYSTEM_USER_ID:
        return rows
    found = await session.execute(
        select(Kind.user_id, Kind.namespace).where(
            Kind.kind == PLUGIN_KIND, Kind.name == name, Kind.user_id != SYSTEM_USER_ID
        )
    )
    shadowing = {(user_id, namespace) for user_id, namespace in found}
    return [
        r for r in rows if r.user_id == SYSTEM_USER_ID or (r.user_id, r.namespace) not in shadowing
    ]


async def delete(session: AsyncSession, scope: Scope, name: str) -> None:
    """Remove the plugin and every skill it owns; 409 `plugin_referenced` while Ghosts use it."""
    row = await store.get(session, PLUGIN_KIND, scope, name)
    await session.execute(select(Kind.id).where(Kind.id == row.id).with_for_update())
    ghosts = await referencing_ghosts(session, scope, name)
    if ghosts:
        visible = [r for r in ghosts if r.user_id == scope.user_id]
        raise Conflict(
            f"plugin {name!r} is used by {len(ghosts)} Ghost(s); remove it (and its skills) "
            "from them first",
            code="plugin_referenced",
            details={
                "plugin": name,
                "ghosts": [f"{r.namespace}/{r.name}" for r in visible],
                "others": len(ghosts) - len(visible),
            },
        )
    await _remove(session, await _owned_skills(session, scope, name))
    await session.delete(row)
    await session.flush()
    await session.commit()
