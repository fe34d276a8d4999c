"""A tenant's model endpoint is reached only through the egress policy; the operator's is not."""

from __future__ import annotations

import logging

import pytest
from pydantic import SecretStr

from chat_shell.agent import run_turn
from chat_shell.contracts import ErrorEvent, ModelSettings, TurnRequest
from chat_shell.net import EgressPolicy
from chat_shell.ports import InMemoryFrontendChannel, InMemoryPackageSource
from tests.support.fakes import LOOPBACK, request
from tests.support.listener import Listener, http_response


def endpoint(url: str, *, trusted: bool = False) -> ModelSettings:
    return ModelSettings(name="gpt-x", base_url=url, api_key=SecretStr("k"), trusted=trusted)


async def final_error(turn: TurnRequest) -> ErrorEvent:
    events = [
        e
        async for e in run_turn(
            turn, package_source=InMemoryPackageSource(), frontend=InMemoryFrontendChannel()
        )
    ]
    assert isinstance(events[-1], ErrorEvent), events[-1]
    return events[-1]


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_a_tenant_endpoint_on_loopback_is_refused_without_a_connection(host: str) -> None:
    async with Listener() as listener:
        error = await final_error(request(model=endpoint(listener.url("/v1", host=host))))
    assert error.code == "egress_forbidden"
    assert str(listener.port) not in error.message
    assert listener.connections == 0


async def test_an_allow_entry_lets_a_tenant_endpoint_connect() -> None:
    async with Listener(http_response(500, "no")) as listener:
        error = await final_error(request(model=endpoint(listener.url("/v1")), egress=LOOPBACK))
    assert error.code == "model_error"
    assert listener.connections == 1  # and only once: no retries for a tenant endpoint


async def test_the_operators_endpoint_bypasses_the_policy() -> None:
    async with Listener(http_response(400, "no")) as listener:
        turn = request(model=endpoint(listener.url("/v1"), trusted=True), egress=EgressPolicy())
        error = await final_error(turn)
    assert error.code == "model_error" and error.message == "the model endpoint answered HTTP 400"
    assert listener.connections >= 1


async def test_an_operator_url_never_appears_in_the_error() -> None:
    async with Listener(http_response(401, "bad key")) as listener:
        url = listener.url("/v1?api-key=operator-secret")
        error = await final_error(request(model=endpoint(url, trusted=True)))
    assert "operator-secret" not in error.message and str(listener.port) not in error.message


async def test_a_key_echoed_in_an_error_body_is_masked_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    key = "sk-echoed-key-123"
    body = '{"error": {"message": "invalid key ' + key + '"}}'
    async with Listener(http_response(401, body, {"Content-Type": "application/json"})) as listener:
        settings = ModelSettings(
            name="gpt-x", base_url=listener.url("/v1"), api_key=SecretStr(key), trusted=True
        )
        with caplog.at_level(logging.WARNING):
            error = await final_error(request(model=settings))
    assert error.message == "the model endpoint answered HTTP 401"
    assert "invalid key ***" in caplog.text and key not in caplog.text
