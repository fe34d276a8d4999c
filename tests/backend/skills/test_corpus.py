"""Real skills nobody on this project wrote (../shared/corpus, see its README) import as predicted,
and on the Agent Skills standard fields our verdicts agree with the reference validator.

Agreement is compared per category of finding: where we accept a skill, the categories we warn
about equal those `skills_ref.validate` reports; where we refuse one, `skills_ref` reports the
category of our error too (it lists every finding, we stop at the first error).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import skills_ref
from skills_ref.validator import ALLOWED_FIELDS

from backend.skills.errors import PackageError
from backend.skills.fields import STANDARD_KEYS
from backend.skills.folder import zip_folder
from backend.skills.package import SkillPackage, read_package

CORPUS = Path(__file__).resolve().parents[3].parent / "shared" / "corpus"
FOLDERS = sorted(p for p in CORPUS.glob("*/*") if p.is_dir())

# What the corpus README says each folder exercises, as warning codes.
EXPECTED_WARNINGS: dict[str, list[str]] = {
    **{f"anthropics-skills/{n}": [] for n in [
        "algorithmic-art", "brand-guidelines", "canvas-design", "frontend-design",
        "internal-comms", "mcp-builder", "skill-creator", "slack-gif-creator", "theme-factory",
        "web-artifacts-builder", "webapp-testing",
    ]},
    "anthropics-skills/claude-api": ["description_too_long"],  # 1,068 characters
    "anthropics-skills/template": ["name_mismatch"],  # name: template-skill
    **{f"openai-skills/{n}": [] for n in [
        "create-plan", "gh-address-comments", "gh-fix-ci", "linear", "notion-knowledge-capture",
        "notion-meeting-intelligence", "notion-research-documentation",
        "notion-spec-to-implementation", "skill-creator", "skill-installer",
    ]},
    **{f"wegent-format/{n}": ["name_derived"] for n in [
        "dingtalk-ai-table", "dingtalk-docs", "prompt-optimization", "ui-links",
        "wegent-image-generation", "wegent-knowledge", "wegent-video-generation", "wiki_submit",
    ]},
    **{f"wegent-format/{n}": [] for n in [
        "browser", "interactive", "skill-creator", "subscription-manager",
    ]},
    # An explicit snake_case name: fixed to conversation-to-prompt, not refused (fields.py).
    "wegent-format/conversation_to_prompt": ["name_normalized", "name_mismatch"],
    "wegent-format/mermaid-diagram": ["name_derived", "unknown_field", "code_not_allowed"],
    "wegent-format/sandbox": ["name_derived", "code_not_allowed"],
}  # fmt: skip


def key(folder: Path) -> str:
    return f"{folder.parent.name}/{folder.name}"


def test_the_corpus_is_there_and_every_folder_has_a_prediction() -> None:
    assert len(FOLDERS) == 38
    assert sorted(map(key, FOLDERS)) == sorted(EXPECTED_WARNINGS)


@pytest.mark.parametrize("folder", FOLDERS, ids=key)
def test_every_corpus_skill_imports_with_the_predicted_warnings(folder: Path) -> None:
    package = read_package(zip_folder(folder))
    assert [w.code for w in package.warnings] == EXPECTED_WARNINGS[key(folder)]
    assert package.spec.description
    assert package.spec.prompt
    on_disk = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert {f.path for f in package.files} == on_disk


def read_corpus(name: str, *, public: bool = False) -> SkillPackage:
    return read_package(zip_folder(CORPUS / name), public=public)


def test_claude_api_is_kept_whole_despite_its_long_description() -> None:
    package = read_corpus("anthropics-skills/claude-api")
    assert len(package.spec.description) == 1068
    assert "1068 characters" in package.warnings[0].message


def test_the_template_keeps_its_declared_name() -> None:
    assert read_corpus("anthropics-skills/template").name == "template-skill"


def test_openai_metadata_maps_are_read() -> None:
    spec = read_corpus("openai-skills/create-plan").spec
    assert spec.metadata == {"short-description": "Create a plan"}


def test_wegent_skills_keep_placeholders_and_extension_fields() -> None:
    spec = read_corpus("wegent-format/interactive").spec
    server = spec.mcp_servers["wegent-interactive-form-question"]
    assert server.url == "${{backend_url}}/mcp/interactive-form-question/sse"
    assert server.headers == {"Authorization": "Bearer ${{task_token}}"}
    assert (spec.display_name, spec.version, spec.bind_shells) == (
        "交互式表单提问",
        "2.0.0",
        ["Chat", "Agno", "ClaudeCode"],
    )


def test_a_wegent_provider_skill_is_code_only_when_public() -> None:
    user = read_corpus("wegent-format/mermaid-diagram")
    admin = read_corpus("wegent-format/mermaid-diagram", public=True)
    assert user.has_code and admin.has_code
    assert "code_not_allowed" not in [w.code for w in admin.warnings]
    assert admin.spec.provider is not None and admin.spec.provider.class_ == "MermaidToolProvider"
    assert user.spec.extra == {"dependencies": ["app.chat_shell.tools.pending_requests"]}
    assert [t.name for t in user.spec.tools] == ["render_mermaid", "read_mermaid_reference"]


def test_our_standard_keys_are_the_reference_validators() -> None:
    assert STANDARD_KEYS == ALLOWED_FIELDS


# ---- agreement with skills-ref --------------------------------------------------------------

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


REFERENCE_FOLDERS = [f for f in FOLDERS if f.parent.name in ("anthropics-skills", "openai-skills")]


@pytest.mark.parametrize("folder", REFERENCE_FOLDERS, ids=key)
def test_standard_field_verdicts_agree_with_skills_ref(folder: Path) -> None:
    assert_agreement(folder)


SYNTHETIC = {
    "clean": ("clean", "name: clean\ndescription: Fine."),
    "unknown-key": ("unknown-key", "name: unknown-key\ndescription: d\nargument-hint: x"),
    "long-description": ("long-description", f"name: long-description\ndescription: {'d' * 1025}"),
    "limit-description": (
        "limit-description",
        f"name: limit-description\ndescription: {'d' * 1024}",
    ),
    "long-compat": (
        "long-compat",
        f"name: long-compat\ndescription: d\ncompatibility: {'c' * 501}",
    ),
    "mismatch": ("folder-name", "name: other-name\ndescription: d"),
    "uppercase": ("Upper", "name: Upper\ndescription: d"),
    "hyphens": ("a--b", "name: a--b\ndescription: d"),
    "edge-hyphen": ("-edge", "name: -edge\ndescription: d"),
    "too-long": ("n" * 65, f"name: {'n' * 65}\ndescription: d"),
    "no-description": ("no-description", "name: no-description"),
    "no-name": ("no-name", "description: d"),
    "several": ("several", f"name: other\ndescription: {'d' * 1100}\nx-extra: 1"),
}


@pytest.mark.parametrize("case", sorted(SYNTHETIC))
def test_synthetic_edge_cases_agree_with_skills_ref(case: str, tmp_path: Path) -> None:
    folder_name, frontmatter = SYNTHETIC[case]
    folder = tmp_path / folder_name
    folder.mkdir()
    (folder / "SKILL.md").write_text(f"---\n{frontmatter}\n---\nBody.\n")
    assert_agreement(folder)
