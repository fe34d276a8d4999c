"""Keeping `skill_search` and `skill_labels` in step with the skill rows in `kinds`.

Every skill write calls `index_skill` in its own transaction, so the index never drifts from the
CRDs; deleting a `kinds` row deletes both (ON DELETE CASCADE), and on SQLite a trigger removes the
FTS5 entry with it. The migration that created the index builds it for existing skills with
`index_values` too, so every row was made by the same code.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

from sqlalchemy import delete, insert
from sqlalchemy.ext.asyncio import AsyncSession

from backend.chat.mcp import engine_servers, secret_names
from backend.crd.skill import McpServer
from backend.db.models import Kind, SkillLabel, SkillSearch
from backend.skills.search.sample import REVISION_BITS
from backend.skills.search.text import skill_text

CHAT_SHELL = "Chat"
# A catalog entry is `<skill><name>N</name><description>D</description></skill>` plus a newline.
ENTRY_OVERHEAD_CHARS = 52


def binds_chat(spec: Mapping[str, Any]) -> bool:
    shells = spec.get("bindShells") or []
    return not shells or CHAT_SHELL in shells


def uses_secrets(raw: Mapping[str, Any]) -> bool:
    """Whether stored `mcpServers` JSON names a user secret (found by the placeholder parser)."""
    servers = {name: McpServer.model_validate(server) for name, server in raw.items()}
    return bool(secret_names(engine_servers(servers, trusted=False)))


def index_values(
    kind_id: int, user_id: int, namespace: str, crd: Mapping[str, Any]
) -> dict[str, Any]:
    """The `skill_search` row of a Skill CRD, with a new random `revision` (sample.py)."""
    spec, status = crd.get("spec", {}), crd.get("status", {})
    name = crd["metadata"]["name"]
    description = str(spec.get("description", ""))
    text = skill_text(crd)
    return {
        "kind_id": kind_id,
        "user_id": user_id,
        "namespace": namespace,
        "name": name,
        "enabled": bool(status.get("enabled", True)),
        "chat": binds_chat(spec),
        "description": description,
        "sha256": str(status.get("sha256", "")),
        "catalog_chars": len(name) + len(description) + ENTRY_OVERHEAD_CHARS,
        "uses_secrets": uses_secrets(spec.get("mcpServers") or {}),
        "name_terms": text.name,
        "tag_terms": text.tags,
        "when_terms": text.when,
        "desc_terms": text.description,
        "body_terms": text.body,
        "revision": secrets.randbits(REVISION_BITS),
    }


def label_values(kind_id: int, crd: Mapping[str, Any]) -> list[dict[str, Any]]:
    labels = crd["metadata"].get("labels") or {}
    return [{"kind_id": kind_id, "key": k, "value": v} for k, v in labels.items()]


async def index_skill(session: AsyncSession, row: Kind, *, new: bool = False) -> None:
    """Write the search row and labels of the skill `row` (flushed, not committed). `new`: the
    row was inserted in this transaction, so it has neither yet (two deletes fewer)."""
    if not new:
        await session.execute(delete(SkillSearch).where(SkillSearch.kind_id == row.id))
        await session.execute(delete(SkillLabel).where(SkillLabel.kind_id == row.id))
    await session.execute(
        insert(SkillSearch).values(**index_values(row.id, row.user_id, row.namespace, row.json))
    )
    labels = label_values(row.id, row.json)
    if labels:
        await session.execute(insert(SkillLabel), labels)
