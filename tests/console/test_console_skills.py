"""The skill library and the Ghost editor in the browser, and a chat with the offline model."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.support import zips
from tests.support.console import Console, Gateway, drop_file, screenshots, send

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("db_backend", ["sqlite"], indirect=True)]

GHOST_YAML = """apiVersion: skillhive.io/v1
kind: Ghost
metadata:
  name: forecaster
  namespace: default
spec:
  systemPrompt: You are helpful.
  model:
    name: offline
  skills: [weather-report]
"""


def weather_zip() -> bytes:
    return zips.skill(
        "weather-report",
        description="Writes a weather report for a city.",
        extra="colour: blue\n",
        files={"scripts/fetch.py": "print('sunny')\n"},
    )


def test_upload_shows_warnings_and_refusals_by_code(
    console: Console, gateway: Gateway, artifacts: Path
) -> None:
    console.sign_in(gateway.token)
    console.open("/skills")
    drop_file(console.page, ".drop", "weather-report.zip", weather_zip())
    report = console.page.locator(".report")
    expect(report.get_by_role("link", name="weather-report")).to_be_visible()
    for code in ("unknown_field", "code_not_allowed"):
        expect(report.locator(f'.problem[data-code="{code}"]')).to_be_visible()
    screenshots(console.page, artifacts, "skills-upload")

    broken = zips.build({"notes.txt": "no SKILL.md here"}, folder="broken")
    refused = gateway.api(
        "POST",
        "/namespaces/default/skills",
        content=broken,
        headers={"Content-Type": "application/zip"},
    )
    assert refused.status_code == 422
    error = refused.json()["error"]
    drop_file(console.page, ".drop", "broken.zip", broken)
    shown = report.locator(f'.problem[data-code="{error["code"]}"]')
    expect(shown).to_contain_text(error["message"])

    # the skill's page: SKILL.md as Markdown, files, versions, disable, delete refused while used
    console.open("/skills/default/weather-report")
    expect(console.page.locator(".viewer .markdown h1")).to_have_text("weather-report")
    expect(console.page.get_by_role("button", name="scripts/fetch.py")).to_be_visible()
    expect(console.page.locator(".versions li")).to_have_count(1)
    screenshots(console.page, artifacts, "skill-detail")
    console.page.get_by_role("button", name="Disable").click()
    expect(console.page.get_by_role("button", name="Enable")).to_be_visible()
    assert (
        gateway.api("GET", "/namespaces/default/skills/weather-report").json()["status"]["enabled"]
        is False
    )
    console.page.get_by_role("button", name="Enable").click()
    expect(console.page.get_by_role("button", name="Disable")).to_be_visible()

    # replace (a new version), then roll back to the first: a third version with its package
    md = zips.skill_md("weather-report", "Writes a weather report for a city.")
    v2 = zips.build({"SKILL.md": md.replace("Do the thing.", "Two.")}, folder="weather-report")
    drop_file(console.page, ".drop", "v2.zip", v2)
    expect(console.page.locator(".versions li")).to_have_count(2)
    expect(console.page.locator(".viewer .markdown p")).to_have_text("Two.")
    console.page.get_by_role("button", name="Roll back to 1").click()
    expect(console.page.locator(".versions li")).to_have_count(3)
    expect(console.page.locator(".viewer .markdown p")).to_have_text("Do the thing.")
    versions = gateway.api("GET", "/namespaces/default/skills/weather-report/versions").json()
    assert [v["version"] for v in versions["items"]] == [3, 2, 1]
    assert versions["items"][0]["sha256"] == versions["items"][2]["sha256"]

    created = gateway.api(
        "POST", "/apply", content=GHOST_YAML, headers={"Content-Type": "application/yaml"}
    )
    assert created.status_code == 200, created.text
    console.page.once("dialog", lambda dialog: dialog.accept())
    console.page.get_by_role("button", name="Delete").click()
    expect(console.page.locator(".report .problems code").first).to_have_text("skill_referenced")
    expect(console.page.get_by_role("link", name="default/forecaster")).to_be_visible()
    assert gateway.api("GET", "/namespaces/default/skills/weather-report").status_code == 200
    assert console.errors == []


def test_a_ghost_made_in_the_editor_chats_and_loads_a_skill(
    console: Console, gateway: Gateway, artifacts: Path
) -> None:
    uploaded = gateway.api(
        "POST",
        "/namespaces/default/skills",
        content=weather_zip(),
        headers={"Content-Type": "application/zip"},
    )
    assert uploaded.status_code == 201, uploaded.text
    console.sign_in(gateway.token)
    console.open("/ghosts")
    editor = console.page.get_by_label("Ghost (YAML or JSON)")
    editor.fill(GHOST_YAML + "  broken: [\n")
    console.page.get_by_role("button", name="Apply").click()
    expect(console.page.locator(".field-errors li").first).to_contain_text("invalid_yaml")
    expect(editor).to_have_attribute("aria-invalid", "true")
    editor.fill(GHOST_YAML)
    console.page.get_by_role("button", name="Apply").click()
    expect(console.page.get_by_role("heading", name="Ghost forecaster")).to_be_visible()
    screenshots(console.page, artifacts, "ghost-editor")

    console.open("/chat")
    console.page.get_by_label("Ghost").select_option("default/forecaster")
    console.page.get_by_role("button", name="New conversation").click()
    send(console, "What is the weather report for Paris?")
    answer = console.page.locator(".message.assistant.status-ok")
    expect(answer.locator(".skill-loaded")).to_contain_text("weather-report")
    expect(answer.locator(".text")).to_contain_text("Active skills: weather-report")
    expect(answer.locator("details.tool summary")).to_contain_text("load_skill")
    expect(answer.locator(".usage")).to_contain_text("Tokens:")
    expect(console.page.get_by_role("button", name="Send")).to_be_enabled()
    screenshots(console.page, artifacts, "chat")

    stored = gateway.api("GET", "/conversations").json()["items"]
    assert [c["ghost"] for c in stored] == ["default/forecaster"]

    console.page.get_by_role("button", name="Rename").click()
    console.page.get_by_label("Title").fill("Paris weather")
    console.page.get_by_label("Title").press("Enter")
    expect(console.page.get_by_role("heading", name="Paris weather")).to_be_visible()
    expect(console.page.get_by_role("link", name="Paris weather")).to_be_visible()
    assert gateway.api("GET", f"/conversations/{stored[0]['id']}").json()["title"] == (
        "Paris weather"
    )
    console.page.once("dialog", lambda dialog: dialog.accept())
    console.page.get_by_role("button", name="Delete conversation Paris weather").click()
    expect(console.page.get_by_text("No conversations yet.")).to_be_visible()
    assert gateway.api("GET", "/conversations").json()["items"] == []
    assert console.errors == []
