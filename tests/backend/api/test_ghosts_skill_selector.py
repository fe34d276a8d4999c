"""Ghost fields of issue 12: skillSelector, includePublicSkills and catalogBudgetTokens."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.support.accounts import Account
from tests.support.ghosts import create, ghost


async def test_a_selector_public_skills_and_a_budget_are_stored_as_given(
    client: httpx.AsyncClient, alice: Account
) -> None:
    selector = {
        "matchLabels": {"team": "data"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["1", "2"]},
            {"key": "legacy", "operator": "DoesNotExist"},
        ],
    }
    body = ghost(
        "picker", skillSelector=selector, includePublicSkills=True, catalogBudgetTokens=2000
    )
    response = await create(client, alice.headers, body)
    assert response.status_code == 201, response.text
    spec = response.json()["spec"]
    assert spec["skillSelector"]["matchLabels"] == {"team": "data"}
    assert spec["skillSelector"]["matchExpressions"][0] == selector["matchExpressions"][0]
    assert spec["includePublicSkills"] is True and spec["catalogBudgetTokens"] == 2000


async def test_selected_skills_need_not_exist_or_be_listed(
    client: httpx.AsyncClient, alice: Account
) -> None:
    response = await create(client, alice.headers, ghost("empty", skillSelector={}))
    assert response.status_code == 201, response.text


@pytest.mark.parametrize(
    "spec",
    [
        {"skillSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}},
        {
            "skillSelector": {
                "matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]
            }
        },
        {
            "skillSelector": {
                "matchExpressions": [{"key": "a", "operator": "Near", "values": ["x"]}]
            }
        },
        {"skillSelector": {"matchLabels": {"": "x"}}},
        {"skillSelector": {"matchLabels": {"a": "x" * 254}}},
        {"skillSelector": {"labels": {"a": "b"}}},
        # NUL reached the selection's SQL (a driver error on PostgreSQL: every turn failed)
        {"skillSelector": {"matchLabels": {"a\x00": "b"}}},
        {"skillSelector": {"matchLabels": {"a": "b\x00"}}},
        {
            "skillSelector": {
                "matchExpressions": [{"key": "a", "operator": "In", "values": ["\x00"]}]
            }
        },
        {"skillSelector": {"matchLabels": {"a b": "c"}}},
        {"catalogBudgetTokens": -1},
        {"includePublicSkills": "sometimes"},
    ],
)
async def test_a_malformed_selection_is_refused(
    client: httpx.AsyncClient, alice: Account, spec: dict[str, Any]
) -> None:
    response = await create(client, alice.headers, ghost("bad", **spec))
    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == "invalid_ghost"
