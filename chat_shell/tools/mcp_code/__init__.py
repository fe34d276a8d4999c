"""Code execution with MCP: the turn's MCP tools as a Python module, called from the sandbox
through a bridge into the worker (see _tools.py, _bridge.py)."""

from chat_shell.tools.mcp_code._functions import McpFunction, as_functions
from chat_shell.tools.mcp_code._tools import CODE_TOOL_NAMES, CODE_TOOLS, McpCodeMode

__all__ = ["CODE_TOOLS", "CODE_TOOL_NAMES", "McpCodeMode", "McpFunction", "as_functions"]
