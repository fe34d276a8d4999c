"""The agent engine: runs one chat turn. Imports nothing from `backend` (DESIGN.md §3)."""
