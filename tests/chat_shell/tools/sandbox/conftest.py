"""The real sandbox of tests/chat_shell/sandbox, shared with the tool tests."""

from tests.chat_shell.sandbox.conftest import sandbox

__all__ = ["sandbox"]
