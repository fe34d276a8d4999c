"""An uploaded plugin or marketplace ZIP as a file tree, through the one package reader.

The archive passes every rule of skill uploads (`chat_shell.packages`: caps, paths, symlinks,
CRCs) before a byte is used. Unlike a skill package, dot-entries count here: `.claude-plugin/`
and `.mcp.json` are the plugin format. A repository ZIP with one top-level folder (GitHub's
`repo-main/`) is read from inside that folder.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from backend.errors import InvalidRequest
from backend.skills.errors import translated
from backend.skills.limits import ArchiveLimits
from chat_shell import open_archive


@dataclass(frozen=True)
class TreeFile:
    data: bytes
    mode: int  # permission bits (0o755 keeps a script executable in its skill package)


Tree = Mapping[str, TreeFile]  # posix path relative to the plugin (or marketplace) root

MANIFEST = ".claude-plugin/plugin.json"
MARKETPLACE = ".claude-plugin/marketplace.json"


def read_tree(data: bytes, limits: ArchiveLimits) -> dict[str, TreeFile]:
    """Every regular file of the ZIP (verified), macOS resource forks left out."""
    with translated():
        archive = open_archive(data, limits)
        archive.verify()
        return {
            e.name: TreeFile(archive.read(e), e.mode or 0o644)
            for e in archive.entries
            if not e.name.split("/")[0] == "__MACOSX"
        }


def subtree(tree: Tree, folder: str) -> dict[str, TreeFile]:
    """The files under `folder` ("" for all), relative to it."""
    prefix = folder.strip("/") + "/" if folder.strip("/") else ""
    return {p.removeprefix(prefix): b for p, b in tree.items() if p.startswith(prefix)}


def is_plugin_root(tree: Tree) -> bool:
    return (
        MANIFEST in tree
        or MARKETPLACE in tree
        or any(p.startswith(("skills/", "commands/")) for p in tree)
    )


def rooted(tree: Tree) -> tuple[dict[str, TreeFile], str | None]:
    """The tree from its plugin or marketplace root (itself, or its single top-level folder),
    and that folder's name."""
    if is_plugin_root(tree):
        return dict(tree), None
    tops = {p.split("/")[0] for p in tree if "/" in p}
    if len(tops) == 1 and all("/" in p for p in tree):
        top = tops.pop()
        inner = subtree(tree, top)
        if is_plugin_root(inner):
            return inner, top
    raise InvalidRequest(
        f"no plugin here: neither {MANIFEST}, {MARKETPLACE} nor skills/ or commands/ at the "
        "archive root or in its one top-level folder",
        code="not_a_plugin",
    )
