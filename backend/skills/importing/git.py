"""Git sources through dulwich (pure Python, always installed): a shallow fetch at a branch,
tag or commit, smart or dumb HTTP.

dulwich runs in a worker thread and its HTTP requests go through the import's `Downloader`
(egress policy on the URL and on every redirect, one byte budget, one deadline), in the same
thread. Nothing of dulwich's own HTTP stack (urllib3, proxies, credentials) is used.

The pack is read as it downloads: dulwich reads the answer off the socket and writes the pack
it demultiplexes into the store's parser (`FetchStore.add_pack`), which inflates and checks it
in a thread of its own. Nothing waits for the whole answer before working on it.
"""

from __future__ import annotations

import re
import stat
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from io import BytesIO
from typing import Any, Protocol

from dulwich.client import AbstractHttpGitClient
from dulwich.errors import (
    GitProtocolError,
    HangupException,
    NotGitRepository,
)
from dulwich.object_store import peel_sha
from dulwich.objects import Blob, Commit, ObjectID, Tree
from dulwich.protocol import CAPABILITY_NO_PROGRESS, CAPABILITY_THIN_PACK
from dulwich.refs import Ref
from dulwich.repo import MemoryRepo

from backend.skills.errors import ErrorCode, PackageError
from backend.skills.importing.errors import FetchError, FetchFailed, refused
from backend.skills.importing.http import Downloader, StreamedBody, timed_out
from backend.skills.importing.limits import FetchLimits
from backend.skills.importing.packs import BROKEN_PACK, Budget, FetchStore, check_dumb_object
from backend.skills.importing.tree import TreeFile, start_deflate
from chat_shell import PackageReadError, ReadCode, path_problem

_SHA = re.compile(r"[0-9a-f]{40}")
_GITLINK = 0o160000  # a submodule: its files are in another repository


class _Body(Protocol):
    def read(self, size: int) -> bytes: ...

    def close(self) -> None: ...


@dataclass
class _Response:
    """What dulwich reads of an urllib3 response."""

    status: int
    headers: dict[str, str]
    content_type: str | None
    redirect_location: str
    data: _Body

    def close(self) -> None:
        self.data.close()


class EgressGitClient(AbstractHttpGitClient):
    """dulwich's HTTP git client with every request made by `Downloader`."""

    def __init__(self, base_url: str, downloader: Downloader) -> None:
        # dulwich spools a thin pack whole before reading it; a self-contained one goes to
        # `FetchStore.add_pack`, parsed as it arrives. See `_negotiate_upload_pack_capabilities`.
        super().__init__(base_url, quiet=True, thin_packs=False)
        # Nobody reads the server's progress lines: it need not write them, nor we parse them.
        self._fetch_capabilities.add(CAPABILITY_NO_PROGRESS)
        self._downloader = downloader
        self._dumb_budget = Budget(downloader.limits.unpacked_bytes, "the dumb server's objects")
        self._streams: list[StreamedBody] = []

    def _http_request(
        self,
        url: str,
        headers: dict[str, str] | None = None,
        data: bytes | Iterator[bytes] | None = None,
        raise_for_status: bool = True,
    ) -> tuple[Any, Callable[[int], bytes]]:
        body = data if data is None or isinstance(data, bytes) else b"".join(data)
        reader: _Body
        if body is None:  # GETs are small
            fetched = self._downloader.request("GET", url, headers=headers)
            reader = BytesIO(fetched.body)
        else:  # a POST is the fetch (its answer the pack): read as it arrives
            streamed = self._downloader.stream("POST", url, headers=headers, content=body)
            self._streams.append(streamed)
            fetched, reader = streamed.head, streamed
        if raise_for_status:
            if fetched.status == 404:
                raise NotGitRepository(f"no git repository answered ({fetched.status})")
            if fetched.status != 200:
                raise GitProtocolError(f"unexpected HTTP status {fetched.status}")
        if self.dumb and fetched.status == 200 and body is None:
            check_dumb_object(url, fetched.body, self._dumb_budget)
        response = _Response(
            status=fetched.status,
            headers=dict(fetched.headers),
            content_type=fetched.headers.get("content-type"),
            redirect_location=fetched.url if fetched.url != url else "",
            data=reader,
        )
        return response, response.data.read

    def stop_downloads(self) -> None:
        """Close any answer still downloading (the fetch ended, one way or another)."""
        for streamed in self._streams:
            streamed.close()

    def _negotiate_upload_pack_capabilities(
        self, server_capabilities: set[bytes]
    ) -> tuple[set[bytes], dict[Ref, Ref], bytes | None]:
        """`thin-pack` is still asked for (dulwich's server requires it): a fetch without
        `haves` gets no deltas against objects it lacks anyway, and any it got would be left
        unresolved, failing the fetch."""
        negotiated, symrefs, agent = super()._negotiate_upload_pack_capabilities(
            server_capabilities
        )
        if CAPABILITY_THIN_PACK in server_capabilities:
            negotiated.add(CAPABILITY_THIN_PACK)
        return negotiated, symrefs, agent

    @property
    def limits(self) -> FetchLimits:
        return self._downloader.limits

    def head_target(self) -> Ref | None:
        """The branch the repository's `HEAD` file names (what a dumb server has for HEAD)."""
        response, read = self._http_request(self._get_url("") + "HEAD", raise_for_status=False)
        found = _HEAD_FILE.fullmatch(read(4096)) if response.status == 200 else None
        return Ref(found.group(1)) if found else None


