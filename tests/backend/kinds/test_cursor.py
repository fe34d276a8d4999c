"""`continue` tokens are client input: anything malformed or out of range is 422 `invalid_cursor`,
through every paginated route, on both databases; never a 500 from the driver."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest

from backend.errors import InvalidRequest
from backend.kinds import cursor
from tests.support.accounts import Account
from tests.support.errors import assert_error


def token(raw: str | bytes) -> str:
    data = raw.encode() if isinstance(raw, str) else raw
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def values(*items: Any) -> str:
    return token(json.dumps(list(items)))


BAD_PAIRS = {  # for name/id tokens (skills, ghosts)
    "id 2**63": values("a", 2**63),
    "id past INTEGER": values("a", 2**31),
    "negative id": values("a", -1),
    "id true": values("a", True),
    "float id": values("a", 1.5),
    "string id": values("a", "1"),
    "5000-digit id": token('["a", ' + "9" * 5000 + "]"),
    "name not a string": values(1, 1),
    "NUL in name": values("a\x00b", 1),
    "name too long": values("a" * 2000, 1),
    "three values": values("a", 1, 2),
    "an object": token('{"a": 1}'),
    "NaN": token('["a", NaN]'),
    "deep nesting": token("[" * 1500 + "]" * 1500),
    "not base64": "!!!not-base64!!!",
    "not UTF-8": token(b'["\xff", 1]'),
    "not JSON": token("hello"),
    "huge token": "A" * 5000,
}
BAD_MOMENTS = {  # for time/key tokens (conversations)
    "naive time": values("2024-01-01T00:00:00", "k"),
    "not a time": values("yesterday", "k"),
    "time not a string": values(5, "k"),
    "year 1 east of UTC": values("0001-01-01T00:00:00+01:00", "k"),
    "NUL in key": values("2024-01-01T00:00:00+00:00", "k\x00"),
    "key not a string": values("2024-01-01T00:00:00+00:00", 7),
    "id 2**63": values("a", 2**63),
    "not base64": "%%%",
}
BAD_IDS = {  # for message pages: bare ids
    "2**63": str(2**63),
    "past INTEGER": str(2**31),
    "5000 digits": "9" * 5000,
    "negative": "-1",
    "superscript digit": "\u00b2",
    "fraction": "1.5",
    "spaces": " 1",
    "empty": "",
    "base64 pair": values("a", 1),
}


@pytest.mark.parametrize("bad", BAD_PAIRS.values(), ids=BAD_PAIRS.keys())
def test_a_malformed_name_and_id_token_is_invalid_cursor(bad: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        cursor.decode(bad)
    assert (info.value.code, info.value.status_code) == ("invalid_cursor", 422)


@pytest.mark.parametrize("bad", BAD_MOMENTS.values(), ids=BAD_MOMENTS.keys())
def test_a_malformed_time_and_key_token_is_invalid_cursor(bad: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        cursor.decode_pair(bad)
    assert info.value.code == "invalid_cursor"


@pytest.mark.parametrize("bad", BAD_IDS.values(), ids=BAD_IDS.keys())
def test_a_malformed_message_id_token_is_invalid_cursor(bad: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        cursor.decode_id(bad)
    assert info.value.code == "invalid_cursor"


def test_tokens_round_trip_up_to_the_largest_id() -> None:
    assert cursor.decode(cursor.encode("name", cursor.MAX_ID)) == ("name", cursor.MAX_ID)
    assert cursor.decode_id(cursor.encode_id(cursor.MAX_ID)) == cursor.MAX_ID
    assert cursor.decode_id("0") == 0


LISTS = [
    "/api/v1/namespaces/dev/skills",
    "/api/v1/public/skills",
    "/api/v1/namespaces/dev/ghosts",
    "/api/v1/public/ghosts",
]


async def test_every_paginated_route_answers_bad_tokens_with_422(
    client: httpx.AsyncClient, alice: Account
) -> None:
    cases = [(path, bad) for path in LISTS for bad in BAD_PAIRS.values()]
    cases += [("/api/v1/conversations", bad) for bad in BAD_MOMENTS.values()]
    conversation = await _conversation(client, alice)
    messages = f"/api/v1/conversations/{conversation}/messages"
    cases += [(messages, bad) for bad in BAD_IDS.values()]
    for path, bad in cases:
        response = await client.get(path, params={"continue": bad}, headers=alice.headers)
        assert_error(response, 422, "invalid_cursor")


async def test_the_largest_ids_are_valid_tokens_that_find_nothing_after_them(
    client: httpx.AsyncClient, alice: Account
) -> None:
    for path in LISTS:
        last = cursor.encode("\uffff" * 10, cursor.MAX_ID)
        page = await client.get(path, params={"continue": last}, headers=alice.headers)
        assert page.json()["items"] == [], page.text
    conversation = await _conversation(client, alice)
    page = await client.get(
        f"/api/v1/conversations/{conversation}/messages",
        params={"continue": str(cursor.MAX_ID)},
        headers=alice.headers,
    )
    assert page.json() == {"items": [], "continue": None}


async def _conversation(client: httpx.AsyncClient, account: Account) -> str:
    ghost = {
        "apiVersion": "skillhive.io/v1",
        "kind": "Ghost",
        "metadata": {"name": "pager"},
        "spec": {"systemPrompt": "Hi."},
    }
    made = await client.post("/api/v1/namespaces/dev/ghosts", json=ghost, headers=account.headers)
    assert made.status_code == 201, made.text
    created = await client.post(
        "/api/v1/conversations", json={"ghost": "dev/pager"}, headers=account.headers
    )
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


@pytest.mark.parametrize("bad", [str(cursor.MAX_ID + 1), str(2**63), "9" * 5000, "-1"])
async def test_out_of_range_path_ids_are_422_not_a_driver_error(
    client: httpx.AsyncClient, admin: Account, bad: str
) -> None:
    revoked = await client.delete(f"/api/v1/tokens/{bad}", headers=admin.headers)
    assert_error(revoked, 422, "invalid_request")
    patched = await client.patch(
        f"/api/v1/users/{bad}", json={"is_active": True}, headers=admin.headers
    )
    assert_error(patched, 422, "invalid_request")
    missing = await client.delete(f"/api/v1/tokens/{cursor.MAX_ID}", headers=admin.headers)
    assert_error(missing, 404, "token_not_found")
