"""The model factory, the real ChatOpenAI path against a scripted server, the offline model."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from chat_shell.agent import run_turn
from chat_shell.contracts import ModelSettings, TokenEvent, TurnRequest
from chat_shell.models import create_chat_model
from chat_shell.offline import OfflineChatModel
from chat_shell.ports import InMemoryFrontendChannel, InMemoryPackageSource
from tests.support.fakes import LOOPBACK, collect, done, of_type, request, skill
from tests.support.openai_server import FakeOpenAIServer, Reply, ToolCall


def server_settings(server: FakeOpenAIServer) -> ModelSettings:
    return ModelSettings(
        name="gpt-test",
        base_url=server.base_url,
        api_key=SecretStr("sk-test"),
        temperature=0.25,
        max_tokens=321,
    )


def test_the_factory_builds_a_streaming_openai_model_from_the_settings() -> None:
    settings = ModelSettings(
        name="gpt-x", base_url="http://127.0.0.1:9/v1", api_key=SecretStr("k"), temperature=0.5
    )

    model = create_chat_model(settings)

    assert isinstance(model, ChatOpenAI)
    assert (model.model_name, model.openai_api_base, model.temperature) == (
        "gpt-x",
        "http://127.0.0.1:9/v1",
        0.5,
    )
    assert model.streaming and model.stream_usage
    assert model.openai_api_key is not None and model.openai_api_key.get_secret_value() == "k"
    assert isinstance(create_chat_model(ModelSettings(name="offline")), OfflineChatModel)


async def test_a_turn_through_chat_openai_streams_tokens_and_runs_tool_calls(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.script(
        Reply(tool_calls=[ToolCall("load_skill", {"skill_name": "pdf"})], prompt_tokens=50),
        Reply(text="Here is the PDF you wanted.", chunk_chars=5, completion_tokens=9),
    )
    turn = request(
        "make a pdf",
        skills=[skill("pdf"), skill("docx")],
        model=server_settings(openai_server),
        egress=LOOPBACK,
    )

    events = [
        e
        async for e in run_turn(
            turn, package_source=InMemoryPackageSource(), frontend=InMemoryFrontendChannel()
        )
    ]

    assert [e.delta for e in of_type(events, "token")] == [
        "Here ",
        "is th",
        "e PDF",
        " you ",
        "wante",
        "d.",
    ]
    assert [(u.prompt_tokens, u.completion_tokens) for u in of_type(events, "usage")] == [
        (50, 7),
        (11, 9),
    ]
    final = done(events)
    assert final.text == "Here is the PDF you wanted."
    assert (final.usage.prompt_tokens, final.usage.completion_tokens) == (61, 16)
    assert [s.name for s in final.loaded_skills] == ["pdf"]

    first, second = openai_server.requests
    assert (first["model"], first["temperature"], first["stream"]) == ("gpt-test", 0.25, True)
    assert 321 in (first.get("max_tokens"), first.get("max_completion_tokens"))
    assert first["stream_options"] == {"include_usage": True}
    (load_skill,) = first["tools"]
    assert load_skill["function"]["parameters"]["properties"]["skill_name"]["enum"] == [
        "docx",
        "pdf",
    ]
    assert first["messages"][0]["role"] == "system"
    assert '<skill_instructions name="pdf"' not in first["messages"][0]["content"]
    assert '<skill_instructions name="pdf"' in second["messages"][0]["content"]
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
    assert second["messages"][2]["tool_calls"][0]["function"]["name"] == "load_skill"
    assert openai_server.headers[0]["authorization"] == "Bearer sk-test"


async def test_a_tool_call_whose_arguments_are_not_json_gets_its_error_and_another_try(
    openai_server: FakeOpenAIServer,
) -> None:
    # ChatOpenAI reports such a call as invalid (arguments merely cut short it completes as
    # partial JSON); the model gets the error and another call instead of an empty answer.
    not_json = ToolCall("load_skill", {}, id="call_bad", raw_arguments="skill_name=pdf")
    openai_server.script(
        Reply(tool_calls=[not_json]),
        Reply(tool_calls=[ToolCall("load_skill", {"skill_name": "pdf"})]),
        Reply(text="Done."),
    )
    turn = request(
        "make a pdf", skills=[skill("pdf")], model=server_settings(openai_server), egress=LOOPBACK
    )

    events = [
        e
        async for e in run_turn(
            turn, package_source=InMemoryPackageSource(), frontend=InMemoryFrontendChannel()
        )
    ]

    final = done(events)
    assert final.text == "Done." and [s.name for s in final.loaded_skills] == ["pdf"]
    first, retry, last = openai_server.requests
    assert [m["role"] for m in retry["messages"]] == ["system", "user", "assistant", "tool"]
    error = retry["messages"][3]
    assert error["tool_call_id"] == "call_bad" and "malformed" in error["content"]
    assert retry["messages"][2]["tool_calls"][0]["id"] == "call_bad"
    assert [m["role"] for m in last["messages"]][-2:] == ["assistant", "tool"]


async def test_tokens_reach_the_caller_while_the_answer_is_still_streaming(
    openai_server: FakeOpenAIServer,
) -> None:
    gate = threading.Event()
    reply = Reply(text="first second third", chunk_chars=6, gate=gate)
    openai_server.script(reply)
    turn = request(model=server_settings(openai_server), egress=LOOPBACK)
    tokens: list[str] = []

    async for event in run_turn(
        turn, package_source=InMemoryPackageSource(), frontend=InMemoryFrontendChannel()
    ):
        if isinstance(event, TokenEvent):
            tokens.append(event.delta)
            gate.set()  # only now may the server send the rest

    assert tokens == ["first ", "second", " third"]
    assert not reply.gate_timed_out


async def test_an_api_error_ends_the_turn_with_its_status_and_the_body_only_in_the_log(
    openai_server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "internal: db password hunter2 at 10.1.2.3"
    openai_server.script(Reply(status=400, text=secret))

    with caplog.at_level(logging.WARNING):
        events = [
            e
            async for e in run_turn(
                request(model=server_settings(openai_server), egress=LOOPBACK),
                package_source=InMemoryPackageSource(),
                frontend=InMemoryFrontendChannel(),
            )
        ]

    error = events[-1]
    assert error.type == "error" and error.code == "model_error"
    assert error.message == "the model endpoint answered HTTP 400"
    assert "hunter2" in caplog.text  # the operator can still see it


def offline_turn(message: str, **fields: object) -> TurnRequest:
    skills = [
        skill("mermaid-diagram", "Draw flowcharts and sequence diagrams."),
        skill("pdf", "Read and write PDF files."),
    ]
    return request(message, skills=skills, **fields)


async def test_the_offline_model_loads_the_matching_skill_then_says_what_it_is() -> None:
    events = await collect(offline_turn("Please draw a flowchart of our login"), OfflineChatModel())

    assert [e.name for e in of_type(events, "skill_loaded")] == ["mermaid-diagram"]
    final = done(events)
    assert "Skillhive's offline model" in final.text
    assert "mermaid-diagram" in final.text
    assert "".join(e.delta for e in of_type(events, "token")) == final.text


async def test_the_offline_model_answers_plainly_when_no_skill_matches() -> None:
    events = await collect(offline_turn("Good morning!"), OfflineChatModel())

    assert of_type(events, "tool_start") == []
    assert "Skillhive's offline model" in done(events).text


async def test_the_offline_model_does_not_load_an_active_skill_again() -> None:
    turn = offline_turn("convert this pdf", preload_skills=["pdf"])

    events = await collect(turn, OfflineChatModel())

    assert of_type(events, "tool_start") == [] and "Active skills: pdf" in done(events).text


async def test_the_offline_model_is_deterministic() -> None:
    first, second = await asyncio.gather(
        collect(offline_turn("a diagram please"), OfflineChatModel()),
        collect(offline_turn("a diagram please"), OfflineChatModel()),
    )

    assert done(first).text == done(second).text
    assert [e.type for e in first] == [e.type for e in second]
