"""Git sources through dulwich (pure Python, always installed): a shallow fetch at a branch,
tag or commit, smart or dumb HTTP.

dulwich runs in a worker thread; its HTTP requests come back to the event loop and go through
the import's `Downloader` (egress policy on the URL and on every redirect, one byte budget,
one deadline). Nothing of dulwich's own HTTP stack (urllib3, proxies, credentials) is used.
"""

from __future__ import annotations

import asyncio
import re
import stat
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from io import BytesIO
from typing import Any

from dulwich.client import AbstractHttpGitClient
from dulwich.errors import (
    ApplyDeltaError,
    ChecksumMismatch,
    FileFormatException,
    GitProtocolError,
    HangupException,
    NotGitRepository,
)
from dulwich.object_format import DEFAULT_OBJECT_FORMAT
from dulwich.object_store import MemoryObjectStore, peel_sha
from dulwich.objects import Blob, Commit, ObjectID, ShaFile, Tree, hex_to_sha
from dulwich.pack import (
    DELTA_TYPES,
    OFS_DELTA,
    PackStreamReader,
    UnpackedObject,
    UnresolvedDeltas,
    apply_delta,
)
from dulwich.refs import Ref
from dulwich.repo import MemoryRepo

from backend.skills.errors import ErrorCode, PackageError
from backend.skills.importing.errors import FetchError, FetchFailed, refused
from backend.skills.importing.http import Downloader, timed_out
from backend.skills.importing.limits import FetchLimits
from backend.skills.importing.tree import TreeFile
from chat_shell import PackageReadError, ReadCode, path_problem

_SHA = re.compile(r"[0-9a-f]{40}")
_GITLINK = 0o160000  # a submodule: its files are in another repository


@dataclass
class _Response:
    """What dulwich reads of an urllib3 response."""

    status: int
    headers: dict[str, str]
    content_type: str | None
    redirect_location: str
    data: BytesIO = field(default_factory=BytesIO)

    def close(self) -> None:
        self.data.close()


class EgressGitClient(AbstractHttpGitClient):
    """dulwich's HTTP git client with every request made by `Downloader` on `loop`."""

    def __init__(
        self, base_url: str, downloader: Downloader, loop: asyncio.AbstractEventLoop
    ) -> None:
        super().__init__(base_url, quiet=True)
        self._downloader = downloader
        self._loop = loop
        self._dumb_budget = _Budget(downloader.limits.unpacked_bytes, "the dumb server's objects")

    def _check_dumb_object(self, url: str, body: bytes) -> None:
        """Charge a dumb server's loose object or pack to the unpacked budget before dulwich,
        which inflates them whole (`zlib.decompress`, `PackData`), sees it."""
        if _LOOSE_OBJECT.search(url):
            _inflate_counted(body, self._dumb_budget)
        elif url.endswith(".pack"):
            reader = _BudgetedPackReader(
                DEFAULT_OBJECT_FORMAT.hash_func, BytesIO(body).read, None, budget=self._dumb_budget
            )
            for unpacked in reader.read_objects():  # one object in memory at a time
                if unpacked.pack_type_num in DELTA_TYPES:
                    self._dumb_budget.charge(_delta_target_size(unpacked.decomp_chunks))

    def _http_request(
        self,
        url: str,
        headers: dict[str, str] | None = None,
        data: bytes | Iterator[bytes] | None = None,
        raise_for_status: bool = True,
    ) -> tuple[Any, Callable[[int], bytes]]:
        body = data if data is None or isinstance(data, bytes) else b"".join(data)
        method = "GET" if body is None else "POST"
        request = self._downloader.request(method, url, headers=headers, content=body)
        # The request ends by the fetch's deadline; the margin only guards against a loop that
        # stopped (shutdown) leaving this thread waiting forever.
        future = asyncio.run_coroutine_threadsafe(request, self._loop)
        try:
            fetched = future.result(timeout=self._downloader.limits.timeout_seconds + 5)
        except TimeoutError:
            future.cancel()
            raise timed_out(self._downloader.limits) from None
        if raise_for_status:
            if fetched.status == 404:
                raise NotGitRepository(f"no git repository answered ({fetched.status})")
            if fetched.status != 200:
                raise GitProtocolError(f"unexpected HTTP status {fetched.status}")
        if self.dumb and fetched.status == 200:
            self._check_dumb_object(url, fetched.body)
        response = _Response(
            status=fetched.status,
            headers=dict(fetched.headers),
            content_type=fetched.headers.get("content-type"),
            redirect_location=fetched.url if fetched.url != url else "",
            data=BytesIO(fetched.body),
        )
        return response, response.data.read

    @property
    def limits(self) -> FetchLimits:
        return self._downloader.limits

    def head_target(self) -> Ref | None:
        """The branch the repository's `HEAD` file names (what a dumb server has for HEAD)."""
        response, read = self._http_request(self._get_url("") + "HEAD", raise_for_status=False)
        found = _HEAD_FILE.fullmatch(read(4096)) if response.status == 200 else None
        return Ref(found.group(1)) if found else None


