"""A bench-made MCP server with 200 tools with real schemas (stdio), for bench.mcp_code.

python -m bench._mcp_server      (or run this file with the project's python)

Twenty business domains times ten actions, each tool with typed, described parameters. Three
of them answer for real (the task of bench.mcp_code); the others echo their arguments.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.types import TextContent, Tool

DOMAINS = (
    "orders", "inventory", "shipping", "billing", "customers", "catalog", "pricing", "returns",
    "support", "marketing", "payroll", "hiring", "contracts", "assets", "fleet", "facilities",
    "travel", "expenses", "compliance", "analytics",
)  # fmt: skip
ACTIONS = {
    "get": "Fetch one {d} record by its id, with every field the {d} service stores.",
    "list": "List {d} records page by page, newest first, filtered by status and owner.",
    "create": "Create a {d} record; returns the new id. Validates required fields first.",
    "update": "Update fields of a {d} record; unknown fields are rejected.",
    "delete": "Delete a {d} record (soft delete, kept 30 days for audits).",
    "search": "Full-text search over {d} records with optional date range.",
    "export": "Export {d} records as CSV or JSON to a signed download URL.",
    "summarize": "Aggregate {d} records by a dimension over a period.",
    "check": "Check the state of a {d} item (availability, status, health).",
    "approve": "Approve a pending {d} request, recording who approved and why.",
}


REQUIRED = ("id", "name", "query", "sku", "format", "dimension", "approver")


def _params(domain: str, action: str) -> dict[str, Any]:
    record_id = {
        "type": "string",
        "description": f"The {domain} record id, e.g. '{domain[:3]}-1042'.",
    }
    common: dict[str, Any] = {
        "get": {
            "id": record_id,
            "fields": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Fields to return; all when omitted.",
            },
        },
        "list": {
            "status": {
                "type": "string",
                "enum": ["open", "closed", "pending", "any"],
                "description": "Status filter.",
            },
            "owner": {"type": "string", "description": "Owner user id."},
            "page": {"type": "integer", "minimum": 1, "description": "Page number, from 1."},
            "page_size": {
                "type": "integer",
                "minimum": 1,
                "maximum": 200,
                "description": "Records per page.",
            },
        },
        "create": {
            "name": {"type": "string", "description": "Display name."},
            "owner": {"type": "string", "description": "Owner user id."},
            "attributes": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": "Free-form attributes.",
            },
            "notify": {"type": "boolean", "description": "Notify the owner."},
        },
        "update": {
            "id": record_id,
            "changes": {"type": "object", "description": "Field name to new value."},
            "reason": {"type": "string", "description": "Why, for the audit log."},
        },
        "delete": {
            "id": record_id,
            "reason": {"type": "string", "description": "Why, for the audit log."},
        },
        "search": {
            "query": {"type": "string", "description": "Search words."},
            "since": {
                "type": "string",
                "format": "date",
                "description": "From this date (ISO 8601).",
            },
            "until": {
                "type": "string",
                "format": "date",
                "description": "Until this date (ISO 8601).",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 100,
                "description": "Most results.",
            },
        },
        "export": {
            "format": {"type": "string", "enum": ["csv", "json"], "description": "File format."},
            "status": {"type": "string", "description": "Status filter."},
            "expires_minutes": {"type": "integer", "minimum": 1, "description": "Link lifetime."},
        },
        "summarize": {
            "dimension": {
                "type": "string",
                "enum": ["day", "week", "month", "owner", "status"],
                "description": "Group by.",
            },
            "since": {"type": "string", "format": "date", "description": "Period start."},
            "until": {"type": "string", "format": "date", "description": "Period end."},
        },
        "check": {
            "sku": {"type": "string", "description": "Item code."},
            "warehouse": {"type": "string", "description": "Warehouse code, e.g. 'AMS-1'."},
        },
        "approve": {
            "id": record_id,
            "approver": {"type": "string", "description": "Approving user id."},
            "comment": {"type": "string", "description": "Approval note."},
        },
    }
    properties = common[action]
    required = [
        name
        for name in properties
        if name in ("id", "name", "query", "sku", "format", "dimension", "approver")
    ]
    if domain == "shipping" and action == "create":
        properties = {
            "order_id": {"type": "string", "description": "The order to ship."},
            "sku": {"type": "string", "description": "Item code."},
            "quantity": {"type": "integer", "minimum": 1, "description": "Units to ship."},
            "warehouse": {"type": "string", "description": "Warehouse shipping it."},
        }
        required = list(properties)
    return {"type": "object", "properties": properties, "required": required}


TOOLS = [
    Tool(name=f"{d}_{a}", description=text.format(d=d), inputSchema=_params(d, a))
    for d in DOMAINS
    for a, text in ACTIONS.items()
]
assert len(TOOLS) == 200


def answer(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    if name == "orders_get":
        return {"id": arguments["id"], "sku": "SKU-778", "quantity": 3, "status": "open"}
    if name == "inventory_check":
        return {"sku": arguments["sku"], "warehouse": arguments.get("warehouse"), "available": 12}
    if name == "shipping_create":
        return {"tracking": f"TRK-{arguments['order_id']}-{arguments['quantity']}"}
    return {"tool": name, "arguments": arguments}


server: Server[Any, Any] = Server("bench-200")


@server.list_tools()  # type: ignore[no-untyped-call, untyped-decorator]
async def list_tools() -> list[Tool]:
    return TOOLS


@server.call_tool()  # type: ignore[untyped-decorator]
async def call_tool(name: str, arguments: dict[str, Any]) -> list[TextContent]:
    return [TextContent(type="text", text=json.dumps(answer(name, arguments)))]


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