_HEAD_FILE = re.compile(rb"ref: (refs/\S+)\s*")


def _wanted(refs: Mapping[Ref, ObjectID], ref: str | None) -> ObjectID:
    """The object `ref` names among the advertised refs (HEAD when None), or a commit id."""
    if ref is None:
        candidates = [b"HEAD"]
    else:
        name = ref.encode()
        candidates = [b"refs/heads/" + name, b"refs/tags/" + name, name]
    for candidate in candidates:
        if Ref(candidate) in refs:
            return refs[Ref(candidate)]
    if ref is not None and _SHA.fullmatch(ref):
        return ObjectID(ref.encode())
    raise refused(
        "unknown_ref",
        "the repository has no such branch or tag" if ref else "the repository has no HEAD",
        ref=ref,
    )


def fetch_git(
    url: str, ref: str | None, path: str, downloader: Downloader
) -> tuple[str, dict[str, TreeFile], dict[str, PackageReadError]]:
    """(commit id, files under `path`, per-file problems); runs in a worker thread.

    A branch, tag or advertised commit is fetched shallow (depth 1). Servers refuse wants of
    commits they do not advertise (git's default), so an older commit is looked for in the
    full history of the advertised refs, still within the download budget.
    """
    client = EgressGitClient(url, downloader)
    # A whole repository's large blobs are deflated for their ZIPs as they arrive, on the
    # deflate threads (`tree.start_deflate`), while the rest of the pack downloads. A folder's
    # import leaves them to `build_zip`: most of the repository may not be in the folder.
    deflates: dict[ObjectID, Future[bytes | None]] | None = None if path else {}
    try:
        try:
            try:
                repo, wanted = _fetch(client, ref, deflates, shallow=True)
            except _NotAdvertised:
                repo, wanted = _fetch(client, ref, deflates, shallow=False)
        finally:
            client.stop_downloads()
        return _checkout(repo, wanted, ref, path, downloader, deflates or {})
    except BaseException:
        for started in (deflates or {}).values():
            started.cancel()  # those not started yet: the import is refused
        raise


class _NotAdvertised(Exception):
    """The commit asked for is no advertised ref: servers refuse it as a shallow want."""


