"""The real bubblewrap sandbox (one per session) for the sandbox, tool and code-mode tests."""

from tests.support.sandbox import sandbox  # noqa: F401 (fixture)
