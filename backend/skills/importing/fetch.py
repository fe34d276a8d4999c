"""`fetch_source`: an https archive (ZIP, tar.gz) or a git repository, as a `FetchedTree`.

Which one a URL is: `.zip`, `.tar.gz`, `.tgz` are archives; `.git` is a repository; anything
else is asked `info/refs?service=git-upload-pack` (the smart-HTTP probe; a dumb server answers
it with its plain refs file), and is downloaded as an archive when that finds no repository.
The archive's bytes decide ZIP or tar.gz.
"""

from __future__ import annotations

import asyncio
import posixpath
import re
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

from backend.skills.importing.archives import is_gzip, is_zip, unpack_tar_gz, unpack_zip
from backend.skills.importing.errors import FetchFailed, refused
from backend.skills.importing.git import fetch_git
from backend.skills.importing.http import Downloader
from backend.skills.importing.limits import FetchLimits
from backend.skills.importing.tree import FetchedTree, TreeFile
from chat_shell import EgressPolicy, path_problem, readable_url

ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz")
_REFS_LINE = re.compile(rb"[0-9a-f]{40}\t\S+")


def normalize_path(path: str | None) -> str:
    """`path` as "" or "a/b"; 422 `invalid_import_path` for anything unsafe."""
    cleaned = (path or "").strip("/")
    if cleaned and path_problem(cleaned) is not None:
        raise refused(
            "invalid_import_path",
            "path must be a relative folder path",
            reason=path_problem(cleaned),
        )
    return cleaned


def _check_url(url: str) -> str:
    try:
        parts = urlsplit(url)
        host, _ = parts.hostname, parts.port  # each raises on a malformed authority
    except ValueError:  # "http://[::1", a port out of range
        raise refused("invalid_import_url", "the URL is malformed") from None
    if parts.scheme not in ("https", "http") or not host:
        raise refused("invalid_import_url", "the URL must be an http or https URL")
    if parts.username or parts.password:
        raise refused("invalid_import_url", "credentials in the URL are not accepted")
    if not readable_url(url):
        raise refused("invalid_import_url", "the URL is malformed")
    return parts.path


async def fetch_source(
    url: str,
    ref: str | None,
    path: str | None,
    policy: EgressPolicy,
    limits: FetchLimits,
    *,
    received: Callable[[int], None] | None = None,
) -> FetchedTree:
    """The files of `url` (at `ref`, under `path`) as a `FetchedTree`. `received` is told the
    bytes the fetch downloaded, whether it succeeds or fails (a budget shared by fetches).

    Raises `FetchError`s (`fetch_failed`, `fetch_timeout`, `download_too_large`,
    `egress_forbidden`, `unknown_ref`, `path_not_found`, `not_an_archive`, ...) and the
    package reader's archive refusals (`PackageError`, same codes as uploads).
    """
    url_path = _check_url(url)
    folder = normalize_path(path)
    # The downloads block (`Downloader`): each runs in a worker thread.
    with Downloader(policy, limits) as downloader:
        try:
            return await _fetch(downloader, url, url_path, ref, folder)
        finally:
            if received is not None:
                received(downloader.received)


async def _fetch(
    downloader: Downloader, url: str, url_path: str, ref: str | None, folder: str
) -> FetchedTree:
    if url_path.endswith(ARCHIVE_SUFFIXES):
        is_git = False
    else:
        is_git = url_path.endswith(".git") or await asyncio.to_thread(_answers_git, downloader, url)
    if is_git:
        commit, files, problems = await asyncio.to_thread(fetch_git, url, ref, folder, downloader)
        downloader.check_deadline()
        name = posixpath.basename(folder) or _repo_name(url_path)
        return FetchedTree(url, ref, commit, folder, "git", name, files, problems)
    if ref is not None:
        raise refused("ref_not_applicable", "a ref applies to git repositories only")
    files = await asyncio.to_thread(_archive, downloader, url)
    top, files = _strip_single_top(files)
    name = posixpath.basename(folder) or top or _repo_name(url_path)
    return FetchedTree(url, None, None, folder, "archive", name, _under(files, folder))


def _answers_git(downloader: Downloader, url: str) -> bool:
    probe = url.rstrip("/") + "/info/refs?service=git-upload-pack"
    answer = downloader.request("GET", probe)
    if answer.status != 200:
        return False
    return answer.content_type.startswith("application/x-git-") or bool(
        _REFS_LINE.match(answer.body)
    )


def _archive(downloader: Downloader, url: str) -> dict[str, TreeFile]:
    answer = downloader.request("GET", url)
    if answer.status != 200:
        raise FetchFailed(
            f"the source answered HTTP {answer.status}", details={"status": answer.status}
        )
    limits = downloader.limits
    if is_zip(answer.body):
        return unpack_zip(answer.body, limits)
    if is_gzip(answer.body):
        return unpack_tar_gz(answer.body, limits)
    raise refused(
        "not_an_archive", "the URL is neither a git repository nor a ZIP or tar.gz archive"
    )


def _strip_single_top(files: Mapping[str, TreeFile]) -> tuple[str, dict[str, TreeFile]]:
    """GitHub and `git archive --prefix` wrap a repository in one folder: paths are the
    repository's without it. An archive of one skill folder keeps it as the skill's name."""
    tops = {p.split("/", 1)[0] for p in files}
    if len(tops) != 1 or any("/" not in p for p in files):
        return "", dict(files)
    (top,) = tops
    return top, {p.split("/", 1)[1]: f for p, f in files.items()}


def _under(files: Mapping[str, TreeFile], folder: str) -> dict[str, TreeFile]:
    if not folder:
        return dict(files)
    prefix = folder + "/"
    kept = {p.removeprefix(prefix): f for p, f in files.items() if p.startswith(prefix)}
    if not kept:
        raise refused("path_not_found", "the path is not in the archive", path=folder)
    return kept


def _repo_name(url_path: str) -> str:
    base = posixpath.basename(url_path.rstrip("/"))
    for suffix in (*ARCHIVE_SUFFIXES, ".git"):
        base = base.removesuffix(suffix)
    return base or "skill"
