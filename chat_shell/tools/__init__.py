"""Tools the agent can call: built-ins, skill providers, MCP."""
