"""The caps a skill package must respect, as one frozen value handed to the pure readers.

The archive caps are the package reader's (`chat_shell.packages.ArchiveLimits`, whose defaults
are the settings' defaults); SKILL.md's caps are backend's, which parses it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from backend.config import Settings
from chat_shell import ArchiveLimits as ReaderLimits


@dataclass(frozen=True)
class ArchiveLimits(ReaderLimits):
    max_skill_md_bytes: int = Settings.model_fields["max_skill_md_bytes"].default
    # Not a setting: frontmatter is metadata; 64 KiB is ~40x the largest one in the corpus.
    # It bounds YAML parsing time and, through the expansion budget, the stored JSON.
    max_frontmatter_bytes: int = 64 * 1024

    @classmethod
    def from_settings(cls, settings: Settings) -> ArchiveLimits:
        names = [f.name for f in fields(cls) if f.name in Settings.model_fields]
        return cls(**{name: getattr(settings, name) for name in names})


DEFAULT_LIMITS = ArchiveLimits()
