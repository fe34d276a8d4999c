"""The repository's own skills (tests/fixtures/skills) exercise every reader rule the corpus does,
so each rule is tested in a clean clone too: through the reader and through the upload API, with
predicted warnings, and agreeing with `skills_ref` where the format is the standard one.
"""

from __future__ import annotations

import httpx
import pytest

from backend.skills.folder import zip_folder
from backend.skills.package import SkillPackage, read_package
from tests.support.accounts import Account
from tests.support.corpus import FIXTURE_SKILLS
from tests.support.skill_checks import assert_agreement, assert_imports_as_predicted, files_on_disk
from tests.support.skills import upload

# What each fixture exercises, as the warning codes it must draw.
EXPECTED_WARNINGS: dict[str, list[str]] = {
    "field-notes": [],  # every standard field, references/ scripts/ evaluations/, a licence
    "shift-handover": [],  # a UTF-8 BOM and CRLF line endings
    "release-digest": ["description_too_long"],  # 1,101 characters, a folded YAML scalar
    "prompt-polisher": ["unknown_field", "unknown_field"],  # argument-hint, model
    "starter": ["name_mismatch"],  # name: starter-kit
    "meeting_minutes": ["name_normalized", "name_mismatch"],  # snake_case name, fixed
    "release_radar": ["name_derived", "unknown_placeholder"],  # Wegent fields and placeholders
    "chart-painter": ["name_derived", "unknown_field", "code_not_allowed"],  # Wegent provider
}
# Standard-format fixtures: our verdict equals skills-ref's. Not shift-handover (skills-ref
# refuses a BOM, we accept it on purpose) nor the Wegent ones (their extension keys are fields
# here, unknown there).
AGREEING = ["field-notes", "release-digest", "prompt-polisher", "starter"]


def read_fixture(name: str, *, public: bool = False) -> SkillPackage:
    return read_package(zip_folder(FIXTURE_SKILLS / name), public=public)


def test_every_fixture_folder_has_a_prediction() -> None:
    found = sorted(p.name for p in FIXTURE_SKILLS.iterdir() if p.is_dir())
    assert found == sorted(EXPECTED_WARNINGS)


@pytest.mark.parametrize("name", sorted(EXPECTED_WARNINGS))
def test_every_fixture_skill_imports_with_the_predicted_warnings(name: str) -> None:
    assert_imports_as_predicted(FIXTURE_SKILLS / name, EXPECTED_WARNINGS[name])


async def test_every_fixture_skill_uploads_through_the_api_with_the_predicted_warnings(
    client: httpx.AsyncClient, alice: Account, admin: Account
) -> None:
    for name, warnings in EXPECTED_WARNINGS.items():
        response = await upload(client, alice.headers, zip_folder(FIXTURE_SKILLS / name))
        assert response.status_code == 201, response.text
        crd = response.json()
        assert [w["code"] for w in crd["status"]["warnings"]] == warnings, name
        assert {f["path"] for f in crd["spec"]["files"]} == files_on_disk(FIXTURE_SKILLS / name)
    public = await client.post(
        "/api/v1/public/skills",
        files={"file": ("s.zip", zip_folder(FIXTURE_SKILLS / "chart-painter"), "application/zip")},
        headers=admin.headers,
    )
    assert public.status_code == 201, public.text
    assert [w["code"] for w in public.json()["status"]["warnings"]] == [
        "name_derived",
        "unknown_field",
    ]
    assert public.json()["status"]["codeAllowed"] is True


def test_every_standard_field_and_nested_folders_are_read() -> None:
    package = read_fixture("field-notes")
    spec = package.spec
    assert spec.metadata == {"short-description": "Tidy site-visit notes", "audience": "inspectors"}
    assert spec.allowed_tools == ["Read", "Write", "Bash(date:*)"]
    assert spec.license == "MIT (see LICENSE.txt)"
    assert spec.compatibility == "Needs a POSIX shell with `date`; works offline."
    modes = {f.path: f.mode for f in package.files}
    assert modes["scripts/stamp.sh"] == 0o755 and modes["references/style-guide.md"] == 0o644
    assert "references/examples/pump-room.md" in modes and "evaluations/cases.json" in modes


def test_a_bom_and_crlf_line_endings_reach_neither_fields_nor_prompt() -> None:
    raw = (FIXTURE_SKILLS / "shift-handover" / "SKILL.md").read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf---\r\n")  # the fixture is what it claims to be
    package = read_fixture("shift-handover")
    assert package.name == "shift-handover"
    assert package.spec.description.endswith("needs to know.")
    assert "\r" not in package.spec.prompt and "\ufeff" not in package.spec.prompt
    assert package.spec.prompt.startswith("# Shift handover\n\nSaved by a Windows editor")


def test_a_long_description_is_kept_whole_with_a_warning() -> None:
    package = read_fixture("release-digest")
    assert len(package.spec.description) == 1101
    assert "\n" not in package.spec.description  # folded into one line
    assert "1101 characters" in package.warnings[0].message


def test_unknown_keys_are_kept_in_extra() -> None:
    package = read_fixture("prompt-polisher")
    assert package.spec.extra == {"argument-hint": "[draft prompt]", "model": "any"}
    assert [w.message for w in package.warnings] == [
        "non-standard frontmatter key 'argument-hint' kept in extra",
        "non-standard frontmatter key 'model' kept in extra",
    ]


def test_a_declared_name_wins_over_the_folder() -> None:
    assert read_fixture("starter").name == "starter-kit"


def test_a_snake_case_name_is_fixed_not_refused() -> None:
    assert read_fixture("meeting_minutes").name == "meeting-minutes"


def test_wegent_fields_and_mcp_placeholders_are_kept() -> None:
    package = read_fixture("release_radar")
    spec = package.spec
    assert package.name == "release-radar"  # derived from the folder release_radar
    assert (spec.display_name, spec.version, spec.author) == (
        "发布雷达",
        "1.10",
        "Skillhive fixtures",
    )
    assert (spec.tags, spec.bind_shells) == (["releases", "deployments"], ["Chat", "ClaudeCode"])
    server = spec.mcp_servers["release-feed"]
    assert (server.type, server.timeout) == ("streamable-http", 120)
    assert server.url == "${{backend_url}}/mcp/release-feed/sse"
    assert server.headers == {
        "Authorization": "Bearer ${{task_token}}",
        "X-Team": "${{user.team}}",
    }
    assert not package.has_code


def test_a_wegent_provider_skill_is_code_only_when_public() -> None:
    user = read_fixture("chart-painter")
    admin = read_fixture("chart-painter", public=True)
    assert user.has_code and admin.has_code
    assert "code_not_allowed" not in [w.code for w in admin.warnings]
    assert admin.spec.provider is not None
    assert (admin.spec.provider.module, admin.spec.provider.class_) == (
        "provider",
        "ChartPainterProvider",
    )
    assert user.spec.config == {"max_points": 500, "palette": "muted"}
    assert user.spec.extra == {"dependencies": ["charts.renderer"]}
    tools = [(t.name, t.provider, t.config) for t in user.spec.tools]
    assert tools == [
        ("draw_chart", "chart-painter", {"timeout": 20}),
        ("list_chart_kinds", "chart-painter", {}),
    ]


@pytest.mark.parametrize("name", AGREEING)
def test_standard_fixture_verdicts_agree_with_skills_ref(name: str) -> None:
    assert_agreement(FIXTURE_SKILLS / name)
