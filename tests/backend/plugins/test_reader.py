"""Reading plugin trees without a database: names, MCP servers, marketplace sources."""

from __future__ import annotations

import json

import pytest

from backend.errors import InvalidRequest
from backend.plugins import naming
from backend.plugins.marketplace import listings
from backend.plugins.mcp import plugin_servers
from backend.plugins.reader import read_plugin
from backend.plugins.tree import TreeFile, rooted
from backend.skills.limits import DEFAULT_LIMITS


def tree(files: dict[str, str]) -> dict[str, TreeFile]:
    return {p: TreeFile(t.encode(), 0o644) for p, t in files.items()}


def skill(name: str, description: str = "Does a thing.") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\nBody of {name}.\n"


def test_derived_names_drop_the_plugin_prefix_and_keep_to_the_rule() -> None:
    assert naming.derive("ui-toolkit/web", plugin="ui-toolkit") == "web"
    assert naming.derive("ui-toolkit:web", plugin="ui-toolkit") == "web"
    assert naming.derive("Web Tools_2") == "web-tools-2"
    assert naming.derive("***") == ""
    assert naming.fit("p" * 40, "s" * 40) == "s" * 23


def test_a_long_plugin_name_is_shortened_so_its_skills_keep_their_names() -> None:
    long_name = "enterprise-" * 6 + "toolkit"  # 73 characters
    files = tree(
        {
            ".claude-plugin/plugin.json": json.dumps({"name": long_name}),
            "skills/report-writer/SKILL.md": skill("report-writer"),
            "skills/report-reader/SKILL.md": skill("report-reader"),
        }
    )
    draft = read_plugin(files, fallback_name="x", limits=DEFAULT_LIMITS, public=False)
    assert len(draft.name) <= naming.MAX_PLUGIN_NAME_LENGTH and long_name.startswith(draft.name)
    assert [s.name for s in draft.skills] == [
        f"{draft.name}/report-reader",
        f"{draft.name}/report-writer",
    ]
    assert "name_derived" in {w.code for w in draft.warnings}


def test_a_plugin_without_a_manifest_takes_its_marketplace_entry() -> None:
    files = tree({"skills/one/SKILL.md": skill("one"), "commands/go.md": "Go $1."})
    entry = {"name": "Helper Kit", "description": "From the entry.", "version": "2"}
    draft = read_plugin(files, fallback_name="x", entry=entry, limits=DEFAULT_LIMITS, public=False)
    assert draft.name == "helper-kit"
    assert draft.spec.description == "From the entry." and draft.spec.version == "2"
    assert [s.name for s in draft.skills] == ["helper-kit/one"]
    assert [c.name for c in draft.spec.commands] == ["go"]
    assert draft.spec.commands[0].prompt == "Go $1."
    assert "name_derived" in {w.code for w in draft.warnings}


def test_a_refused_skill_is_reported_and_the_rest_imports() -> None:
    files = tree(
        {
            ".claude-plugin/plugin.json": json.dumps({"name": "kit"}),
            "skills/good/SKILL.md": skill("good"),
            "skills/bad/SKILL.md": "no frontmatter at all\n",
        }
    )
    draft = read_plugin(files, fallback_name="kit", limits=DEFAULT_LIMITS, public=False)
    assert [s.name for s in draft.skills] == ["kit/good"]
    (refusal,) = draft.refused_skills
    assert refusal.path == "skills/bad" and refusal.code == "invalid_frontmatter"


@pytest.mark.parametrize(
    "manifest",
    ["{not json", "[" * 100_000 + "]" * 100_000, '{"name": ' + "9" * 5000 + "}"],
    ids=["syntax", "nested too deeply", "5,000-digit number"],
)
def test_an_invalid_manifest_refuses_the_plugin(manifest: str) -> None:
    # The deep one overflowed the parser's stack (a RecursionError, once a 500).
    files = tree({".claude-plugin/plugin.json": manifest, "skills/a/SKILL.md": skill("a")})
    with pytest.raises(InvalidRequest) as caught:
        read_plugin(files, fallback_name="kit", limits=DEFAULT_LIMITS, public=False)
    assert caught.value.code == "invalid_plugin_manifest"
    assert caught.value.details == {"entry": ".claude-plugin/plugin.json"}


def test_variables_become_secret_placeholders_except_the_plugin_root() -> None:
    raw = {
        "mcpServers": {
            "api": {
                "url": "https://api.example/mcp?k=${API_KEY:-none}",
                "headers": {"X-Team": "${TEAM}"},
            },
            "tool": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/tool", "env": {"T": "${TOKEN}"}},
        }
    }
    found = plugin_servers(raw, public=True)
    assert found.servers["api"].url == "https://api.example/mcp?k=${{secrets.API_KEY}}"
    assert found.servers["api"].headers == {"X-Team": "${{secrets.TEAM}}"}
    assert found.servers["tool"].command == "${CLAUDE_PLUGIN_ROOT}/bin/tool"
    assert found.secrets == {"API_KEY", "TEAM", "TOKEN"}


def test_a_server_name_the_engine_refuses_is_made_plain() -> None:
    found = plugin_servers({"google calendar": {"url": "https://cal.example/mcp"}}, public=False)
    assert list(found.servers) == ["google-calendar"]
    assert "mcp_server_renamed" in {w.code for w in found.warnings}


def test_stdio_servers_refuse_a_users_plugin() -> None:
    with pytest.raises(InvalidRequest) as caught:
        plugin_servers({"local": {"command": "node"}}, public=False)
    assert caught.value.code == "mcp_stdio_forbidden"


def test_marketplace_sources_resolve_inside_the_archive_only() -> None:
    files = tree({"plugins/a/skills/x/SKILL.md": skill("x"), "b/skills/y/SKILL.md": skill("y")})
    document = {
        "metadata": {"pluginRoot": "./plugins"},
        "plugins": [
            {"name": "a", "source": "a"},
            {"name": "b", "source": "./b"},
            {"name": "escape", "source": "../outside"},
            {"name": "gone", "source": "./missing"},
            {"name": "far", "source": {"source": "github", "repo": "o/r"}},
            {"name": "none"},
        ],
    }
    found = {item.name: item for item in listings(files, document)}
    assert found["a"].folder == "plugins/a" and found["b"].folder == "b"
    assert found["escape"].problem is not None and found["escape"].problem[0] == (
        "invalid_plugin_source"
    )
    assert found["gone"].problem is not None and found["gone"].problem[0] == (
        "plugin_source_missing"
    )
    remote = found["far"].remote
    assert remote is not None and remote.url == "https://github.com/o/r.git"
    assert found["none"].problem is not None


def test_a_repository_archive_is_read_from_its_one_top_folder() -> None:
    files = tree({"repo-main/.claude-plugin/marketplace.json": "{}", "repo-main/README.md": ""})
    inner, top = rooted(files)
    assert top == "repo-main" and ".claude-plugin/marketplace.json" in inner
    with pytest.raises(InvalidRequest) as caught:
        rooted(tree({"a/notes.txt": "", "b/notes.txt": ""}))
    assert caught.value.code == "not_a_plugin"
