"""Importing a skill package's Python modules straight from its ZIP bytes.

Each package becomes a synthetic top-level package `_skillhive_<skill>_<hash>`, served by one
meta-path finder from memory: nothing is extracted to disk, two versions of a skill never share
module objects, and releasing a version drops its modules. Callers must have checked that the
skill is public *before* calling in here: this module runs the package's code.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import re
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import CodeType, ModuleType

from chat_shell.errors import ProviderLoadError
from chat_shell.packages import (
    DEFAULT_ARCHIVE_LIMITS,
    ArchiveLimits,
    PackageReadError,
    open_package,
)


@dataclass(frozen=True)
class PackageFiles:
    """The files of a package by path relative to its root, as the one package reader
    (`chat_shell.packages`) lays them out: the same files its upload listed."""

    files: Mapping[str, bytes]

    @classmethod
    def from_zip(cls, data: bytes, limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS) -> PackageFiles:
        try:
            return cls(open_package(data, limits).read_all())
        except PackageReadError as exc:
            raise ProviderLoadError(
                f"unreadable skill package: {exc.message}",
                details={"reason": exc.code, **exc.details},
            ) from exc


class _PackageLoader(importlib.abc.InspectLoader):
    def __init__(self, package: str, label: str, files: Mapping[str, bytes]) -> None:
        self._package = package
        self._label = label
        self._files = files

    def locate(self, fullname: str) -> tuple[str | None, bool] | None:
        """(relative source path or None for an implicit package, is_package), or None."""
        if fullname == self._package:
            init = "__init__.py"
            return (init if init in self._files else None), True
        rel = fullname.removeprefix(self._package + ".").replace(".", "/")
        if f"{rel}/__init__.py" in self._files:
            return f"{rel}/__init__.py", True
        if f"{rel}.py" in self._files:
            return f"{rel}.py", False
        if any(p.startswith(rel + "/") and p.endswith(".py") for p in self._files):
            return None, True
        return None

    def origin(self, path: str) -> str:
        return f"<{self._label}>/{path}"

    def is_package(self, fullname: str) -> bool:
        found = self.locate(fullname)
        return bool(found and found[1])

    def get_source(self, fullname: str) -> str | None:
        found = self.locate(fullname)
        if found is None:
            raise ImportError(fullname, name=fullname)
        path = found[0]
        return "" if path is None else self._files[path].decode("utf-8")

    def get_code(self, fullname: str) -> CodeType:
        found = self.locate(fullname)
        source = self.get_source(fullname) or ""
        path = found[0] if found and found[0] else "__init__.py"
        return compile(source, self.origin(path), "exec", dont_inherit=True)


class _MemoryFinder(importlib.abc.MetaPathFinder):
    """One finder for all loaded packages; a dict lookup keeps it cheap for every other import."""

    def __init__(self) -> None:
        self._loaders: dict[str, _PackageLoader] = {}
        self._lock = threading.Lock()

    def add(self, loader: _PackageLoader, package: str) -> None:
        with self._lock:
            self._loaders[package] = loader

    def remove(self, package: str) -> None:
        with self._lock:
            self._loaders.pop(package, None)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        loader = self._loaders.get(fullname.partition(".")[0])
        found = loader.locate(fullname) if loader else None
        if loader is None or found is None:
            return None
        rel, is_package = found
        spec = importlib.machinery.ModuleSpec(
            fullname, loader, origin=loader.origin(rel or "__init__.py"), is_package=is_package
        )
        spec.has_location = False
        return spec


_FINDER = _MemoryFinder()
sys.meta_path.insert(0, _FINDER)


def synthetic_package_name(skill_name: str, sha256: str) -> str:
    slug = re.sub(r"[^0-9a-zA-Z]+", "_", skill_name).strip("_").lower() or "skill"
    return f"_skillhive_{slug}_{sha256[:16]}"


def import_package_module(package: str, label: str, files: PackageFiles, module: str) -> ModuleType:
    """Register the package and import `package.module`; on failure nothing stays registered."""
    if not all(part.isidentifier() for part in module.split(".")):
        raise ProviderLoadError(f"invalid provider module name {module!r}")
    _FINDER.add(_PackageLoader(package, label, files.files), package)
    try:
        return importlib.import_module(f"{package}.{module}")
    except (Exception, SystemExit) as exc:
        release_package(package)
        raise ProviderLoadError(
            f"importing provider module {module!r} failed: {type(exc).__name__}: {exc}",
            details={"module": module},
        ) from exc


def release_package(package: str) -> None:
    """Forget a package: its finder entry and every module imported from it."""
    _FINDER.remove(package)
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
        del sys.modules[name]
    importlib.invalidate_caches()
