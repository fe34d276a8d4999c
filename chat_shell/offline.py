"""`OfflineChatModel`: the embedded default and demos; no network, deterministic.

The streaming base, the scripted test double and token estimation live in their own modules;
their names are re-exported here for imports written before the split.
"""

from __future__ import annotations

import re

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from chat_shell._local_model import LocalToolChatModel, ToolSchemas, estimate_usage
from chat_shell._scripted import RecordedCall, ScriptedChatModel, Step
from chat_shell._tokens import estimate_tokens
from chat_shell.skills.prompt import LOAD_SKILL_TOOL, parse_catalog, parse_loaded_names

__all__ = [
    "LocalToolChatModel",
    "OfflineChatModel",
    "RecordedCall",
    "ScriptedChatModel",
    "Step",
    "ToolSchemas",
    "estimate_tokens",
    "estimate_usage",
]


_STOPWORDS = frozenset(
    "about after again also and any are can could does for from have help how into just like make "
    "more need please should some than that the their them then there these this those use used "
    "user using want what when where which while will with would you your".split()
)


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) >= 3} - _STOPWORDS


def _skill_enum(tools: ToolSchemas) -> list[str]:
    for tool in tools:
        function = tool.get("function", {})
        if function.get("name") == LOAD_SKILL_TOOL:
            return list(function["parameters"]["properties"]["skill_name"].get("enum", []))
    return []


class OfflineChatModel(LocalToolChatModel):
    """Skillhive's offline model: loads the skill the user's words point at, then says what it is.

    It reads only what a real model reads: the prompt (catalog, loaded skills) and the bound tools.
    """

    def reply(self, messages: list[BaseMessage], tools: ToolSchemas) -> AIMessage:
        system = next((m.text for m in messages if isinstance(m, SystemMessage)), "")
        loaded = parse_loaded_names(system)
        last = messages[-1] if messages else None
        if isinstance(last, HumanMessage):
            catalog = parse_catalog(system)
            names = _skill_enum(tools) or sorted(catalog)  # a partial catalog has no enum
            skill = self._pick_skill(last.text, catalog, names, loaded)
            if skill is not None:
                call = {"name": LOAD_SKILL_TOOL, "args": {"skill_name": skill}}
                return AIMessage(
                    content="", tool_calls=[{**call, "id": f"offline_{len(messages)}"}]
                )
        question = next((m.text for m in reversed(messages) if isinstance(m, HumanMessage)), "")
        return AIMessage(content=self._answer_text(question, loaded, isinstance(last, ToolMessage)))

    @staticmethod
    def _pick_skill(
        text: str, catalog: dict[str, str], names: list[str], loaded: list[str]
    ) -> str | None:
        words = _words(text)
        scores = {
            name: 3 * len(_words(name.replace("-", " ").replace("_", " ")) & words)
            + len(_words(catalog.get(name, "")) & words)
            for name in sorted(names)
            if name not in loaded
        }
        best = max(scores.items(), key=lambda kv: kv[1], default=(None, 0))
        return best[0] if best[1] > 0 else None

    @staticmethod
    def _answer_text(question: str, loaded: list[str], after_tool: bool) -> str:
        text = (
            "This is Skillhive's offline model: no language model is configured, so I cannot "
            "really answer."
        )
        if loaded:
            text += f" Active skills: {', '.join(loaded)}."
        elif after_tool:
            text += " I tried to load a skill for this."
        if question:
            text += f' You said: "{question.strip()[:200]}"'
        return text
