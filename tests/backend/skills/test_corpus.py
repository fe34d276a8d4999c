"""Real skills nobody on this project wrote (the corpus, located by tests/support/corpus.py)
import as predicted, and on the Agent Skills standard fields our verdicts agree with the
reference validator (see tests/support/skill_checks.py). Without the corpus these tests skip,
naming the folder they looked in; the same rules are checked on the repository's own skills in
test_fixture_skills.py. The synthetic edge cases at the end need no corpus.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from skills_ref.validator import ALLOWED_FIELDS

from backend.skills.fields import STANDARD_KEYS
from backend.skills.folder import zip_folder
from backend.skills.package import SkillPackage, read_package
from tests.support import corpus
from tests.support.skill_checks import assert_agreement, assert_imports_as_predicted

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
    **{f"wegent-format/{n}": ["name_derived"] for n in ["ui-links", "wiki_submit"]},
    # Their MCP servers take Wegent's own values (${{backend_url}}, ${{task_data.*}}), which
    # no turn here fills: the servers never connect, which the upload says.
    **{f"wegent-format/{n}": ["name_derived", "unknown_placeholder"] for n in [
        "dingtalk-ai-table", "dingtalk-docs", "prompt-optimization",
        "wegent-image-generation", "wegent-knowledge", "wegent-video-generation",
    ]},
    **{f"wegent-format/{n}": ["unknown_placeholder"] for n in [
        "interactive", "subscription-manager",
    ]},
    **{f"wegent-format/{n}": [] for n in ["browser", "skill-creator"]},
    # An explicit snake_case name: fixed to conversation-to-prompt, not refused (fields.py).
    "wegent-format/conversation_to_prompt": ["name_normalized", "name_mismatch"],
    "wegent-format/mermaid-diagram": ["name_derived", "unknown_field", "code_not_allowed"],
    "wegent-format/sandbox": ["name_derived", "code_not_allowed"],
}  # fmt: skip


def test_the_corpus_is_there_and_every_folder_has_a_prediction() -> None:
    found = sorted(f"{p.parent.name}/{p.name}" for p in corpus.root().glob("*/*") if p.is_dir())
    assert len(found) == 38
    assert found == sorted(EXPECTED_WARNINGS)


@pytest.mark.parametrize("key", corpus.keys())
def test_every_corpus_skill_imports_with_the_predicted_warnings(key: str) -> None:
    assert_imports_as_predicted(corpus.path(key), EXPECTED_WARNINGS[key])


def read_corpus(key: str, *, public: bool = False) -> SkillPackage:
    return read_package(zip_folder(corpus.path(key)), public=public)


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


@pytest.mark.parametrize("key", corpus.keys("anthropics-skills", "openai-skills"))
def test_standard_field_verdicts_agree_with_skills_ref(key: str) -> None:
    assert_agreement(corpus.path(key))


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
