"""Names inside a plugin: valid skill names derived from what plugins publish, and full names.

A plugin's skills are `<plugin>/<skill>` everywhere (Ghost lists, chat, the skills API), so two
plugins never collide. The whole name fits the 64 characters of a stored name.
"""

from __future__ import annotations

import re

from backend.crd.common import MAX_NAME_LENGTH

SEPARATOR = "/"
# A plugin's name leaves its skills at least 23 characters of the 64 (`<plugin>/<skill>`).
MAX_PLUGIN_NAME_LENGTH = 40
# The skills API's own words after a skill's name (`.../skills/<name>/versions`): a plugin's
# skill with one of them as its name would read as that route of skill `<plugin>`
# (backend/api/skill_names.py), so it is imported under a derived name.
ROUTE_WORDS = frozenset({"files", "package", "rollback", "sync", "versions"})


def derive(raw: str, *, plugin: str | None = None, max_length: int = MAX_NAME_LENGTH) -> str:
    """A valid name from `raw` (e.g. `ui-toolkit/web` in plugin `ui-toolkit` -> `web`,
    `Web Tools` -> `web-tools`), at most `max_length` long; "" when nothing usable is left."""
    text = raw.strip()
    if plugin is not None:
        for sep in ("/", ":"):
            text = text.removeprefix(f"{plugin}{sep}")
    text = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return text[:max_length].strip("-")


def derive_plugin(raw: str) -> str:
    """A plugin's name from what it publishes (see `MAX_PLUGIN_NAME_LENGTH`)."""
    return derive(raw, max_length=MAX_PLUGIN_NAME_LENGTH)


def full_name(plugin: str, skill: str) -> str:
    return f"{plugin}{SEPARATOR}{skill}"


def fit(plugin: str, skill: str) -> str:
    """`skill`, shortened so `<plugin>/<skill>` fits a stored name, and never a route word."""
    room = MAX_NAME_LENGTH - len(plugin) - len(SEPARATOR)
    if skill in ROUTE_WORDS:
        skill = f"skill-{skill}"  # shortened, still not a route word
    return skill[:room].strip("-")


def is_plugin_skill(name: str) -> bool:
    return SEPARATOR in name
