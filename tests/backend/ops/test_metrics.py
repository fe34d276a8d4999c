"""`GET /metrics`: Prometheus text, for admins or the metrics token, with bounded labels."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr

from backend.api.console import console_router
from backend.app import create_app
from backend.config import Settings
from backend.ops import metrics
from backend.ops.quotas import LIMITS
from tests.support import zips
from tests.support.accounts import Account
from tests.support.errors import assert_error
from tests.support.ghosts import ghost
from tests.support.lifespan import running
from tests.support.ports import closed_port
from tests.support.skills import upload

METRICS_TOKEN = "prometheus-scrape-token-0123456789"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"metrics_token": SecretStr(METRICS_TOKEN)})


def samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    found: dict[str, list[tuple[dict[str, str], float]]] = defaultdict(list)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[sample.name].append((sample.labels, sample.value))
    return found


async def scrape(client: httpx.AsyncClient, headers: dict[str, str]) -> str:
    response = await client.get("/metrics", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return response.text


async def test_metrics_answer_the_metrics_token_and_admins_and_refuse_everyone_else(
    client: httpx.AsyncClient, alice: Account, admin: Account
) -> None:
    assert_error(await client.get("/metrics"), 401, "missing_token")
    assert_error(await client.get("/metrics", headers=alice.headers), 403, "admin_required")
    bad = {"Authorization": "Bearer not-the-token"}
    assert_error(await client.get("/metrics", headers=bad), 401, "invalid_token")
    text = await scrape(client, {"Authorization": f"Bearer {METRICS_TOKEN}"})
    assert "skillhive_http_requests_total" in text
    assert "skillhive_http_requests_total" in await scrape(client, admin.headers)


async def test_http_requests_are_counted_by_route_template_not_by_path(
    app: FastAPI, client: httpx.AsyncClient, alice: Account, admin: Account
) -> None:
    for cid in ("c-one", "c-two", "c-three"):
        await client.get(f"/api/v1/conversations/{cid}", headers=alice.headers)
    await client.get("/no/such/path/alice-was-here")
    await client.get("/api/v1/namespaces/alice-ns/skills/alice-skill", headers=alice.headers)
    await client.get("/healthz")
    found = samples(await scrape(client, admin.headers))["skillhive_http_requests_total"]
    routes = {labels["route"] for labels, _ in found}
    assert "/api/v1/conversations/{conversation_id}" in routes
    assert "/api/v1/namespaces/{namespace}/skills/{name}" in routes
    assert "/healthz" in routes
    assert routes <= _allowed_label_values(app)["route"]  # documented templates only
    assert metrics.UNMATCHED_ROUTE in routes
    assert not any("c-one" in r or "alice" in r for r in routes)
    counted = sum(
        value
        for labels, value in found
        if labels["route"] == "/api/v1/conversations/{conversation_id}"
        and labels["status"] == "404"
    )
    assert counted >= 3


async def _user_turn(client: httpx.AsyncClient, account: Account, skill: str) -> None:
    archive = zips.skill(skill, description=f"Zebra facts about {skill}.")
    assert (await upload(client, account.headers, archive)).status_code == 201
    body = ghost(f"g-{skill}", skills=[skill])
    created = await client.post("/api/v1/namespaces/dev/ghosts", json=body, headers=account.headers)
    assert created.status_code == 201, created.text
    conversation = await client.post(
        "/api/v1/conversations", json={"ghost": f"dev/g-{skill}"}, headers=account.headers
    )
    cid = conversation.json()["id"]
    answer = await client.post(
        f"/api/v1/conversations/{cid}/messages",
        json={"content": f"zebra {skill} please"},
        headers=account.headers,
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["loaded_skills"], answer.json()  # the turn loaded the user's skill


def _allowed_label_values(app: FastAPI) -> dict[str, set[str]]:
    templates = set(app.openapi()["paths"]) | {getattr(r, "path", "") for r in app.routes}
    # the console's pages are routes too, left out of the API document
    templates |= {getattr(r, "path_format", "") for r in console_router(app.state.settings).routes}
    templates |= {metrics.UNMATCHED_ROUTE}
    return {
        "route": templates,
        "method": set(metrics.METHODS) | {"other"},
        "status": {str(s) for s in range(100, 600)},
        "outcome": set(metrics.TURN_OUTCOMES),
        "model": {"offline", metrics.CUSTOM_MODEL},
        "skill": {"true", "false"},
        "estimated": {"true", "false"},
        "scope": set(metrics.SKILL_SCOPES) | {"ghost", "skill"},
        "limit": set(metrics.SANDBOX_LIMITS) | {"other"} | set(LIMITS),  # every quota is fixed
        "result": {"resolved", "expired", "rejected"},
        "le": set(),  # histogram buckets: numbers, checked below
    }


async def test_label_values_stay_in_fixed_sets_however_many_users_and_skills_turn(
    app: FastAPI, client: httpx.AsyncClient, make_account: Any, admin: Account
) -> None:
    names = [f"tenant{i}" for i in range(6)]
    for i, name in enumerate(names):
        account = await make_account(name)
        await _user_turn(client, account, f"private-skill-{i}")
    found = samples(await scrape(client, admin.headers))
    allowed = _allowed_label_values(app)
    seen: dict[str, set[str]] = defaultdict(set)
    for name, series in found.items():
        if not name.startswith("skillhive_"):
            continue
        for labels, _ in series:
            for key, value in labels.items():
                seen[key].add(value)
    for key, values in seen.items():
        assert key in allowed, f"unexpected label {key}"
        if key == "le":
            assert all(v == "+Inf" or float(v) >= 0 for v in values)
            continue
        assert values <= allowed[key], (key, values - allowed[key])
    text = "\n".join(str(labels) for series in found.values() for labels, _ in series)
    for i, name in enumerate(names):
        assert name not in text and f"private-skill-{i}" not in text
    turns = {labels["outcome"]: value for labels, value in found["skillhive_turns_total"]}
    assert turns["ok"] >= len(names)
    loaded = {labels["scope"]: v for labels, v in found["skillhive_skills_loaded_total"]}
    assert loaded["user"] >= len(names)
    tokens = found["skillhive_model_prompt_tokens_total"]
    assert any(labels == {"model": "offline", "skill": "true"} and v > 0 for labels, v in tokens)
    assert found["skillhive_turn_time_to_first_token_seconds_count"][0][1] >= len(names)
    assert found["skillhive_db_pool_connections_in_use"]
    assert found["skillhive_browser_requests_pending"] == [({}, 0.0)]


async def test_a_separate_metrics_port_serves_them_and_the_api_route_steps_aside(
    settings: Settings, admin: Account
) -> None:
    port = closed_port()
    separate = settings.model_copy(update={"metrics_port": port})
    app = create_app(separate)

    async with running(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
            on_api = await c.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
            assert on_api.status_code == 404
        async with httpx.AsyncClient() as scraper:
            response = await scraper.get(f"http://127.0.0.1:{port}/metrics")
        assert response.status_code == 200
        assert "skillhive_turns_total" in response.text
    with pytest.raises(httpx.ConnectError):
        async with httpx.AsyncClient() as scraper:
            await scraper.get(f"http://127.0.0.1:{port}/metrics")
