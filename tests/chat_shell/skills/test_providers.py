"""Tool providers loaded from skill packages, through the whole engine."""

from __future__ import annotations

import sys
from pathlib import Path

from langchain_core.messages import ToolMessage

from chat_shell.contracts import ProviderRef, SkillSpec, ToolDeclaration
from chat_shell.ports import InMemoryFrontendChannel, InMemoryPackageSource
from chat_shell.skills import ProviderRegistry
from tests.support.fakes import (
    FakeToolChatModel,
    call,
    collect,
    done,
    load,
    of_type,
    request,
    say,
    skill,
    skill_zip,
)

PROVIDER = """
from langchain_core.tools import StructuredTool

from chat_shell.skills import SkillToolProvider
from .helpers import greeting


class GreetProvider(SkillToolProvider):
    provider_name = "greeter"
    supported_tools = ("greet",)

    def create_tool(self, tool_name, context, config):
        async def greet(name: str) -> str:
            await context.emit_to_frontend("skill:request", {"greet": name})
            return greeting(config, context, name)

        return StructuredTool.from_function(coroutine=greet, name=tool_name, description="Greet.")
"""


def helpers(version: str) -> str:
    return (
        f"VERSION = {version!r}\n"
        "def greeting(config, context, name):\n"
        "    files = ','.join(sorted(context.files))\n"
        "    return f\"{config['salutation']} {name} from {VERSION} for user {context.user_id}"
        ' in {context.skill_name} ({files})"\n'
    )


def package(version: str = "v1", provider: str = PROVIDER) -> bytes:
    return skill_zip(
        "greeter", {"provider.py": provider, "helpers.py": helpers(version), "notes/a.txt": "n"}
    )


def greeter(sha256: str, *, public: bool = True, class_name: str = "GreetProvider") -> SkillSpec:
    return skill(
        "greeter",
        public=public,
        sha256=sha256,
        provider=ProviderRef(module="provider", **{"class": class_name}),
        config={"salutation": "Hi", "unused": 1},
        tools=[ToolDeclaration(name="greet", provider="greeter", config={"salutation": "Hello"})],
    )


def greet_turn() -> FakeToolChatModel:
    return FakeToolChatModel(script=[load("greeter"), call("greet", name="Ann"), say("done")])


def tool_texts(model: FakeToolChatModel) -> list[str]:
    return [m.text for m in model.calls[-1].messages if isinstance(m, ToolMessage)]


async def test_a_public_package_provider_loads_and_its_tool_runs() -> None:
    source, frontend = InMemoryPackageSource(), InMemoryFrontendChannel()
    sha = source.add(package())
    model = greet_turn()

    events = await collect(request(skills=[greeter(sha)]), model, source=source, frontend=frontend)

    # The declaration's config wins over the skill's; the context carries user, skill, files.
    expected = (
        "Hello Ann from v1 for user 7 in greeter (SKILL.md,helpers.py,notes/a.txt,provider.py)"
    )
    assert tool_texts(model)[-1] == expected
    assert model.calls[1].tool_names == ["load_skill", "greet"]
    assert frontend.messages[0].event == "skill:request"
    assert frontend.messages[0].conversation_id == "conv-1"
    assert of_type(events, "skill_error") == [] and done(events).text == "done"


async def test_a_new_hash_of_the_same_skill_swaps_the_tool_and_releases_the_old_code() -> None:
    source, registry = InMemoryPackageSource(), ProviderRegistry()
    old, new = source.add(package("v1")), source.add(package("v2"))
    first, second = greet_turn(), greet_turn()

    await collect(request(skills=[greeter(old)]), first, source=source, providers=registry)
    await collect(request(skills=[greeter(new)]), second, source=source, providers=registry)

    assert "from v1" in tool_texts(first)[-1] and "from v2" in tool_texts(second)[-1]
    assert registry.loaded_hashes() == {new}
    assert not [name for name in sys.modules if old[:16] in name]
    assert [name for name in sys.modules if new[:16] in name]


