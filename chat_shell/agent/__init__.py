"""The agent engine: `run_turn` builds nothing per turn but a `TurnSession` and streams events."""

from chat_shell.agent._runner import run_turn

__all__ = ["run_turn"]
