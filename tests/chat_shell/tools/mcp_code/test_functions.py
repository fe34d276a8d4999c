"""MCP tools as Python functions: safe names, bounded search, a module that always compiles."""

from __future__ import annotations

from typing import Any

from langchain_core.tools import StructuredTool

from chat_shell.tools.mcp_code._functions import SEARCH_LIMIT, as_functions, search
from chat_shell.tools.mcp_code._module import render_module


async def _noop(**kwargs: Any) -> str:
    return ""


def tool(name: str, description: str = "", **properties: Any) -> StructuredTool:
    return StructuredTool(
        name=name,
        description=description or f"The {name} tool.\nMore lines the model never sees.",
        args_schema={"type": "object", "properties": properties, "required": list(properties)},
        coroutine=_noop,
    )


def test_tool_names_become_unique_identifiers() -> None:
    tools = [tool("get-sum"), tool("get_sum"), tool("class"), tool("9lives"), tool("TOOLS")]
    names = [f.function for f in as_functions((t, "s") for t in tools)]
    assert names == ["get_sum", "get_sum_2", "t_class", "t_9lives", "TOOLS_2"]


def test_a_generated_module_compiles_with_hostile_names_and_descriptions() -> None:
    hostile = tool("x", description='"""; import os; os.system("boom") #', **{"a-b": {}})
    plain = tool("echo", message={"type": "string"})
    source = render_module(as_functions([(hostile, "s"), (plain, "s")]), socket="/s", max_answer=9)
    namespace: dict[str, Any] = {}
    exec(compile(source, "mcp_tools.py", "exec"), namespace)  # noqa: S102 - the point of the test
    assert set(namespace["TOOLS"]) == {"x", "echo"}
    assert "boom" in namespace["x"].__doc__  # a plain string, never code
    assert namespace["echo"].__code__.co_kwonlyargcount == 1  # echo(*, message)


def test_search_returns_one_liners_and_schemas_only_when_asked() -> None:
    tools = [tool(f"weather_{i}", f"Weather report number {i}.", city={}) for i in range(30)]
    tools.append(tool("convert_currency", "Convert money between currencies.", amount={}))
    functions = as_functions((t, "srv") for t in tools)

    found = search(functions, "convert money")
    assert found[0] == {
        "function": "convert_currency",
        "server": "srv",
        "description": "Convert money between currencies.",
    }
    assert len(search(functions, "weather report")) == SEARCH_LIMIT
    assert all("input_schema" not in f for f in search(functions, "weather report"))
    detailed = search(functions, "weather report", detail=True)
    assert [("input_schema" in f) for f in detailed[:4]] == [True, True, True, False]
    exact = search(functions, "weather_17")
    assert exact[0]["function"] == "weather_17" and "city" in exact[0]["input_schema"]["properties"]
