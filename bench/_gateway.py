"""Run a gateway with an instant scripted model in its own process (for benchmarks).

python -m bench._gateway PORT      (settings from SKILLHIVE_* variables)
"""

from __future__ import annotations

import sys

import uvicorn
from langchain_core.messages import AIMessage

from backend.app import create_served_app
from chat_shell.offline import ScriptedChatModel

ANSWER = "An instant answer."


def instant_model() -> ScriptedChatModel:
    return ScriptedChatModel(script=[AIMessage(ANSWER)], cycle=True, record=False)


def main() -> None:
    port = int(sys.argv[1])
    app = create_served_app(chat_model=instant_model())
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
