"""Slash commands: a chat message `/name args` turned into the turn's request and its skills.

Pure: the caller gathers what the Ghost offers (`backend.plugins.commands`) and calls `expand`
once per turn. A plugin command's text (`commands/*.md`) becomes the user's request, with
`$ARGUMENTS` (all arguments) and `$1`..`$9` (each, shell-quoted words) filled in, and the
skills it names are loaded into that turn. `/<skill> args` loads a user-invocable skill and
passes `args` on as the request. `//text` sends `/text` as an ordinary message.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from backend.errors import InvalidRequest

# `/name` or `/plugin:name` or `/plugin/skill`, then the arguments.
_INVOCATION = re.compile(r"\A/([a-z0-9][a-z0-9-]*(?:[:/][a-z0-9][a-z0-9-]*)?)(?:\s+(.*))?\Z", re.S)
_POSITIONAL = re.compile(r"\$(ARGUMENTS|[1-9])")


@dataclass(frozen=True)
class Command:
    """What a client may offer after `/`, and what invoking it does."""

    name: str
    description: str
    argument_hint: str | None
    source: str  # `plugin:<plugin>` or `skill`
    prompt: str | None = None  # a plugin command's text; None for a skill
    skills: tuple[str, ...] = ()  # loaded into the turn

    def listing(self) -> dict[str, object]:
        return {
            "name": self.name,
            "description": self.description,
            "argumentHint": self.argument_hint,
            "source": self.source,
        }


@dataclass(frozen=True)
class Invocation:
    command: str
    request: str  # the user's request as the model sees it
    skills: tuple[str, ...]


class UnknownCommandError(InvalidRequest):
    code = "unknown_command"


def invoked_name(message: str) -> str | None:
    """The command a message invokes, or None for an ordinary message."""
    match = _INVOCATION.match(message.strip()) if not message.startswith("//") else None
    return match.group(1) if match else None


def _arguments(args: str) -> list[str]:
    try:
        return shlex.split(args)
    except ValueError:  # an unbalanced quote: plain words
        return args.split()


def substitute(prompt: str, args: str) -> str:
    """`$ARGUMENTS` and `$1`..`$9` filled in; without `$ARGUMENTS` in the text, arguments
    given are appended (so they are never lost)."""
    words = _arguments(args)

    def value(match: re.Match[str]) -> str:
        key = match.group(1)
        if key == "ARGUMENTS":
            return args
        index = int(key) - 1
        return words[index] if index < len(words) else ""

    text = _POSITIONAL.sub(value, prompt)
    if args and "$ARGUMENTS" not in prompt and not re.search(r"\$[1-9]", prompt):
        text += f"\n\nARGUMENTS: {args}"
    return text


def expand(message: str, commands: Mapping[str, Command]) -> Invocation | None:
    """The invocation `message` makes, None for an ordinary message (`//` unescapes to `/`);
    422 `unknown_command` for a command the Ghost does not offer."""
    if message.startswith("//"):
        return None
    match = _INVOCATION.match(message.strip())
    if match is None:
        return None
    name, args = match.group(1), (match.group(2) or "").strip()
    command = commands.get(name)
    if command is None:
        offered = sorted(commands)
        raise UnknownCommandError(
            f"unknown command /{name}; this Ghost offers "
            + (", ".join(f"/{n}" for n in offered[:20]) or "no commands")
            + " (send //text for a message starting with '/')",
            details={"command": name, "offered": offered[:100]},
        )
    if command.prompt is None:
        request = args or f"Use the {command.skills[0]} skill."
    else:
        request = substitute(command.prompt, args)
    return Invocation(command=name, request=request, skills=command.skills)


def unescape(message: str) -> str:
    """An ordinary message as the model sees it: `//text` is `/text`."""
    return message[1:] if message.startswith("//") else message
