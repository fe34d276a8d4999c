"""Skill packages. The pure part (bytes in, values or a `PackageError` out):

- `package.read_package(data, *, limits, public, strict, fallback_name, sha256, verify)
  -> SkillPackage`
  and `SkillPackage.to_crd(...) -> crd.skill.Skill`; `package.read_package_file(data, path)`.
- `archive.check_archive_size(n, limits)` for a body still streaming in (413).
- `folder.zip_folder(path) -> bytes`, deterministic, for the CLI and built-in skills.
- `limits.ArchiveLimits.from_settings(settings)`; `errors.ErrorCode`; `lint.WarningCode`.
"""
