"""Tools that run code in the sandbox (`chat_shell.sandbox`)."""

from chat_shell.tools.sandbox.skill_run import SKILL_RUN, SandboxAccess, SkillRunner

__all__ = ["SKILL_RUN", "SandboxAccess", "SkillRunner"]