_HEAD_FILE = re.compile(rb"ref: (refs/\S+)\s*")
_LOOSE_OBJECT = re.compile(r"/objects/[0-9a-f]{2}/[0-9a-f]{38}$")


def _inflate_counted(compressed: bytes, budget: _Budget) -> None:
    """Inflate a zlib stream a chunk at a time, keeping nothing, charging what it makes."""
    inflater = zlib.decompressobj()
    pending = compressed
    while pending and not inflater.eof:
        budget.charge(len(inflater.decompress(pending, 1 << 20)))
        pending = inflater.unconsumed_tail


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
    url: str, ref: str | None, path: str, downloader: Downloader, loop: asyncio.AbstractEventLoop
) -> tuple[str, dict[str, TreeFile], dict[str, PackageReadError]]:
    """(commit id, files under `path`, per-file problems); runs in a worker thread.

    A branch, tag or advertised commit is fetched shallow (depth 1). Servers refuse wants of
    commits they do not advertise (git's default), so an older commit is looked for in the
    full history of the advertised refs, still within the download budget.
    """
    client = EgressGitClient(url, downloader, loop)
    try:
        repo, wanted = _fetch(client, ref, shallow=True)
    except _NotAdvertised:
        repo, wanted = _fetch(client, ref, shallow=False)
    return _checkout(repo, wanted, ref, path, downloader)


# What a corrupt or truncated pack raises while it is read: a failed fetch, never a 500.
_BROKEN_PACK = (
    zlib.error,
    ChecksumMismatch,
    ApplyDeltaError,
    UnresolvedDeltas,
    FileFormatException,
)


class _FetchStore(MemoryObjectStore):
    """A memory store that inflates a fetched pack once, as it is read.

    dulwich's own paths inflate every object twice (a pass to find where objects end, then
    one to resolve deltas) and hash the pack twice (its checksum, then each object), and
    copy every object into the store. Here one `PackStreamReader` pass inflates each object
    (bounded by its declared size) and checks the pack's trailing checksum; deltas are applied
    to the bases kept from that pass, and each object's id is its own hash, as always. A fetch
    without `haves` gets no deltas against absent objects: any left unresolved fail the fetch.
    """

    def __init__(self, unpacked_budget: int) -> None:
        super().__init__()
        self._budget = _Budget(unpacked_budget, "the fetched pack's objects")
        self.failure: Exception | None = None

    def add_thin_pack(
        self,
        read_all: Callable[[int], bytes],
        read_some: Callable[[int], bytes] | None,
        progress: Callable[[str], None] | None = None,
        *,
        max_input_size: int | None = None,  # the Downloader's byte budget bounds the pack
    ) -> None:
        hash_func = self.object_format.hash_func
        reader = _BudgetedPackReader(hash_func, read_all, read_some, budget=self._budget)
        deltas = _Deltas(self._budget)
        try:
            for unpacked in reader.read_objects():
                for obj in deltas.resolve(unpacked):
                    self._data[obj.id] = obj
            deltas.check_resolved()
        except (PackageError, *_BROKEN_PACK) as exc:
            # Raised later by `raise_failure`: dulwich closes its spooled pack file only when
            # this returns.
            self.failure = exc

    def raise_failure(self) -> None:
        if self.failure is not None:
            raise self.failure


