"""The caps of one import from a URL (settings `SKILLHIVE_IMPORT_*`)."""

from __future__ import annotations

from dataclasses import dataclass

from backend.config import Settings

MiB = 1024 * 1024


@dataclass(frozen=True)
class FetchLimits:
    download_bytes: int = 64 * MiB  # every byte the fetch reads off its connections
    unpacked_bytes: int = 256 * MiB  # the files of the archive or git tree together
    files: int = 1000
    timeout_seconds: float = 60.0  # the whole fetch

    @classmethod
    def from_settings(cls, settings: Settings) -> FetchLimits:
        return cls(
            download_bytes=settings.import_max_download_bytes,
            unpacked_bytes=settings.import_max_unpacked_bytes,
            files=settings.import_max_files,
            timeout_seconds=settings.import_timeout_seconds,
        )
