"""Downloaded archives to files: ZIP through the one package reader's checks, tar.gz by the
same rules (safe relative names, regular files only, no duplicates, entry and size caps)."""

from __future__ import annotations

import io
import stat
import tarfile
import zlib

from backend.skills.errors import translated
from backend.skills.importing.limits import FetchLimits
from backend.skills.importing.tree import TreeFile
from backend.skills.tars import TarTooLarge, inflated_tar
from chat_shell import (
    ArchiveLimits,
    PackageReadError,
    ReadCode,
    open_archive,
    path_problem,
    shown_name,
)

ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
GZIP_MAGIC = b"\x1f\x8b"


def is_zip(data: bytes) -> bool:
    return data.startswith(ZIP_MAGIC)


def is_gzip(data: bytes) -> bool:
    return data.startswith(GZIP_MAGIC)


def unpack_zip(data: bytes, limits: FetchLimits) -> dict[str, TreeFile]:
    """Every file of a ZIP, checked and inflated by the package reader (upload rules, with the
    import caps in place of the upload caps)."""
    caps = ArchiveLimits(
        max_archive_bytes=limits.download_bytes,
        max_archive_entries=limits.files,
        max_uncompressed_bytes=limits.unpacked_bytes,
    )
    with translated():
        archive = open_archive(data, caps)
        return {
            e.name: TreeFile(archive.read(e), e.mode or 0o644)
            for e in sorted(archive.entries, key=lambda e: e.name)
        }


def unpack_tar_gz(data: bytes, limits: FetchLimits) -> dict[str, TreeFile]:
    with translated():
        return _unpack_tar(data, limits)


def _unpack_tar(data: bytes, limits: FetchLimits) -> dict[str, TreeFile]:
    files: dict[str, TreeFile] = {}
    seen: set[str] = set()
    total = members = 0
    try:
        # inflated first, bounded: `tarfile` would read a header's claimed size into memory
        tar_bytes = inflated_tar(data, file_bytes=limits.unpacked_bytes, entries=limits.files)
        with tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r|") as tar:
            for member in tar:
                members += 1
                if members > limits.files:
                    raise PackageReadError(
                        ReadCode.TOO_MANY_ENTRIES,
                        f"archive has more than {limits.files} entries",
                        limit=limits.files,
                    )
                name = member.name.removeprefix("./")
                if member.isdir() and name in ("", "."):
                    continue
                _check_member(member, name, seen)
                if member.isdir():
                    continue
                total += member.size
                if total > limits.unpacked_bytes:
                    raise PackageReadError(
                        ReadCode.UNCOMPRESSED_TOO_LARGE,
                        f"entries add up to more than {limits.unpacked_bytes} bytes",
                        entry=name,
                        limit=limits.unpacked_bytes,
                    )
                content = tar.extractfile(member)
                assert content is not None  # a regular file
                mode = (member.mode & 0o777) or 0o644
                files[name] = TreeFile(content.read(member.size), mode)
    except TarTooLarge as exc:
        raise PackageReadError(
            ReadCode.UNCOMPRESSED_TOO_LARGE, str(exc), limit=limits.unpacked_bytes
        ) from None
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise PackageReadError(
            ReadCode.CORRUPT_ENTRY, f"not a readable tar.gz archive: {exc}"
        ) from None
    return dict(sorted(files.items()))


def _check_member(member: tarfile.TarInfo, name: str, seen: set[str]) -> None:
    problem = path_problem(name)
    if problem is not None:
        shown = shown_name(name)
        raise PackageReadError(
            ReadCode.UNSAFE_PATH,
            f"unsafe entry name {shown!r}: {problem}",
            entry=shown,
            reason=problem,
        )
    if member.issym() or member.islnk():
        raise PackageReadError(ReadCode.SYMLINK_ENTRY, f"entry {name!r} is a link", entry=name)
    if not (member.isreg() or member.isdir()):
        raise PackageReadError(
            ReadCode.NON_REGULAR_ENTRY, f"entry {name!r} is not a regular file", entry=name
        )
    key = name.removesuffix("/")
    if key in seen:
        raise PackageReadError(ReadCode.DUPLICATE_ENTRY, f"duplicate entry {name!r}", entry=name)
    seen.add(key)
    if member.mode & (stat.S_ISUID | stat.S_ISGID):
        member.mode &= 0o777  # setuid and setgid never survive (as in ZIPs)
