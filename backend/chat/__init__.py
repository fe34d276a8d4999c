"""Conversations, messages and the running of chat turns (in-process or through workers)."""
