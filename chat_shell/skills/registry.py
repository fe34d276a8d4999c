"""Tool providers by name (built in) and by package hash (loaded from public skills' ZIPs)."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass

from chat_shell.contracts import SkillSpec
from chat_shell.errors import ProviderError, ProviderLoadError, ProviderNotAllowed
from chat_shell.ports import PackageSource
from chat_shell.skills.package_loader import (
    PackageFiles,
    import_package_module,
    release_package,
    synthetic_package_name,
)
from chat_shell.skills.provider import SkillToolProvider

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadedProvider:
    provider: SkillToolProvider
    files: Mapping[str, bytes]
    sha256: str
    package: str


class ProviderRegistry:
    """Process-wide: one provider instance per package hash, the newest hash per skill name.

    When a skill shows up with a new hash (re-uploaded), the old version's modules are released;
    turns still holding its tools keep them, new turns get the new code without a restart.
    Failures are cached by hash too, so a broken package's code does not run again every turn.
    """

    def __init__(self) -> None:
        self._builtin: dict[str, SkillToolProvider] = {}
        self._by_hash: dict[str, LoadedProvider] = {}
        self._failed: dict[str, ProviderError] = {}
        self._current: dict[str, str] = {}

    def register(self, provider: SkillToolProvider) -> None:
        """Add a built-in provider, usable by any skill's tool declarations."""
        self._builtin[provider.provider_name] = provider

    def builtin(self, name: str) -> SkillToolProvider | None:
        return self._builtin.get(name)

    def loaded_hashes(self) -> set[str]:
        return set(self._by_hash)

    async def load(self, skill: SkillSpec, source: PackageSource) -> LoadedProvider:
        """The provider of a public skill's package. Never imports anything of a private skill."""
        if not skill.public:
            raise ProviderNotAllowed(
                f"skill {skill.name!r} is not public, so its provider code is not loaded",
                details={"skill": skill.name},
            )
        if skill.provider is None or not skill.sha256:
            raise ProviderLoadError(f"skill {skill.name!r} declares no provider package")
        sha = skill.sha256
        if cached := self._cached(sha):
            return cached
        data = await source.get(sha)
        if hashlib.sha256(data).hexdigest() != sha:
            raise ProviderLoadError(f"package of skill {skill.name!r} does not match its sha256")
        try:
            # Inflating every file is real work (up to the uncompressed cap): not on the loop.
            files = await asyncio.to_thread(PackageFiles.from_zip, data, source.limits)
            if cached := self._cached(sha):  # another turn finished loading while we awaited
                return cached
            loaded = self._import(skill, sha, files)
        except ProviderError as exc:
            self._failed[sha] = exc
            raise
        self._by_hash[sha] = loaded
        previous, self._current[skill.name] = self._current.get(skill.name), sha
        if previous is not None and previous != sha:
            self.release(previous)
        return loaded

    def release(self, sha256: str) -> None:
        self._failed.pop(sha256, None)
        if (loaded := self._by_hash.pop(sha256, None)) is not None:
            release_package(loaded.package)

    def _cached(self, sha: str) -> LoadedProvider | None:
        if (failure := self._failed.get(sha)) is not None:
            raise failure
        return self._by_hash.get(sha)

    @staticmethod
    def _import(skill: SkillSpec, sha: str, files: PackageFiles) -> LoadedProvider:
        assert skill.provider is not None
        package = synthetic_package_name(skill.name, sha)
        label = f"skill {skill.name}@{sha[:12]}"
        module = import_package_module(package, label, files, skill.provider.module)
        cls = getattr(module, skill.provider.class_name, None)
        try:
            if not (isinstance(cls, type) and issubclass(cls, SkillToolProvider)):
                raise ProviderLoadError(
                    f"{skill.provider.module}.{skill.provider.class_name} is not a "
                    "SkillToolProvider subclass"
                )
            instance = cls()
            if not isinstance(getattr(instance, "provider_name", None), str):
                raise ProviderLoadError(f"{cls.__name__} sets no provider_name")
        except ProviderLoadError:
            release_package(package)
            raise
        except Exception as exc:
            release_package(package)
            raise ProviderLoadError(f"creating the provider failed: {exc}") from exc
        logger.info("loaded tool provider %s from %s", instance.provider_name, label)
        return LoadedProvider(instance, files.files, sha, package)


default_registry = ProviderRegistry()