class _Budget:
    """The bytes a fetched pack may inflate to: its objects' and resolved deltas' sizes, each
    charged from what the pack declares, before zlib or a delta produces them (a 64 MiB pack of
    zeros declares gigabytes)."""

    def __init__(self, limit: int, what: str) -> None:
        self.limit = limit
        self.what = what
        self.used = 0

    def charge(self, size: int) -> None:
        self.used += size
        if self.used > self.limit:
            raise PackageError(
                ErrorCode.UNCOMPRESSED_TOO_LARGE,
                f"{self.what} add up to more than {self.limit} bytes",
                limit=self.limit,
            )


class _BudgetedPackReader(PackStreamReader):
    """A pack stream whose objects' declared sizes are charged before they are inflated.

    dulwich's `unpack_object` reads an object's type-and-size header a byte at a time through
    `read`, then its compressed data through `recv`; after the pack header, a one-byte `read`
    that follows a `recv` starts the next object's header.
    """

    def __init__(
        self,
        hash_func: Any,
        read_all: Callable[[int], bytes],
        read_some: Callable[[int], bytes] | None,
        *,
        budget: _Budget,
    ) -> None:
        super().__init__(hash_func, read_all, read_some)
        self._budget = budget
        self._started = False  # the pack's own header is read
        self._header: bytearray | None = bytearray()  # the object header being read, if any

    def read(self, size: int) -> bytes:
        data = super().read(size)
        if not self._started:
            self._started = True
        elif self._header is not None and size == 1 and data:
            self._header += data
            if not data[0] & 0x80:  # the header's last byte
                self._budget.charge(_declared_size(bytes(self._header)))
                self._header = None
        return data

    def recv(self, size: int) -> bytes:
        data = super().recv(size)
        self._header = bytearray()  # whatever `read(1)` comes next heads the next object
        return data


def _declared_size(header: bytes) -> int:
    """The size in a pack object's header: 4 bits in the first byte, then 7 per byte."""
    size = header[0] & 0x0F
    for shift, byte in enumerate(header[1:]):
        size |= (byte & 0x7F) << (4 + 7 * shift)
    return size


def _delta_target_size(delta: list[bytes]) -> int:
    """The result size a git delta declares (its second varint) without applying it."""
    data = b""
    for chunk in delta:  # two varints: at most 20 bytes
        data += chunk[: 20 - len(data)]
        if len(data) == 20:
            break
    index = 0
    sizes: list[int] = []
    while len(sizes) < 2:
        size = shift = 0
        while True:
            if index >= len(data):
                raise ApplyDeltaError("truncated delta header")
            byte = data[index]
            index += 1
            size |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        sizes.append(size)
    return sizes[1]


class _Deltas:
    """Objects of one pack in stream order, deltas applied once their base is known."""

    def __init__(self, budget: _Budget) -> None:
        self._budget = budget
        self._by_offset: dict[int, tuple[int, list[bytes]]] = {}
        self._by_sha: dict[bytes, tuple[int, list[bytes]]] = {}
        self._waiting: dict[int | bytes, list[UnpackedObject]] = defaultdict(list)

    def resolve(self, unpacked: UnpackedObject) -> Iterator[ShaFile]:
        """The objects `unpacked` completes: itself, if its base is known, and the deltas
        waiting on it, transitively."""
        todo = [unpacked]
        while todo:
            current = todo.pop()
            resolved = self._apply(current)
            if resolved is None:
                continue
            type_num, chunks = resolved
            obj = ShaFile.from_raw_chunks(type_num, chunks)
            assert current.offset is not None
            self._by_offset[current.offset] = resolved
            sha = hex_to_sha(obj.id)
            self._by_sha[sha] = resolved
            todo.extend(self._waiting.pop(current.offset, ()))
            todo.extend(self._waiting.pop(sha, ()))
            yield obj

    def _apply(self, unpacked: UnpackedObject) -> tuple[int, list[bytes]] | None:
        if unpacked.pack_type_num not in DELTA_TYPES:
            return unpacked.pack_type_num, unpacked.decomp_chunks
        assert unpacked.offset is not None and unpacked.delta_base is not None
        if unpacked.pack_type_num == OFS_DELTA:
            assert isinstance(unpacked.delta_base, int)
            base_offset = unpacked.offset - unpacked.delta_base
            key: int | bytes = base_offset
            base = self._by_offset.get(base_offset)
        else:
            assert isinstance(unpacked.delta_base, bytes)
            key = unpacked.delta_base
            base = self._by_sha.get(unpacked.delta_base)
        if base is None:
            self._waiting[key].append(unpacked)
            return None
        self._budget.charge(_delta_target_size(unpacked.decomp_chunks))
        type_num, chunks = base[0], apply_delta(base[1], unpacked.decomp_chunks)
        # As dulwich's own resolver: only a blob may be empty (a too-short delta must not
        # make an empty commit or tree).
        if type_num != Blob.type_num and not any(chunks):
            raise ApplyDeltaError(f"delta resolved to an empty object of type {type_num}")
        return type_num, chunks

    def check_resolved(self) -> None:
        if self._waiting:
            raise UnresolvedDeltas([k for k in self._waiting if isinstance(k, bytes)])