def _fetch(
    client: EgressGitClient,
    ref: str | None,
    deflates: dict[ObjectID, Future[bytes | None]] | None,
    *,
    shallow: bool,
) -> tuple[MemoryRepo, ObjectID]:
    repo = MemoryRepo()
    limits = client.limits

    def deflate(sha: ObjectID, data: bytes) -> None:
        assert deflates is not None
        started = start_deflate(data)
        if started is not None:
            deflates[sha] = started

    repo.object_store = store = FetchStore(
        limits.unpacked_bytes,
        read_timeout=limits.timeout_seconds + 10,
        timed_out=lambda: timed_out(limits),
        on_blob=None if deflates is None else deflate,
    )
    chosen: list[ObjectID] = []

    def determine_wants(refs: Mapping[Ref, ObjectID], depth: int | None = None) -> list[ObjectID]:
        # `tag^{}` entries name what a tag points to; a server does not serve them as wants
        advertised = {k: v for k, v in refs.items() if not k.endswith(b"^{}")}
        if ref is None and Ref(b"HEAD") not in advertised:  # dumb servers list no HEAD
            head = client.head_target()
            if head is not None and head in advertised:
                advertised[Ref(b"HEAD")] = advertised[head]
        chosen.append(_wanted(advertised, ref))
        if chosen[0] in advertised.values():
            return [chosen[0]]
        if shallow:
            raise _NotAdvertised
        return sorted(set(advertised.values()))

    try:
        # Protocol v0: the refs come with the first answer, one request fewer than v2 (whose
        # `ls-refs` would list every ref too: no prefix is asked for).
        client.fetch(
            "",
            repo,
            determine_wants=determine_wants,
            depth=1 if shallow else None,
            protocol_version=0,
        )
        store.raise_failure()
    except FetchError:
        raise
    except KeyError:
        raise refused("unknown_ref", "the commit is not in the repository", ref=ref) from None
    except (
        GitProtocolError,
        HangupException,
        NotGitRepository,
        ValueError,
        AssertionError,
        *BROKEN_PACK,
    ) as exc:
        raise FetchFailed(
            f"the git fetch failed: {exc}", details={"reason": type(exc).__name__}
        ) from None
    return repo, chosen[0]


def _checkout(
    repo: MemoryRepo,
    wanted: ObjectID,
    ref: str | None,
    path: str,
    downloader: Downloader,
    deflates: Mapping[ObjectID, Future[bytes | None]],
) -> tuple[str, dict[str, TreeFile], dict[str, PackageReadError]]:
    try:
        _, commit = peel_sha(repo.object_store, wanted)
    except KeyError:
        raise refused("unknown_ref", "the commit is not in the repository", ref=ref) from None
    if not isinstance(commit, Commit):
        raise refused("unknown_ref", "the ref does not name a commit", ref=ref)
    try:
        files, problems = _walk(repo, commit, path, downloader, deflates)
    except BROKEN_PACK as exc:  # an object parsed as it is first read (a malformed tree)
        raise FetchFailed(
            f"the git fetch failed: {exc}", details={"reason": type(exc).__name__}
        ) from None
    return commit.id.decode(), files, problems


def _walk(
    repo: MemoryRepo,
    commit: Commit,
    path: str,
    downloader: Downloader,
    deflates: Mapping[ObjectID, Future[bytes | None]],
) -> tuple[dict[str, TreeFile], dict[str, PackageReadError]]:
    store = repo.object_store
    tree = _tree(store, commit.tree, "the commit's tree")
    for part in path.split("/") if path else []:
        if part.encode() not in tree:
            raise refused("path_not_found", "the path is not in the repository", path=path)
        mode, sha = tree[part.encode()]
        # checked before the lookup: a submodule's commit is in another repository
        if not stat.S_ISDIR(mode):
            raise refused("path_not_found", "the path is not a folder", path=path)
        tree = _tree(store, sha, path)
    limits = downloader.limits
    files: dict[str, TreeFile] = {}
    problems: dict[str, PackageReadError] = {}
    total = 0
    for name, mode, sha in _entries(store, tree, limits, downloader.check_deadline, problems):
        if len(files) + len(problems) >= limits.files:
            raise PackageError(
                ErrorCode.TOO_MANY_ENTRIES,
                f"the tree has more than {limits.files} files",
                limit=limits.files,
            )
        if stat.S_ISLNK(mode):
            problems[name] = PackageReadError(
                ReadCode.SYMLINK_ENTRY, f"entry {name!r} is a symlink", entry=name
            )
            continue
        blob = _object(store, sha, name)
        if not isinstance(blob, Blob):
            raise _broken_tree(name, "is not a file")
        total += blob.raw_length()
        if total > limits.unpacked_bytes:
            raise PackageError(
                ErrorCode.UNCOMPRESSED_TOO_LARGE,
                f"the tree's files add up to more than {limits.unpacked_bytes} bytes",
                limit=limits.unpacked_bytes,
            )
        files[name] = TreeFile(
            blob.as_raw_string(), 0o755 if mode & 0o111 else 0o644, deflates.get(sha)
        )
    return dict(sorted(files.items())), problems


