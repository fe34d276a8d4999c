"""The agent engine: runs one chat turn. Imports nothing from `backend` (docs/architecture.md)."""
