"""Conversation artifacts: files `skill_run` wrote, files users uploaded, kept workspaces."""
