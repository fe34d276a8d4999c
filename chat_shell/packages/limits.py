"""The caps an archive must respect: one frozen value handed to the readers.

These defaults are the product's defaults: backend's `Settings` takes its `SKILLHIVE_MAX_*`
defaults from here, and hosts pass the operator's values.
"""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1024 * 1024


@dataclass(frozen=True)
class ArchiveLimits:
    max_archive_bytes: int = 10 * MiB  # the ZIP itself
    max_archive_entries: int = 1000
    max_uncompressed_bytes: int = 100 * MiB  # sum of all entries
    max_compression_ratio: float = 100.0  # per entry, for entries over the next value
    compression_ratio_min_bytes: int = 1 * MiB


DEFAULT_ARCHIVE_LIMITS = ArchiveLimits()
