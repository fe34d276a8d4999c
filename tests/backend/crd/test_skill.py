"""The Skill CRD: its exact wire shape, round trips, and the shared metadata rules."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from backend.crd.common import ObjectMeta, name_problem
from backend.crd.skill import Skill
from backend.skills.package import read_package
from tests.support.zipcraft import make_zip, skill_md

FRONTMATTER = """name: demo
description: A demo skill.
displayName: Demo
version: "1.0"
tags: [a]
provider: {module: provider, class: DemoProvider}
mcpServers: {s: {url: "https://mcp.example/${{user.id}}"}}
allowed-tools: Read
metadata: {k: v}
argument-hint: x"""


def demo_crd(public: bool = False) -> Skill:
    data = make_zip({"demo/SKILL.md": skill_md(FRONTMATTER), "demo/run.py": "pass"})
    package = read_package(data, public=public)
    created = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    return package.to_crd(
        namespace="team", labels={"env": "dev"}, resource_version=1, creation_timestamp=created
    )


def test_the_crd_serializes_with_the_documented_camel_case_keys() -> None:
    doc = demo_crd().model_dump(mode="json")
    assert list(doc) == ["apiVersion", "kind", "metadata", "spec", "status"]
    assert (doc["apiVersion"], doc["kind"]) == ("skillhive.io/v1", "Skill")
    assert doc["metadata"] == {
        "name": "demo",
        "namespace": "team",
        "labels": {"env": "dev"},
        "resourceVersion": 1,
        "creationTimestamp": "2026-01-02T03:04:05Z",
    }
    spec = doc["spec"]
    assert set(spec) == {
        "description", "displayName", "prompt", "version", "author", "tags", "bindShells",
        "config", "tools", "provider", "mcpServers", "license", "compatibility", "allowedTools",
        "metadata", "files", "extra",
    }  # fmt: skip
    assert spec["provider"] == {"module": "provider", "class": "DemoProvider"}
    assert spec["mcpServers"]["s"]["url"] == "https://mcp.example/${{user.id}}"
    assert spec["allowedTools"] == ["Read"]
    assert spec["files"] == [
        {"path": "SKILL.md", "size": len(skill_md(FRONTMATTER))},
        {"path": "run.py", "size": 4},
    ]
    assert spec["extra"] == {"argument-hint": "x"}
    assert doc["status"] == {
        "sha256": doc["status"]["sha256"],
        "size": doc["status"]["size"],
        "public": False,
        "codeAllowed": False,
        "warnings": doc["status"]["warnings"],
        "enabled": True,
        "source": None,  # set by imports from a URL: {url, ref, commit, path}
    }
    assert [w["code"] for w in doc["status"]["warnings"]] == ["unknown_field", "code_not_allowed"]


def test_public_skills_may_run_code() -> None:
    status = demo_crd(public=True).status
    assert (status.public, status.code_allowed) == (True, True)
    assert [w.code for w in status.warnings] == ["unknown_field"]


def test_the_stored_json_reads_back_to_the_same_crd() -> None:
    crd = demo_crd()
    stored = json.loads(crd.model_dump_json())
    assert Skill.model_validate(stored) == crd


def test_the_crd_refuses_unknown_keys_and_wrong_kinds() -> None:
    stored = demo_crd().model_dump(mode="json")
    with pytest.raises(ValidationError):
        Skill.model_validate({**stored, "kind": "Ghost"})
    with pytest.raises(ValidationError):
        Skill.model_validate({**stored, "spec": {**stored["spec"], "surprise": 1}})


@pytest.mark.parametrize("name", ["Demo", "a_b", "", "-a", "a" * 65])
def test_metadata_names_follow_the_name_rule(name: str) -> None:
    with pytest.raises(ValidationError, match="name"):
        ObjectMeta(name=name)
    with pytest.raises(ValidationError):
        ObjectMeta(name="ok", namespace=name)


def test_metadata_defaults() -> None:
    assert ObjectMeta(name="x").model_dump(mode="json") == {
        "name": "x",
        "namespace": "default",
        "labels": {},
        "resourceVersion": None,
        "creationTimestamp": None,
    }


@pytest.mark.parametrize("name", ["a", "0", "abc-123", "a-b-c", "a" * 64])
def test_valid_names(name: str) -> None:
    assert name_problem(name) is None