def _entries(
    store: Any,
    top: Tree,
    limits: FetchLimits,
    check_deadline: Callable[[], None],
    problems: dict[str, PackageReadError],
) -> Iterator[tuple[str, int, ObjectID]]:
    """(path, mode, sha) of each file and link under `top`, depth first; unsafe names go to
    `problems`, submodules are left out.

    Every entry counts, folders included: trees are stored once however often they are
    named, so a few kilobytes of pack can name a tree of 2^64 paths, or folders only, which
    a count of files alone never stops. A folder whose path is unsafe is one problem and is
    not entered (everything below it would be unsafe too), which also bounds the depth by
    the longest allowed path. A name that is not UTF-8 is unsafe: decoded with replacement,
    two names could become one; so could an entry whose name holds a `/`.
    """
    cap = 2 * limits.files
    seen = 0
    todo: list[tuple[str, Tree]] = [("", top)]
    while todo:
        prefix, tree = todo.pop()
        for entry in tree.iteritems(name_order=True):
            seen += 1
            if seen > cap:
                raise PackageError(
                    ErrorCode.TOO_MANY_ENTRIES,
                    f"the tree has more than {cap} files and folders",
                    limit=cap,
                )
            if seen % 256 == 0:
                check_deadline()
            if entry.mode == _GITLINK:
                continue
            if entry.path in (b"", b".", b"..") or b"/" in entry.path:
                # one entry is one path segment: `a/b` beside a folder `a` holding `b` would
                # be two files of one name (git itself refuses such trees)
                name = prefix + entry.path.decode("utf-8", "backslashreplace")
                problems[name] = _unsafe(name, "not one path segment ('/', empty, '.' or '..')")
                continue
            try:
                name = prefix + entry.path.decode("utf-8")
            except UnicodeDecodeError:
                name = prefix + entry.path.decode("utf-8", "backslashreplace")
                problems[name] = _unsafe(name, "name is not UTF-8")
                continue
            problem = path_problem(name)
            if problem is not None:
                problems[name] = _unsafe(name, problem)
            elif stat.S_ISDIR(entry.mode):
                todo.append((name + "/", _tree(store, entry.sha, name)))
            else:
                yield name, entry.mode, entry.sha


def _object(store: Any, sha: ObjectID, what: str) -> object:
    try:
        return store[sha]
    except KeyError:  # a pack may leave out what the source claims the tree holds
        raise _broken_tree(what, "is missing from the fetched objects") from None


def _tree(store: Any, sha: ObjectID, what: str) -> Tree:
    tree = _object(store, sha, what)
    if not isinstance(tree, Tree):
        raise _broken_tree(what, "is not a folder")
    return tree


def _broken_tree(what: str, problem: str) -> FetchFailed:
    return FetchFailed(
        f"the repository is inconsistent: {what!r} {problem}",
        details={"reason": "broken_tree", "entry": what[:200]},
    )


def _unsafe(name: str, problem: str) -> PackageReadError:
    return PackageReadError(
        ReadCode.UNSAFE_PATH, f"unsafe entry name {name!r}: {problem}", entry=name
    )
