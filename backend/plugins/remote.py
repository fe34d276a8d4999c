"""Plugins from URLs: `import_fetched` (`POST .../plugins/import`), `sync` (`POST
.../plugins/{name}/sync`) and the URL importer's `fetch_source` as the marketplace's
`RemoteFetcher`.

Every fetch goes through the egress policy (the URL and every redirect) and the
`SKILLHIVE_IMPORT_*` limits, exactly as a skill import from a URL. A remote `url` source is that
repository or archive at its commit (or ref); a `git-subdir` is its repository at the commit,
from the sub-folder `path`.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from backend.config import Settings
from backend.errors import Conflict
from backend.kinds.store import Scope
from backend.plugins import service
from backend.plugins.marketplace import Allowance, RemoteFetcher, RemoteSource
from backend.plugins.tree import TreeFile, rooted
from backend.skills.errors import translated
from backend.skills.importing.errors import refused
from backend.skills.importing.fetch import fetch_source
from backend.skills.importing.limits import FetchLimits
from backend.skills.importing.tree import FetchedTree


def plugin_files(fetched: FetchedTree) -> dict[str, TreeFile]:
    """The fetched files as a plugin tree; a file no package may hold (a symlink, an unsafe
    name) refuses the whole source with its package code, as it would in an uploaded ZIP."""
    for problem in fetched.problems.values():
        with translated():
            raise problem
    return {path: TreeFile(file.data, file.mode) for path, file in fetched.files.items()}


@dataclass(frozen=True)
class SourceFetcher:
    """A `RemoteFetcher` under the egress policy and fetch limits of `settings()`, read at each
    fetch (the app's current settings, as the routes see them)."""

    settings: Callable[[], Settings]

    async def fetch(
        self, source: RemoteSource, allowance: Allowance | None = None
    ) -> dict[str, TreeFile]:
        if source.url is None:
            raise refused("invalid_plugin_source", "the remote source names no URL")
        settings = self.settings()
        limits = FetchLimits.from_settings(settings)
        if allowance is not None:  # what the import's earlier sources left
            limits = replace(
                limits,
                download_bytes=min(limits.download_bytes, allowance.download_bytes),
                unpacked_bytes=min(limits.unpacked_bytes, allowance.unpacked_bytes),
                timeout_seconds=min(limits.timeout_seconds, allowance.seconds),
            )
        fetched = await fetch_source(
            source.url,
            source.commit or source.ref,
            source.path,
            settings.egress,
            limits,
            received=allowance.note_downloaded if allowance is not None else None,
        )
        return plugin_files(fetched)


async def import_fetched(
    session: AsyncSession,
    settings: Settings,
    scope: Scope,
    fetched: FetchedTree,
    *,
    actor: int,
    fetcher: RemoteFetcher | None = None,
    only: str | None = None,
) -> tuple[bool, dict[str, Any]]:
    """Import a plugin or marketplace fetched from a URL; each plugin records that source.
    `only`: a sync of that plugin (`service.import_tree`)."""
    tree, folder = rooted(plugin_files(fetched))
    path = posixpath.join(fetched.path, folder or "").strip("/")
    origin = {"url": fetched.url, "ref": fetched.ref, "commit": fetched.commit, "path": path}
    name = only or folder or fetched.root_name or "plugin"
    return await service.import_tree(
        session, settings, scope, tree, name, actor=actor, fetcher=fetcher, origin=origin, only=only
    )


async def sync(
    session: AsyncSession,
    settings: Settings,
    scope: Scope,
    name: str,
    *,
    actor: int,
    fetcher: RemoteFetcher | None = None,
) -> dict[str, Any]:
    """Fetch plugin `name`'s recorded URL source again (its ref, so a branch moves on) and
    update the plugin in place: new versions only for skills whose bytes changed."""
    source = (await service.get(session, scope, name))["spec"].get("source") or {}
    if source.get("type") != "url":  # an uploaded ZIP, or a marketplace's pinned remote source
        raise Conflict(
            f"plugin {name!r} was not imported from a URL; import it again to update it",
            code="no_import_source",
            details={"name": name},
        )
    fetched = await fetch_source(
        source["url"],
        source.get("ref"),
        source.get("path") or None,
        settings.egress,
        FetchLimits.from_settings(settings),
    )
    _, answer = await import_fetched(
        session, settings, scope, fetched, actor=actor, fetcher=fetcher, only=name
    )
    return answer
