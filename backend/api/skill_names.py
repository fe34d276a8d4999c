"""The `{name:skill}` path parameter of the skill routes: a skill's name, `<plugin>/<skill>` too.

A plugin's skill is named `<plugin>/<skill>` (`backend.plugins.naming`), so its routes have one
more segment: `.../skills/sales/call-prep/versions` is skill `sales/call-prep`'s history. The
second segment is never one of the routes' own words (`ROUTE_WORDS`: imports never name a
plugin's skill so), hence `.../skills/sales/versions` stays skill `sales`'s history.
A first segment matches anything but `/`, as Starlette's default does, so a malformed name
still reaches the handler and gets its 404 or 422 with a code.
"""

from __future__ import annotations

from starlette.convertors import StringConvertor, register_url_convertor

from backend.plugins.naming import ROUTE_WORDS

_WORDS = "|".join(sorted(ROUTE_WORDS))


class SkillNameConvertor(StringConvertor):
    regex = rf"[^/]+(?:/(?!(?:{_WORDS})(?:/|$))[^/]+)?"

    def to_string(self, value: str) -> str:
        return value  # a plugin's skill keeps its `/` in generated URLs


# Starlette's public registry of path convertors; registered before any route uses it.
register_url_convertor("skill", SkillNameConvertor())
SKILL = "{name:skill}"
