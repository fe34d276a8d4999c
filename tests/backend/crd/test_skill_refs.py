"""The one parser of a Ghost's skill references: `name`, `plugin/skill`, each `@version`."""

from __future__ import annotations

import pytest

from backend.crd.common import SkillPin, parse_skill_ref


@pytest.mark.parametrize(
    ("ref", "pin"),
    [
        ("demo", SkillPin("demo")),
        ("demo@3", SkillPin("demo", 3)),
        ("sales/call-prep", SkillPin("sales/call-prep")),
        ("sales/call-prep@12", SkillPin("sales/call-prep", 12)),
    ],
)
def test_valid_references_parse_and_print_back(ref: str, pin: SkillPin) -> None:
    assert parse_skill_ref(ref) == pin
    assert str(pin) == ref


@pytest.mark.parametrize(
    "ref", ["demo@0", "demo@007", "demo@", "demo@1.0", "a/b/c@1", "demo@1@1", "x" * 65 + "@1"]
)
def test_malformed_references_are_refused(ref: str) -> None:
    with pytest.raises(ValueError, match="skill"):
        parse_skill_ref(ref)
