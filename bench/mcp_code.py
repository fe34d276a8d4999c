"""What MCP code mode saves: prompt tokens to finish one task, `code` against `direct` mode.

    python -m bench.mcp_code

A bench-made MCP server (bench/_mcp_server.py, stdio) offers 200 tools with real schemas. The
task needs three of them: read an order, check the stock of its item, create the shipment.
A scripted model drives both modes the same way, reading each answer to write the next step:

- *direct*: every schema is in every prompt; one model call per tool, then the answer;
- *code*: the model sees list_mcp_servers, search_mcp_tools and execute_code; it searches
  (schemas for the best matches), writes one program calling the three functions in the
  sandbox, then answers.

Prompt tokens are cl100k tokens of what the model received on every call (system prompt,
messages, tool calls, tool schemas). Target: code_ratio = code / direct <= 0.10. Needs bwrap.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from bench.tokens import prompt_tokens
from chat_shell.agent import run_turn
from chat_shell.contracts import DoneEvent, Event, TurnRequest
from chat_shell.offline import ScriptedChatModel
from chat_shell.ports import InMemoryFrontendChannel, InMemoryPackageSource
from chat_shell.sandbox import BubblewrapSandbox
from chat_shell.skills.registry import ProviderRegistry
from chat_shell.tools.mcp import parse_mcp_server
from chat_shell.tools.sandbox import SandboxAccess

SERVER = Path(__file__).with_name("_mcp_server.py")
TASK = "Ship order ord-1042 from warehouse AMS-1 if there is enough stock."
ANSWER = "Shipped: {tracking}."

CODE = """\
from mcp_tools import orders_get, inventory_check, shipping_create
order = orders_get(id="ord-1042")
stock = inventory_check(sku=order["sku"], warehouse="AMS-1")
if stock["available"] >= order["quantity"]:
    shipment = shipping_create(order_id=order["id"], sku=order["sku"],
                               quantity=order["quantity"], warehouse="AMS-1")
    print(shipment["tracking"])
"""

Step = Callable[[list[BaseMessage]], AIMessage]
_ids = iter(range(1_000_000))


def _call(name: str, **args: object) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"b{next(_ids)}"}])


def _last(messages: list[BaseMessage]) -> str:
    last = messages[-1]
    assert isinstance(last, ToolMessage) and last.status != "error", last.text
    return last.text


def direct_script() -> list[Step]:
    def order(_: list[BaseMessage]) -> AIMessage:
        return _call("orders_get", id="ord-1042")

    def stock(messages: list[BaseMessage]) -> AIMessage:
        found = json.loads(_last(messages))
        return _call("inventory_check", sku=found["sku"], warehouse="AMS-1")

    def ship(messages: list[BaseMessage]) -> AIMessage:
        ordered = json.loads(next(m.text for m in messages if m.name == "orders_get"))
        assert json.loads(_last(messages))["available"] >= ordered["quantity"]
        return _call(
            "shipping_create",
            order_id=ordered["id"],
            sku=ordered["sku"],
            quantity=ordered["quantity"],
            warehouse="AMS-1",
        )

    def answer(messages: list[BaseMessage]) -> AIMessage:
        return AIMessage(ANSWER.format(tracking=json.loads(_last(messages))["tracking"]))

    return [order, stock, ship, answer]


def code_script() -> list[Step]:
    def find(_: list[BaseMessage]) -> AIMessage:
        return _call(
            "search_mcp_tools", query="orders get inventory check shipping create", detail=True
        )

    def execute(messages: list[BaseMessage]) -> AIMessage:
        names = {f["function"] for f in json.loads(_last(messages))["functions"]}
        assert {"orders_get", "inventory_check", "shipping_create"} <= names, names
        return _call("execute_code", code=CODE)

    def answer(messages: list[BaseMessage]) -> AIMessage:
        ran = json.loads(_last(messages))
        assert ran["exit_code"] == 0, ran["stderr"]
        return AIMessage(ANSWER.format(tracking=ran["stdout"].strip()))

    return [find, execute, answer]


async def run(mode: str, sandbox: BubblewrapSandbox) -> tuple[int, str]:
    model = ScriptedChatModel(script=direct_script() if mode == "direct" else code_script())
    server = parse_mcp_server({"command": sys.executable, "args": [str(SERVER)]}, trusted=True)
    request = TurnRequest(
        conversation_id=f"bench-{mode}",
        user_id=1,
        user_message=TASK,
        mcp_servers={"business": server},
        mcp_tool_mode="code" if mode == "code" else "direct",
    )
    events: list[Event] = [
        event
        async for event in run_turn(
            request,
            package_source=InMemoryPackageSource(),
            frontend=InMemoryFrontendChannel(),
            model=model,
            providers=ProviderRegistry(),
            sandbox=SandboxAccess(sandbox),
        )
    ]
    final = events[-1]
    assert isinstance(final, DoneEvent), final
    if mode == "direct":
        assert len(model.calls[0].tools) == 200, len(model.calls[0].tools)
    return prompt_tokens(model.calls), final.text


async def main() -> None:
    sandbox = BubblewrapSandbox()
    try:
        found = await sandbox.availability()
        if not found.available:
            raise SystemExit(f"bench.mcp_code needs the sandbox: {found.reason}")
        direct, direct_answer = await run("direct", sandbox)
        code, code_answer = await run("code", sandbox)
    finally:
        sandbox.close()
    assert direct_answer == code_answer, (direct_answer, code_answer)
    print(f"task: {TASK}\nanswer (both modes): {code_answer}")
    print(
        f"RESULT mcp_code code_ratio={code / direct:.4f} direct_tokens={direct} code_tokens={code}"
    )


if __name__ == "__main__":
    asyncio.run(main())
