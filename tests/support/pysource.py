"""`parse`: `ast.parse` for the tests that read the project's own Python sources.

CPython 3.11 before 3.11.8 (gh-106905, the fix of gh-95185's depth tracking) can fail
`ast.parse` with "SystemError: AST constructor recursion depth mismatch" when Python code runs
in the middle of building the tree: a garbage collection there runs finalizers (an asyncio
future's "exception was never retrieved" log did, in a suite run). No collection runs while a
tree is built here.
"""

from __future__ import annotations

import ast
import gc


def parse(source: str) -> ast.Module:
    enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source)
    finally:
        if enabled:
            gc.enable()