class _NotAdvertised(Exception):
    """The commit asked for is no advertised ref: servers refuse it as a shallow want."""


def _fetch(
    client: EgressGitClient, ref: str | None, *, shallow: bool
) -> tuple[MemoryRepo, ObjectID]:
    repo = MemoryRepo()
    repo.object_store = store = _FetchStore(client.limits.unpacked_bytes)
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
        *_BROKEN_PACK,
    ) as exc:
        raise FetchFailed(
            f"the git fetch failed: {exc}", details={"reason": type(exc).__name__}
        ) from None
    return repo, chosen[0]


def _checkout(
    repo: MemoryRepo, wanted: ObjectID, ref: str | None, path: str, downloader: Downloader
) -> tuple[str, dict[str, TreeFile], dict[str, PackageReadError]]:
    try:
        _, commit = peel_sha(repo.object_store, wanted)
    except KeyError:
        raise refused("unknown_ref", "the commit is not in the repository", ref=ref) from None
    if not isinstance(commit, Commit):
        raise refused("unknown_ref", "the ref does not name a commit", ref=ref)
    files, problems = _walk(repo, commit, path, downloader)
    return commit.id.decode(), files, problems


def _walk(
    repo: MemoryRepo, commit: Commit, path: str, downloader: Downloader
) -> tuple[dict[str, TreeFile], dict[str, PackageReadError]]:
    store = repo.object_store
    tree = store[commit.tree]
    for part in path.split("/") if path else []:
        assert isinstance(tree, Tree)
        if part.encode() not in tree:
            raise refused("path_not_found", "the path is not in the repository", path=path)
        mode, sha = tree[part.encode()]
        tree = store[sha]
        if not stat.S_ISDIR(mode):
            raise refused("path_not_found", "the path is not a folder", path=path)
    assert isinstance(tree, Tree)
    limits = downloader.limits
    files: dict[str, TreeFile] = {}
    problems: dict[str, PackageReadError] = {}
    total = 0
    for entry in store.iter_tree_contents(tree.id):
        assert entry.path is not None and entry.mode is not None and entry.sha is not None
        name = entry.path.decode("utf-8", "replace")
        if entry.mode == _GITLINK:
            continue
        if len(files) + len(problems) >= limits.files:
            raise PackageError(
                ErrorCode.TOO_MANY_ENTRIES,
                f"the tree has more than {limits.files} files",
                limit=limits.files,
            )
        problem = path_problem(name)
        if problem is not None:
            problems[name] = PackageReadError(
                ReadCode.UNSAFE_PATH, f"unsafe entry name {name!r}: {problem}", entry=name
            )
            continue
        if stat.S_ISLNK(entry.mode):
            problems[name] = PackageReadError(
                ReadCode.SYMLINK_ENTRY, f"entry {name!r} is a symlink", entry=name
            )
            continue
        blob = store[entry.sha]
        assert isinstance(blob, Blob)
        total += blob.raw_length()
        if total > limits.unpacked_bytes:
            raise PackageError(
                ErrorCode.UNCOMPRESSED_TOO_LARGE,
                f"the tree's files add up to more than {limits.unpacked_bytes} bytes",
                limit=limits.unpacked_bytes,
            )
        files[name] = TreeFile(blob.as_raw_string(), 0o755 if entry.mode & 0o111 else 0o644)
    return dict(sorted(files.items())), problems
