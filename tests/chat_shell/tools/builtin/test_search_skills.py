"""A compact catalog: search_skills finds the Ghost's other skills, load_skill takes any name the
directory knows (a string, no enum), and what the model receives stays small."""

from __future__ import annotations

from chat_shell.agent import run_turn
from chat_shell.contracts import CatalogEntry, Event, SkillMatch, SkillSpec, TurnRequest
from chat_shell.ports import InMemoryFrontendChannel, InMemoryPackageSource, InMemorySkillDirectory
from chat_shell.skills.registry import ProviderRegistry
from tests.support.fakes import FakeToolChatModel, call, done, load, request, say, skill

SKILLS = [
    skill("tides", "Predict the tides of a harbour."),
    skill("avalanche", "Rate avalanche danger on a snowy slope."),
    skill("charts", "Draw charts of numbers."),
]


class CountingDirectory(InMemorySkillDirectory):
    def __init__(self, skills: list[SkillSpec]) -> None:
        super().__init__(skills)
        self.fetched: list[str] = []
        self.queries: list[tuple[str, int]] = []

    async def get(self, name: str) -> SkillSpec | None:
        self.fetched.append(name)
        return await super().get(name)

    async def search(self, query: str, limit: int) -> list[SkillMatch]:
        self.queries.append((query, limit))
        return await super().search(query, limit)


def compact(**fields: object) -> TurnRequest:
    return request(
        "is the slope safe?",
        catalog=[CatalogEntry(name="tides", description="Predict the tides of a harbour.")],
        skill_search=True,
        **fields,
    )


async def run(turn: TurnRequest, model: FakeToolChatModel, directory: object) -> list[Event]:
    return [
        e
        async for e in run_turn(
            turn,
            package_source=InMemoryPackageSource(),
            frontend=InMemoryFrontendChannel(),
            model=model,
            providers=ProviderRegistry(),
            skills=directory,  # type: ignore[arg-type]
        )
    ]


async def test_search_results_can_be_loaded_though_the_catalog_did_not_list_them() -> None:
    directory = CountingDirectory(SKILLS)
    model = FakeToolChatModel(
        script=[call("search_skills", query="avalanche slope"), load("avalanche"), say("Safe.")]
    )
    events = await run(compact(), model, directory)
    assert [s.name for s in done(events).loaded_skills] == ["avalanche"]
    first, second, third = model.calls
    assert "<name>tides</name>" in first.system and "avalanche" not in first.system
    assert first.tool_names == ["load_skill", "search_skills"]
    assert "enum" not in first.tool_schema("load_skill")["parameters"]["properties"]["skill_name"]
    result = second.messages[-1].text
    assert "avalanche: Rate avalanche danger" in result and "load_skill" in result
    assert '<skill_instructions name="avalanche"' in third.system
    assert directory.queries == [("avalanche slope", 5)]
    assert directory.fetched == ["avalanche"]


async def test_an_unknown_name_is_an_error_that_points_to_search() -> None:
    model = FakeToolChatModel(script=[load("volcano"), say("None.")])
    events = await run(compact(), model, CountingDirectory(SKILLS))
    record = done(events).tool_calls[0]
    assert record.error and "search_skills" in record.result
    assert done(events).loaded_skills == []


async def test_a_search_that_finds_nothing_says_to_go_on_without_a_skill() -> None:
    model = FakeToolChatModel(script=[call("search_skills", query="weather", limit=3), say("Ok.")])
    events = await run(compact(), model, CountingDirectory(SKILLS))
    assert "No skill fits 'weather'" in done(events).tool_calls[0].result


async def test_a_full_catalog_without_bodies_fetches_a_skill_only_when_it_is_loaded() -> None:
    directory = CountingDirectory(SKILLS)
    catalog = [CatalogEntry(name=s.name, description=s.description) for s in SKILLS]
    model = FakeToolChatModel(script=[load("charts"), say("Drawn.")])
    events = await run(request("plot this", catalog=catalog), model, directory)
    assert [s.name for s in done(events).loaded_skills] == ["charts"]
    first = model.calls[0]
    enum = first.tool_schema("load_skill")["parameters"]["properties"]["skill_name"]["enum"]
    assert enum == ["avalanche", "charts", "tides"]
    assert "search_skills" not in first.tool_names
    assert directory.fetched == ["charts"]


async def test_a_full_catalog_refuses_names_it_does_not_list_without_asking_the_directory() -> None:
    directory = CountingDirectory(SKILLS)
    catalog = [CatalogEntry(name="tides", description="Predict the tides.")]
    model = FakeToolChatModel(script=[load("charts"), say("No.")])
    events = await run(request("plot", catalog=catalog), model, directory)
    assert done(events).tool_calls[0].error and directory.fetched == []


async def test_skills_given_in_full_start_active_without_the_directory() -> None:
    directory = CountingDirectory(SKILLS)
    turn = compact(skills=[SKILLS[1]], preload_skills=["avalanche"])
    model = FakeToolChatModel(script=[say("Safe.")])
    events = await run(turn, model, directory)
    assert '<skill_instructions name="avalanche"' in model.calls[0].system
    assert [s.name for s in done(events).loaded_skills] == ["avalanche"]
    assert directory.fetched == []
