"""Skill packages read from ZIP bytes: archive safety, layout, bounded reads (one reader).

backend reads uploads and serves files through this package; the engine imports providers and
reads skill files through it too, so both always agree on which files make up a package.
"""

from chat_shell.packages._archive import check_archive_size, path_problem, shown_name
from chat_shell.packages._errors import PackageReadError, ReadCode
from chat_shell.packages._layout import SKILL_MD_NAMES, is_ignored
from chat_shell.packages._package import Package, PackageFile, open_package
from chat_shell.packages.limits import DEFAULT_ARCHIVE_LIMITS, ArchiveLimits

__all__ = [
    "DEFAULT_ARCHIVE_LIMITS",
    "SKILL_MD_NAMES",
    "ArchiveLimits",
    "Package",
    "PackageFile",
    "PackageReadError",
    "ReadCode",
    "check_archive_size",
    "is_ignored",
    "open_package",
    "path_problem",
    "shown_name",
]