CANARY_PROVIDER = """
import pathlib
pathlib.Path({path!r}).write_text("imported")
from chat_shell.skills import SkillToolProvider

class GreetProvider(SkillToolProvider):
    provider_name = "greeter"
    supported_tools = ("greet",)

    def create_tool(self, tool_name, context, config):
        raise NotImplementedError
"""


async def test_a_non_public_package_is_never_imported(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    source = InMemoryPackageSource()
    sha = source.add(package(provider=CANARY_PROVIDER.format(path=str(canary))))
    model = FakeToolChatModel(script=[load("greeter"), say("done")])

    events = await collect(request(skills=[greeter(sha, public=False)]), model, source=source)

    assert not canary.exists()
    (error,) = of_type(events, "skill_error")
    assert (error.skill, error.code) == ("greeter", "provider_not_allowed")
    # the instructions still load
    assert '<skill_instructions name="greeter"' in model.calls[-1].system
    assert model.calls[-1].tool_names == ["load_skill"] and done(events).text == "done"


async def test_the_same_package_marked_public_is_imported(tmp_path: Path) -> None:
    # The control for the canary test above: the canary does fire when code may run.
    canary = tmp_path / "canary"
    source = InMemoryPackageSource()
    sha = source.add(package(provider=CANARY_PROVIDER.format(path=str(canary))))
    model = FakeToolChatModel(script=[load("greeter"), say("done")])

    events = await collect(request(skills=[greeter(sha, public=True)]), model, source=source)

    assert canary.read_text() == "imported"
    assert [e.code for e in of_type(events, "skill_error")] == ["tool_create_failed"]


RAISING_PROVIDER = """
import pathlib
with pathlib.Path({path!r}).open("a") as runs:
    runs.write("run\\n")
raise RuntimeError("provider exploded on import")
"""


async def test_a_provider_raising_on_import_is_reported_and_the_turn_continues(
    tmp_path: Path,
) -> None:
    runs = tmp_path / "runs"
    source, registry = InMemoryPackageSource(), ProviderRegistry()
    sha = source.add(package(provider=RAISING_PROVIDER.format(path=str(runs))))

    for _ in range(2):
        model = FakeToolChatModel(script=[load("greeter"), call("greet", name="x"), say("done")])
        events = await collect(
            request(skills=[greeter(sha)]), model, source=source, providers=registry
        )
        (error,) = of_type(events, "skill_error")
        assert error.code == "provider_load_failed"
        assert "RuntimeError: provider exploded on import" in error.message
        assert "not available" in tool_texts(model)[-1]
        assert done(events).text == "done"

    assert runs.read_text() == "run\n"  # a broken package's code does not run again every turn
    assert not [name for name in sys.modules if sha[:16] in name]


async def test_a_provider_class_that_is_not_a_skill_tool_provider_is_rejected() -> None:
    source = InMemoryPackageSource()
    sha = source.add(package())
    model = FakeToolChatModel(script=[load("greeter"), say("done")])

    events = await collect(
        request(skills=[greeter(sha, class_name="greeting")]), model, source=source
    )

    (error,) = of_type(events, "skill_error")
    assert error.code == "provider_load_failed" and "not a SkillToolProvider" in error.message


async def test_a_package_whose_bytes_do_not_match_its_hash_is_rejected() -> None:
    source = InMemoryPackageSource()
    sha = source.add(package())
    source._packages[sha] = package("tampered")  # what a corrupted store would hand out
    model = FakeToolChatModel(script=[load("greeter"), say("done")])

    events = await collect(request(skills=[greeter(sha)]), model, source=source)

    (error,) = of_type(events, "skill_error")
    assert error.code == "provider_load_failed" and "sha256" in error.message


async def test_a_declaration_naming_no_known_provider_is_reported() -> None:
    spec = skill("plain", tools=[ToolDeclaration(name="draw", provider="mermaid")])
    model = FakeToolChatModel(script=[load("plain"), say("done")])

    events = await collect(request(skills=[spec]), model)

    (error,) = of_type(events, "skill_error")
    assert (error.code, error.skill) == ("provider_unknown", "plain")
    assert "'mermaid'" in error.message
