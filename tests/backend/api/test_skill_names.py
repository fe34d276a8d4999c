"""The `{name:skill}` path parameter: a plugin's skill has routes at its full name, and no
plugin skill's name can shadow a route of another skill."""

from __future__ import annotations

import pytest
from starlette.routing import Match, Route

from backend.api.routes import skills
from backend.plugins import naming


def route_of(method: str, path: str) -> tuple[str, dict[str, str]]:
    for route in skills.namespaced.routes:
        assert isinstance(route, Route)
        match, child = route.matches({"type": "http", "path": path, "method": method})
        if match == Match.FULL:
            return route.path.removeprefix("/namespaces/{namespace}/skills"), child["path_params"]
    raise AssertionError(f"no route for {method} {path}")


@pytest.mark.parametrize(
    ("method", "path", "route", "name"),
    [
        ("GET", "tool", "/{name:skill}", "tool"),
        ("GET", "sales/call-prep", "/{name:skill}", "sales/call-prep"),
        ("GET", "sales/versions", "/{name:skill}/versions", "sales"),
        ("GET", "sales/call-prep/versions", "/{name:skill}/versions", "sales/call-prep"),
        (
            "GET",
            "sales/a/versions/2/package",
            "/{name:skill}/versions/{version}/package",
            "sales/a",
        ),
        ("GET", "tool/files/files/x.md", "/{name:skill}/files/{path:path}", "tool"),
        ("GET", "sales/a/files/references/x.md", "/{name:skill}/files/{path:path}", "sales/a"),
        ("POST", "sales/a/rollback", "/{name:skill}/rollback", "sales/a"),
        ("POST", "sales/sync", "/{name:skill}/sync", "sales"),
        ("GET", "Bad_Name", "/{name:skill}", "Bad_Name"),  # reaches the handler: 404 with a code
    ],
)
def test_paths_resolve_to_the_skill_and_route_meant(
    method: str, path: str, route: str, name: str
) -> None:
    found, params = route_of(method, f"/namespaces/dev/skills/{path}")
    assert (found, params["name"]) == (route, name)


def test_every_word_after_a_skills_name_is_a_name_plugin_skills_never_get() -> None:
    words = {
        route.path.split("{name:skill}/", 1)[1].split("/", 1)[0]
        for route in skills.namespaced.routes
        if isinstance(route, Route) and "{name:skill}/" in route.path
    }
    assert words == naming.ROUTE_WORDS
    assert {naming.fit("sales", w) for w in words}.isdisjoint(naming.ROUTE_WORDS)
    assert naming.fit("p" * 56, "versions") not in naming.ROUTE_WORDS  # shortened too
