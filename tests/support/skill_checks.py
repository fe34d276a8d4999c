"""The checks run over real skill folders: the corpus (tests/backend/skills/test_corpus.py) and
the repository's own fixture skills (test_fixture_skills.py there) go through the same assertions.

Agreement with the reference validator `skills_ref` is compared per category of finding: where
we accept a skill, the categories we warn about equal those `skills_ref.validate` reports; where
we refuse one, `skills_ref` reports the category of our error too (it lists every finding, we
stop at the first error).
"""

from __future__ import annotations

import re
from pathlib import Path

import skills_ref

from backend.skills.errors import PackageError
from backend.skills.folder import zip_folder
from backend.skills.package import SkillPackage, read_package


def assert_imports_as_predicted(folder: Path, warnings: list[str]) -> SkillPackage:
    """The folder imports whole, with exactly the predicted warning codes, in order."""
    package = read_package(zip_folder(folder))
    assert [w.code for w in package.warnings] == warnings
    assert package.spec.description
    assert package.spec.prompt
    assert {f.path for f in package.files} == files_on_disk(folder)
    return package


def files_on_disk(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


_REFERENCE_CATEGORIES = [
    (r"^Unexpected fields", "unknown_field"),
    (r"^Directory name .* must match", "name_mismatch"),
    (r"^Description exceeds", "description_too_long"),
    (r"^Compatibility exceeds", "compatibility_too_long"),
    (r"^Missing required field in frontmatter: name", "name_missing"),
    (r"^(Missing required field in frontmatter: description|Field 'description')", "description"),
    (r"^(Skill name|Field 'name')", "invalid_name"),
]
_OUR_CATEGORIES = {"name_derived": "name_missing", "missing_field": "description"}


def reference_verdict(folder: Path) -> set[str]:
    found = set()
    for message in skills_ref.validate(folder):
        matches = [cat for pattern, cat in _REFERENCE_CATEGORIES if re.match(pattern, message)]
        assert matches, f"unmapped skills-ref message: {message}"
        found.add(matches[0])
    return found


def assert_agreement(folder: Path) -> None:
    expected = reference_verdict(folder)
    try:
        package = read_package(zip_folder(folder))
    except PackageError as err:
        assert _OUR_CATEGORIES.get(err.code, err.code) in expected, (err.code, expected)
        return
    ours = {_OUR_CATEGORIES.get(w.code, w.code) for w in package.warnings}
    assert ours == expected
