"""The LLM factory: the turn's model settings -> a LangChain chat model that can call tools."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from chat_shell.contracts import ModelSettings
from chat_shell.errors import ModelCallError
from chat_shell.offline import OfflineChatModel

OFFLINE_MODEL = "offline"
# Self-hosted OpenAI-compatible servers often need no key, but the client insists on one.
_NO_KEY = SecretStr("not-needed")


def create_chat_model(settings: ModelSettings) -> BaseChatModel:
    """`offline` -> the deterministic offline model; anything else -> an OpenAI-compatible model."""
    if settings.name == OFFLINE_MODEL:
        return OfflineChatModel()
    api_key = settings.api_key or (_NO_KEY if settings.base_url else None)
    try:
        return ChatOpenAI(
            model=settings.name,
            base_url=settings.base_url,
            api_key=api_key,
            temperature=settings.temperature,
            max_tokens=settings.max_tokens,
            streaming=True,
            stream_usage=True,
        )
    except Exception as exc:  # the client validates keys and URLs eagerly
        raise ModelCallError(f"cannot set up model {settings.name!r}: {exc}") from exc
