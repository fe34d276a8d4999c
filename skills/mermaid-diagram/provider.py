"""Tools of the mermaid-diagram skill: render a diagram in the browser, read the references.

Browser protocol: `skill:request` with `action: "render"` and `data: {"code": str}`. The browser
renders the code with Mermaid and answers `skill:response` with `success: true` (the result is
ignored), or `success: false` and `error` set to the renderer's message, which reaches the model
as it is, so that it can fix its syntax.
"""

# No `from __future__ import annotations`: LangChain reads the tool functions' hints at run time.

import re
from collections.abc import Mapping
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field, ValidationError

from chat_shell.skills.provider import ProviderContext, SkillToolProvider
from chat_shell.tools.pending_requests import FrontendError, PendingRequestError, RequestTimeout

REFERENCES = "references/"
MAX_CODE_CHARS = 20_000
_FENCED = re.compile(r"\A\s*```[ \t]*(?:mermaid)?[ \t]*\n(.*?)\n\s*```\s*\Z", re.DOTALL)

RENDER_DESCRIPTION = (
    "Render Mermaid code in the user's browser. Pass the bare code, starting with the diagram "
    "header (e.g. `flowchart TD`), without ``` fences. Returns `rendered` when the diagram is "
    "valid, or the renderer's error so you can fix the syntax and call again."
)
REFERENCE_DESCRIPTION = (
    "Read this skill's Mermaid syntax reference for one diagram type: syntax, examples and "
    "pitfalls. Use it before writing a type you are unsure of, or to fix a renderer error."
)


class RenderArgs(BaseModel):
    code: str = Field(
        description="The Mermaid source, header first, without a ``` fence.",
    )


class MermaidProvider(SkillToolProvider):
    provider_name = "mermaid"
    supported_tools = ("render_mermaid", "read_mermaid_reference")

    def create_tool(
        self, tool_name: str, context: ProviderContext, config: Mapping[str, Any]
    ) -> BaseTool:
        if tool_name == "render_mermaid":
            return _render_tool(context, config)
        if tool_name == "read_mermaid_reference":
            return _reference_tool(context)
        raise ValueError(f"unsupported tool {tool_name!r}")


def _render_tool(context: ProviderContext, config: Mapping[str, Any]) -> BaseTool:
    timeout_s = float(config.get("timeout_s", 30))
    max_attempts = int(config.get("max_attempts", 3))
    failures = 0  # per turn: the tool is created anew for every turn

    async def render_mermaid(code: str) -> str:
        nonlocal failures
        code = unfence(code)
        if not code:
            raise ToolException("`code` is empty: pass the Mermaid source, header first.")
        if len(code) > MAX_CODE_CHARS:
            raise ToolException(
                f"the diagram has {len(code)} characters, at most {MAX_CODE_CHARS}: "
                "split it into smaller diagrams."
            )
        try:
            await context.ask_frontend("render", {"code": code}, timeout_s)
        except FrontendError as exc:
            failures += 1
            raise ToolException(_render_error(exc, failures, max_attempts)) from exc
        except RequestTimeout as exc:
            raise ToolException(
                f"the browser did not answer within {timeout_s:g} s, so the diagram was not "
                "checked. Do not retry: give the code in a ```mermaid block and say it could "
                "not be previewed."
            ) from exc
        except PendingRequestError as exc:
            raise ToolException(
                f"the browser cannot be reached ({exc.message}). Do not retry: give the code "
                "in a ```mermaid block and say it could not be previewed."
            ) from exc
        return "rendered"

    return StructuredTool(
        name="render_mermaid",
        description=RENDER_DESCRIPTION,
        args_schema=RenderArgs,
        coroutine=render_mermaid,
        handle_tool_error=True,
        handle_validation_error=_invalid_arguments,
    )


def _render_error(exc: FrontendError, failures: int, max_attempts: int) -> str:
    reason = exc.details.get("error") or exc.message
    text = f"the renderer rejected the diagram: {reason}\n"
    if failures >= max_attempts:
        return text + (
            f"That was failed attempt {failures}: stop retrying. Tell the user the diagram did "
            "not render, and show this error and the code in a plain code block."
        )
    return text + (
        "Fix the syntax at the reported line (see the Pitfalls of read_mermaid_reference) and "
        "call render_mermaid again with the whole corrected code."
    )


def _reference_tool(context: ProviderContext) -> BaseTool:
    docs = references(context.files)

    async def read_mermaid_reference(topic: object = None, **_ignored: Any) -> str:
        if not isinstance(topic, str) or topic not in docs:
            available = ", ".join(docs) or "none"
            raise ToolException(f"no reference {topic!r}; available topics: {available}.")
        return docs[topic]

    return StructuredTool(
        name="read_mermaid_reference",
        description=REFERENCE_DESCRIPTION,
        # A JSON schema, not a model: the enum shows the model the topics (LangChain drops
        # extras of a model's fields), and an unknown topic reaches the tool, which lists them.
        args_schema=_reference_schema(list(docs)),
        coroutine=read_mermaid_reference,
        handle_tool_error=True,
    )


def references(files: Mapping[str, bytes]) -> dict[str, str]:
    """The packaged `references/<topic>.md` files by topic, sorted."""
    found = {
        path.removeprefix(REFERENCES).removesuffix(".md"): data
        for path, data in files.items()
        if path.startswith(REFERENCES) and path.endswith(".md") and path.count("/") == 1
    }
    return {topic: found[topic].decode("utf-8") for topic in sorted(found)}


def _reference_schema(topics: list[str]) -> dict[str, Any]:
    topic: dict[str, Any] = {"type": "string", "description": "The diagram type to read about."}
    if topics:
        topic["enum"] = topics
    return {"type": "object", "properties": {"topic": topic}, "required": ["topic"]}


def unfence(code: str) -> str:
    """The code without a surrounding ``` or ```mermaid fence (models add one by habit)."""
    if match := _FENCED.match(code):
        code = match.group(1)
    return code.strip("\n").rstrip()


def _invalid_arguments(exc: ValidationError) -> str:
    problems = "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
    )
    return f"invalid arguments: {problems}"
