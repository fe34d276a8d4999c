"""A marketplace (`.claude-plugin/marketplace.json`): which plugins it lists and where they are.

A plugin's `source` is a relative path inside the marketplace (`./sales`, resolved against
`metadata.pluginRoot` when it is a bare name) or a remote source (`url`, `git-subdir`,
`github`): those are fetched by an injectable `RemoteFetcher` (the URL import path, with its
egress policy); without one they are reported as refused, `remote_source_unavailable`.
"""

from __future__ import annotations

import posixpath
import time
from dataclasses import dataclass
from typing import Any, Protocol

from backend.errors import InvalidRequest
from backend.plugins.tree import MARKETPLACE, Tree, TreeFile
from backend.skills.importing.errors import FetchTimeout, too_large
from chat_shell import path_problem


@dataclass(frozen=True)
class RemoteSource:
    """Where a remote plugin is: a git repository or archive URL, ref or commit, sub-path."""

    type: str  # url | git-subdir | github | ...
    url: str | None
    ref: str | None = None
    commit: str | None = None
    path: str | None = None


@dataclass
class Allowance:
    """What is left of an import's shared budget for one more remote fetch. The fetcher notes
    in `downloaded` the bytes it received, whether the fetch succeeds or fails: a source that
    downloads its fill and then fails costs the budget as much as one that succeeds."""

    unpacked_bytes: int
    download_bytes: int
    seconds: float
    downloaded: int = 0

    def note_downloaded(self, size: int) -> None:
        self.downloaded = size


class RemoteFetcher(Protocol):
    """Fetches a remote plugin's files (the URL/git importer provides one), within `allowance`
    when given (its limits narrowed to it) and its own limits always."""

    async def fetch(
        self, source: RemoteSource, allowance: Allowance | None = None
    ) -> dict[str, TreeFile]: ...


class SharedBudget:
    """The remote sources of one import share one time, one download and one unpacked-bytes
    budget (the limits of one import from a URL), so a marketplace listing many remote sources
    costs no more than that: each fetch may use only what is left (`Allowance`), and once one
    is spent, the sources left are refused with the fetch's own codes."""

    def __init__(
        self, fetcher: RemoteFetcher, *, seconds: float, max_bytes: int, max_download_bytes: int
    ) -> None:
        self._fetcher = fetcher
        self._seconds = seconds
        self._max_bytes = max_bytes
        self._left = max_bytes
        self._max_download = max_download_bytes
        self._download_left = max_download_bytes
        self._deadline = time.monotonic() + seconds

    async def fetch(
        self, source: RemoteSource, allowance: Allowance | None = None
    ) -> dict[str, TreeFile]:
        seconds_left = self._deadline - time.monotonic()
        if seconds_left <= 0:
            raise FetchTimeout(
                f"the remote sources of this import took longer than {self._seconds} s",
                details={"limit": self._seconds},
            )
        if self._download_left <= 0:
            raise too_large(
                "download_too_large", "the downloads of the remote sources", self._max_download
            )
        if self._left <= 0:
            raise too_large("download_too_large", "the remote sources together", self._max_bytes)
        mine = Allowance(self._left, self._download_left, seconds_left)
        try:
            files = await self._fetcher.fetch(source, mine)
        finally:
            self._download_left -= mine.downloaded
        self._left -= sum(len(f.data) for f in files.values())
        if self._download_left < 0:  # a fetcher that ignored its allowance
            raise too_large(
                "download_too_large", "the downloads of the remote sources", self._max_download
            )
        if self._left < 0:
            raise too_large("download_too_large", "the remote sources together", self._max_bytes)
        return files


@dataclass(frozen=True)
class Listing:
    """One plugin a marketplace lists: its entry and a local folder or a remote source."""

    name: str
    entry: dict[str, Any]
    folder: str | None = None
    remote: RemoteSource | None = None
    problem: tuple[str, str] | None = None  # (code, message) when the entry itself is unusable


def _remote(source: dict[str, Any]) -> RemoteSource:
    kind = str(source.get("source") or "")
    url = source.get("url") or source.get("repo")
    if kind == "github" and isinstance(source.get("repo"), str):
        url = f"https://github.com/{source['repo']}.git"
    return RemoteSource(
        type=kind,
        url=str(url) if url else None,
        ref=source.get("ref") if isinstance(source.get("ref"), str) else None,
        commit=source.get("sha") if isinstance(source.get("sha"), str) else None,
        path=source.get("path") if isinstance(source.get("path"), str) else None,
    )


def _local(raw: str, plugin_root: str, tree: Tree) -> str | tuple[str, str]:
    path = raw.strip()
    if not path.startswith(("./", "../")) and plugin_root:
        path = posixpath.join(plugin_root, path)
    folder = posixpath.normpath(path.removeprefix("./")).strip("/")
    if folder == ".":
        folder = ""
    if folder.startswith("..") or (folder and path_problem(folder) is not None):
        return ("invalid_plugin_source", f"source {raw!r} leaves the marketplace")
    prefix = f"{folder}/" if folder else ""
    if not any(p.startswith(prefix) for p in tree):
        return ("plugin_source_missing", f"source {raw!r} is not in the archive")
    return folder


def listings(tree: Tree, document: Any) -> list[Listing]:
    """The plugins `document` (marketplace.json, parsed) lists, in its order."""
    if not isinstance(document, dict) or not isinstance(document.get("plugins"), list):
        raise InvalidRequest(
            f"{MARKETPLACE} must be an object with a 'plugins' list",
            code="invalid_marketplace",
            details={"entry": MARKETPLACE},
        )
    metadata = document.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
    plugin_root = str(metadata.get("pluginRoot") or "").removeprefix("./").strip("/")
    found: list[Listing] = []
    for index, entry in enumerate(document["plugins"]):
        if not isinstance(entry, dict):
            found.append(
                Listing(f"#{index}", {}, problem=("invalid_plugin_entry", "not an object"))
            )
            continue
        name = str(entry.get("name") or f"#{index}")
        source = entry.get("source")
        if isinstance(source, str):
            local = _local(source, plugin_root, tree)
            if isinstance(local, tuple):
                found.append(Listing(name, entry, problem=local))
            else:
                found.append(Listing(name, entry, folder=local))
        elif isinstance(source, dict):
            if source.get("source") == "local" and isinstance(source.get("path"), str):
                local = _local(source["path"], plugin_root, tree)
                if isinstance(local, tuple):
                    found.append(Listing(name, entry, problem=local))
                else:
                    found.append(Listing(name, entry, folder=local))
            else:
                found.append(Listing(name, entry, remote=_remote(source)))
        else:
            found.append(
                Listing(name, entry, problem=("invalid_plugin_entry", "the entry has no source"))
            )
    return found
