"""`skillhive apply|get|delete|describe` against a live gateway, on both databases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.support.cli import Server, assert_one_error_line, invoke, ok

GHOSTS = """\
apiVersion: skillhive.io/v1
kind: Ghost
metadata:
  name: helper
  labels: {app: demo, role: helper}
spec:
  systemPrompt: You help.
  model: {name: offline}
  skills: [haiku-writer, notes]
---
kind: Ghost
metadata:
  name: reviewer
  labels: {app: demo, role: reviewer}
spec:
  systemPrompt: You review.
  model: {name: offline}
"""

NOTES_DOC = """\
kind: Skill
metadata:
  name: notes
  namespace: dev
  labels: {app: demo}
spec:
  path: extra/notes
"""


def _skill(folder: Path, name: str, description: str, extra: str = "") -> None:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n{extra}---\nDo the {name} thing.\n"
    )


def make_repo(root: Path) -> Path:
    """A git-style folder: Ghosts in YAML, a bare skill folder, a Skill document."""
    repo = root / "repo"
    _skill(repo / "skills" / "haiku-writer", "haiku-writer", "Writes haiku about any topic.")
    _skill(repo / "extra" / "notes", "notes", "Keeps notes.", extra="color: blue\n")
    (repo / "ghosts.yaml").write_text(GHOSTS)
    (repo / "notes.yaml").write_text(NOTES_DOC)
    (repo / "README.txt").write_text("not a document: ignored")
    return repo


def _lines(text: str) -> list[str]:
    return text.strip().splitlines()


def _get_json(*args: str) -> Any:
    return json.loads(ok("get", *args, "-o", "json"))


def test_apply_a_folder_then_again_then_a_change_with_a_server_dry_run_first(
    server: Server, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path)
    assert _lines(ok("apply", "-f", str(repo), "-n", "dev")) == [
        "skill/dev/haiku-writer created",
        "skill/dev/notes created",
        "ghost/dev/helper created",
        "ghost/dev/reviewer created",
    ]
    assert _lines(ok("apply", "-f", str(repo), "-n", "dev")) == [
        "skill/dev/haiku-writer unchanged",
        "skill/dev/notes unchanged",
        "ghost/dev/helper unchanged",
        "ghost/dev/reviewer unchanged",
    ]
    (repo / "ghosts.yaml").write_text(GHOSTS.replace("You help.", "You help a lot."))
    (repo / "skills" / "haiku-writer" / "SKILL.md").write_text(
        "---\nname: haiku-writer\ndescription: Writes short poems.\n---\nThree lines.\n"
    )
    dry = ok("apply", "-f", str(repo), "-n", "dev", "--dry-run", "server")
    assert "skill/dev/haiku-writer configured (server dry run)" in dry
    assert "ghost/dev/helper configured (server dry run)" in dry
    assert _get_json("ghost", "helper", "-n", "dev")["spec"]["systemPrompt"] == "You help."
    skill = _get_json("skill", "haiku-writer", "-n", "dev")
    assert skill["spec"]["description"] == "Writes haiku about any topic."
    real = _lines(ok("apply", "-f", str(repo), "-n", "dev"))
    assert "skill/dev/haiku-writer configured" in real and "ghost/dev/helper configured" in real
    assert _get_json("ghost", "helper", "-n", "dev")["spec"]["systemPrompt"] == "You help a lot."


def test_get_prints_tables_json_and_selects_by_label(server: Server, tmp_path: Path) -> None:
    ok("apply", "-f", str(make_repo(tmp_path)), "-n", "dev")
    table = _lines(ok("get", "ghosts", "-n", "dev"))
    assert table[0].split() == ["NAMESPACE", "NAME", "MODEL", "SKILLS", "VERSION", "WARNINGS"]
    assert [row.split()[:4] for row in table[1:]] == [
        ["dev", "helper", "offline", "2"],
        ["dev", "reviewer", "offline", "0"],
    ]
    wide = _lines(ok("get", "ghosts", "-n", "dev", "-o", "wide"))
    assert "LABELS" in wide[0] and "app=demo,role=helper" in wide[1]
    selected = _lines(ok("get", "ghosts", "-n", "dev", "-l", "role=reviewer"))
    assert [row.split()[1] for row in selected[1:]] == ["reviewer"]
    skills = _get_json("skills", "-n", "dev", "-l", "app")
    assert [s["metadata"]["name"] for s in skills] == ["notes"]
    skills_table = _lines(ok("get", "skills", "-n", "dev"))
    assert skills_table[0].split()[:3] == ["NAMESPACE", "NAME", "ENABLED"]
    assert [row.split()[1] for row in skills_table[1:]] == ["haiku-writer", "notes"]
    conversations = invoke("get", "conversations")
    assert conversations.exit_code == 0 and "No resources found." in conversations.output
    missing = invoke("get", "ghost", "nope", "-n", "dev")
    assert_one_error_line(missing, "404 ghost_not_found", exit_code=3)
    assert invoke("get", "widgets").exit_code == 2  # usage


def test_delete_honours_the_apis_force_for_a_referenced_skill(
    server: Server, tmp_path: Path
) -> None:
    ok("apply", "-f", str(make_repo(tmp_path)), "-n", "dev")
    referenced = invoke("delete", "skill", "haiku-writer", "-n", "dev")
    assert_one_error_line(referenced, "409 skill_referenced", exit_code=1)
    assert _lines(ok("delete", "skill", "haiku-writer", "-n", "dev", "--force")) == [
        "skill/dev/haiku-writer deleted"
    ]
    assert _get_json("ghost", "helper", "-n", "dev")["spec"]["skills"] == ["notes"]
    assert _lines(ok("delete", "ghost", "reviewer", "-n", "dev")) == ["ghost/dev/reviewer deleted"]
    again = invoke("delete", "ghost", "reviewer", "-n", "dev")
    assert_one_error_line(again, "ghost_not_found", exit_code=3)


def test_describe_skill_shows_warnings_files_versions_and_the_ghosts_using_it(
    server: Server, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path)
    ok("apply", "-f", str(repo), "-n", "dev")
    (repo / "extra" / "notes" / "guide.md").write_text("# Guide\n")
    ok("apply", "-f", str(repo / "notes.yaml"))  # a new package: version 2
    text = ok("describe", "skill", "notes", "-n", "dev")
    assert "Labels:           app=demo" in text
    assert "unknown_field: non-standard frontmatter key 'color'" in text
    files = text[text.index("Files:") : text.index("Versions:")]
    assert "SKILL.md" in files and "guide.md" in files
    versions = text[text.index("Versions:") : text.index("Used by:")]
    assert [line.split()[0] for line in _lines(versions)[1:]] == ["v2", "v1"]
    assert "ghost/dev/helper (listed)" in text[text.index("Used by:") :]
    assert "reviewer" not in text


def _without_server_fields(stream: str) -> list[dict[str, Any]]:
    documents = list(yaml.safe_load_all(stream))
    for document in documents:
        document["metadata"].pop("resourceVersion")
        document["metadata"].pop("creationTimestamp", None)
    return documents


def test_get_o_yaml_applies_back_to_equal_objects(server: Server, tmp_path: Path) -> None:
    ok("apply", "-f", str(make_repo(tmp_path)), "-n", "dev")
    ghosts = ok("get", "ghosts", "-n", "dev", "-o", "yaml")
    skills = ok("get", "skills", "-n", "dev", "-o", "yaml")
    assert _lines(ok("apply", "-f", "-", input=ghosts + "---\n" + skills)) == [
        "skill/dev/haiku-writer unchanged",
        "skill/dev/notes unchanged",
        "ghost/dev/helper unchanged",
        "ghost/dev/reviewer unchanged",
    ]
    ok("delete", "ghost", "helper", "-n", "dev")
    ok("delete", "ghost", "reviewer", "-n", "dev")
    saved = tmp_path / "saved.yaml"
    saved.write_text(ghosts)
    assert _lines(ok("apply", "-f", str(saved))) == [
        "ghost/dev/helper created",
        "ghost/dev/reviewer created",
    ]
    again = ok("get", "ghosts", "-n", "dev", "-o", "yaml")
    assert _without_server_fields(again) == _without_server_fields(ghosts)
    # Labels of a skill are applied from its YAML too (no package needed).
    relabelled = skills.replace("app: demo", "app: other")
    assert "skill/dev/notes configured" in ok("apply", "-f", "-", input=relabelled)
    assert _get_json("skill", "notes", "-n", "dev")["metadata"]["labels"] == {"app": "other"}


def test_prune_deletes_labelled_objects_left_out_after_confirmation(
    server: Server, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path)
    ok("apply", "-f", str(repo), "-n", "dev")
    only_helper = tmp_path / "helper.yaml"
    only_helper.write_text(GHOSTS.split("---\n")[0].replace("[haiku-writer, notes]", "[notes]"))
    notes = str(repo / "notes.yaml")
    args = ["apply", "-f", str(only_helper), "-f", notes, "-n", "dev", "--prune", "-l", "app=demo"]
    unconfirmed = invoke(*args)
    assert_one_error_line(
        unconfirmed, "would prune ghost/dev/reviewer: confirm with --yes", exit_code=2
    )  # asked before anything is written
    assert _get_json("ghost", "helper", "-n", "dev")["spec"]["skills"] == ["haiku-writer", "notes"]
    dry = ok(*args, "--dry-run", "server")
    assert "ghost/dev/reviewer pruned (server dry run)" in dry
    assert len(_get_json("ghosts", "-n", "dev")) == 2
    pruned = _lines(ok(*args, "--yes"))
    assert pruned == [
        "skill/dev/notes unchanged",
        "ghost/dev/helper configured",
        "ghost/dev/reviewer pruned",
    ]
    assert [g["metadata"]["name"] for g in _get_json("ghosts", "-n", "dev")] == ["helper"]
    # The skill folder without labels is not the selector's: kept.
    assert [s["metadata"]["name"] for s in _get_json("skills", "-n", "dev")] == [
        "haiku-writer",
        "notes",
    ]
    assert invoke("apply", "-f", str(only_helper), "--prune").exit_code == 2  # needs -l
