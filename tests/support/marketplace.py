"""A small marketplace in the Claude Code plugin format, built as a ZIP in the test.

Two plugins by relative path (one under `partner/`), one by remote source; commands with
`$ARGUMENTS` and `$1`; a `.mcp.json` with `${VAR}` references, an unknown key and an empty
template server; a skill whose name breaks the name rule (`ui-toolkit/web`); a nested skill
named like another skill, not user-invocable; agents and hooks. And the REST calls that import
such ZIPs and create the Ghosts using their plugins.
"""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import httpx

from tests.support.accounts import Account

ROOT = "market-main"
PLUGINS = "/api/v1/namespaces/dev/plugins"

MARKETPLACE = {
    "name": "fixture-market",
    "owner": {"name": "Tests"},
    "plugins": [
        {"name": "sales", "source": "./sales", "description": "Sell things."},
        {"name": "ui-toolkit", "source": "./partner/ui-toolkit", "description": "UI help."},
        {
            "name": "far-away",
            "description": "Somewhere else.",
            "source": {
                "source": "url",
                "url": "https://far-away.invalid/far.git",
                "sha": "ab" * 20,
            },
        },
    ],
}


def skill_md(name: str, description: str, body: str) -> str:
    return f'---\nname: {name}\ndescription: "{description}"\n---\n\n{body}\n'


CALL_SUMMARY = """---
description: Summarize a call and draft the follow-up
argument-hint: "<notes>"
---

# /call-summary

Summarize these call notes with the call-prep checklist: $ARGUMENTS
"""

FORECAST = """---
description: Write the forecast for a quarter
argument-hint: "<quarter> <region>"
---

Forecast quarter $1 for region $2.
"""

SALES_FILES = {
    "sales/.claude-plugin/plugin.json": json.dumps(
        {"name": "sales", "version": "1.2.0", "description": "Prep calls and forecast."}
    ),
    "sales/skills/call-prep/SKILL.md": skill_md(
        "call-prep", "Prepare a sales call: attendees, goals, objections.", "CALL-PREP-BODY"
    ),
    # nested in call-prep, and named like another skill: imported as `sales/call-prep-deep`
    "sales/skills/call-prep/deep/SKILL.md": (
        "---\nname: account-research\ndescription: Deeper research.\n"
        "user-invocable: false\n---\n\nDEEP-BODY\n"
    ),
    "sales/skills/account-research/SKILL.md": skill_md(
        "account-research", "Research an account before outreach.", "ACCOUNT-BODY"
    ),
    "sales/skills/account-research/references/sources.md": "Where to look.\n",
    "sales/commands/call-summary.md": CALL_SUMMARY,
    "sales/commands/forecast.md": FORECAST,
    "sales/.mcp.json": json.dumps(
        {
            "mcpServers": {
                "crm": {
                    "type": "http",
                    "url": "https://mcp.crm.example/mcp",
                    "headers": {"Authorization": "Bearer ${CRM_TOKEN}"},
                    "oauth": {"clientId": "x"},
                },
                "google calendar": {"type": "http", "url": ""},
            }
        }
    ),
    "sales/agents/researcher.md": "---\nname: researcher\n---\nAn agent.\n",
    "sales/hooks/hooks.json": json.dumps({"hooks": {"PreToolUse": []}}),
}

TOOLKIT_FILES = {
    "partner/ui-toolkit/.claude-plugin/plugin.json": json.dumps({"name": "ui-toolkit"}),
    "partner/ui-toolkit/skills/web/SKILL.md": skill_md(
        "ui-toolkit/web", "Build web pages with the toolkit components.", "WEB-BODY"
    ),
    "partner/ui-toolkit/commands/scaffold.md": "Scaffold a page named $ARGUMENTS.\n",
}


def build_zip(files: dict[str, str], *, root: str | None = ROOT) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, text in files.items():
            zf.writestr(f"{root}/{path}" if root else path, text)
    return buf.getvalue()


def marketplace_zip() -> bytes:
    files = {".claude-plugin/marketplace.json": json.dumps(MARKETPLACE)}
    return build_zip({**files, **SALES_FILES, **TOOLKIT_FILES})


def plugin_zip(files: dict[str, str], prefix: str) -> bytes:
    """One plugin folder as its own ZIP (its folder is the ZIP's top folder)."""
    inner = {p.removeprefix(prefix): t for p, t in files.items()}
    return build_zip(inner, root=prefix.strip("/").rsplit("/", 1)[-1])


async def post_zip(
    client: httpx.AsyncClient, account: Account, data: bytes, url: str = PLUGINS
) -> httpx.Response:
    return await client.post(
        url, files={"file": ("market.zip", data, "application/zip")}, headers=account.headers
    )


async def import_market(client: httpx.AsyncClient, account: Account) -> dict[str, Any]:
    response = await post_zip(client, account, marketplace_zip())
    assert response.status_code == 201, response.text
    return dict(response.json())


async def make_ghost(
    client: httpx.AsyncClient, account: Account, name: str, **spec: Any
) -> httpx.Response:
    body = {"metadata": {"name": name}, "spec": spec}
    return await client.post("/api/v1/namespaces/dev/ghosts", json=body, headers=account.headers)
