"""The caps a skill package must respect, as one frozen value handed to the pure readers."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from backend.config import Settings


def _setting(name: str) -> Any:
    """The Settings default, so these caps are written down in one place only."""
    return Settings.model_fields[name].default


@dataclass(frozen=True)
class ArchiveLimits:
    max_archive_bytes: int = _setting("max_archive_bytes")
    max_archive_entries: int = _setting("max_archive_entries")
    max_uncompressed_bytes: int = _setting("max_uncompressed_bytes")
    max_compression_ratio: float = _setting("max_compression_ratio")
    compression_ratio_min_bytes: int = _setting("compression_ratio_min_bytes")
    max_skill_md_bytes: int = _setting("max_skill_md_bytes")
    # Not a setting: frontmatter is metadata; 64 KiB is ~40x the largest one in the corpus.
    # It bounds YAML parsing time and, through the expansion budget, the stored JSON.
    max_frontmatter_bytes: int = 64 * 1024

    @classmethod
    def from_settings(cls, settings: Settings) -> ArchiveLimits:
        names = [f.name for f in fields(cls) if f.name in Settings.model_fields]
        return cls(**{name: getattr(settings, name) for name in names})


DEFAULT_LIMITS = ArchiveLimits()
