"""The web console in a real browser: the live gateway and page wrappers, screenshots, file drops,
and the scripted conversations the console tests drive."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Page, expect

from tests.support.openai_server import FakeOpenAIServer

ADMIN_TOKEN = "console-browser-tests-admin-token-0123456789"


WIDTHS = {"desktop": 1280, "phone": 360}


# Set before any page script: what an injected handler would flip, and CSP violations seen.
GUARD_SCRIPT = """
window.__pwned = false;
window.__violations = [];
document.addEventListener('securitypolicyviolation',
  (e) => window.__violations.push(
    [e.violatedDirective, e.blockedURI, e.sourceFile, e.lineNumber, e.sample].join(' ')));
"""


@dataclass
class Gateway:
    url: str
    token: str = ADMIN_TOKEN

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {**self.headers, **kwargs.pop("headers", {})}
        return httpx.request(
            method, f"{self.url}/api/v1{path}", headers=headers, timeout=30, **kwargs
        )


@dataclass
class Console:
    """A page of the console and what it logged."""

    page: Page
    base_url: str
    errors: list[str] = field(default_factory=list)

    def open(self, route: str = "") -> None:
        self.page.goto(f"{self.base_url}/#{route}")

    def sign_in(self, token: str) -> None:
        self.open("/signin")
        self.page.get_by_label("API token").fill(token)
        self.page.get_by_role("button", name="Sign in").click()
        self.page.get_by_role("button", name="Sign out").wait_for()

    def injected(self) -> dict[str, Any]:
        """What an injection would leave: the flag, CSP violations, foreign elements."""
        return self.page.evaluate(
            """() => ({
              pwned: window.__pwned,
              violations: window.__violations,
              handlers: [...document.querySelectorAll('*')].filter(
                (el) => [...el.attributes].some((a) => a.name.startsWith('on'))).length,
              imgs: document.querySelectorAll('img[src="x"]').length,
              scripts: [...document.scripts].map((s) => s.src),
            })"""
        )


def screenshots(page: Page, folder: Path, name: str) -> list[Path]:
    """The page at desktop and phone widths (full height); the viewport is restored after."""
    size = page.viewport_size or {"width": WIDTHS["desktop"], "height": 900}
    written = []
    for label, width in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": size["height"]})
        path = folder / f"{name}-{label}.png"
        page.screenshot(path=str(path), full_page=True)
        written.append(path)
    page.set_viewport_size(size)
    return written


def drop_file(page: Page, selector: str, name: str, data: bytes) -> None:
    """Drop a file on an element as a person dragging it from their desktop would."""
    page.locator(selector).first.evaluate(
        """(zone, [name, bytes]) => {
          const transfer = new DataTransfer();
          transfer.items.add(new File([new Uint8Array(bytes)], name, {type: 'application/zip'}));
          for (const type of ['dragenter', 'dragover', 'drop']) {
            const init = {dataTransfer: transfer, bubbles: true, cancelable: true};
            zone.dispatchEvent(new DragEvent(type, init));
          }
        }""",
        [name, list(data)],
    )


def scripted_conversation(gateway: Gateway, openai_server: FakeOpenAIServer, skill: str) -> str:
    ghost = {
        "apiVersion": "skillhive.io/v1",
        "kind": "Ghost",
        "metadata": {"name": "artist"},
        "spec": {
            "systemPrompt": "You draw.",
            "model": {"name": "scripted", "baseUrl": openai_server.base_url},
            "skills": [skill],
        },
    }
    created = gateway.api("POST", "/namespaces/default/ghosts", json=ghost)
    assert created.status_code == 201, created.text
    conversation = gateway.api("POST", "/conversations", json={"ghost": "default/artist"})
    assert conversation.status_code == 201, conversation.text
    return str(conversation.json()["id"])


def tool_results(openai_server: FakeOpenAIServer) -> list[str]:
    """What the model was told each tool returned, in its last request."""
    messages: list[dict[str, Any]] = openai_server.requests[-1]["messages"]
    return [str(m["content"]) for m in messages if m["role"] == "tool"]


def send(console: Console, text: str) -> None:
    """Type a message and send it from the keyboard (Ctrl+Enter), once the view is in its
    conversation's room."""
    expect(console.page.locator(".transcript[data-ready]")).to_have_count(1)
    box = console.page.get_by_role("textbox", name="Message")
    box.fill(text)
    box.press("Control+Enter")
