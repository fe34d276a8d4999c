"""Reading docker-compose.yml the way Compose does: YAML (anchors, merge keys), then variable
interpolation, then validation against the Compose Specification's JSON schema.

The schema is the copy `check-jsonschema` ships (pinned in constraints.txt), not one of ours.
Interpolation follows the specification's syntax: `$$`, `$VAR`, `${VAR}`, and `${VAR<op>arg}`
with `:-`/`-` (default), `:?`/`?` (required) and `:+`/`+` (alternative); the colon forms treat
an empty value like a missing one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

_REFERENCE = re.compile(
    r"\$(?:(?P<escaped>\$)|(?P<named>[_a-zA-Z][_a-zA-Z0-9]*)|\{(?P<braced>[^}]*)\}|(?P<bad>))"
)
_BRACED = re.compile(r"(?P<name>[_a-zA-Z][_a-zA-Z0-9]*)(?:(?P<op>:?[-?+])(?P<arg>.*))?\Z", re.S)


class MissingVariable(ValueError):
    """A `${VAR:?message}` whose variable is missing: Compose refuses the file."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"required variable {name} is missing a value: {message}")
        self.name = name


def _substitute(match: re.Match[str], env: Mapping[str, str]) -> str:
    if match["escaped"]:
        return "$"
    if match["named"]:
        return env.get(match["named"], "")
    braced = _BRACED.match(match["braced"] or "") if match["bad"] is None else None
    if braced is None or "$" in (braced["arg"] or ""):  # nested forms are not used here
        raise ValueError(f"invalid interpolation format: {match.group(0)!r}")
    name, op, arg = braced["name"], braced["op"], braced["arg"] or ""
    value = env.get(name)
    if op is None:
        return value or ""
    present = bool(value) if op.startswith(":") else value is not None
    if op.endswith("-"):
        return value if present and value is not None else arg
    if op.endswith("?"):
        if not present or value is None:
            raise MissingVariable(name, arg)
        return value
    return arg if present else ""  # "+"


def interpolate(node: Any, env: Mapping[str, str]) -> Any:
    """Every string value of a parsed compose file, interpolated from `env` (keys are not)."""
    if isinstance(node, str):
        return _REFERENCE.sub(lambda m: _substitute(m, env), node)
    if isinstance(node, dict):
        return {key: interpolate(value, env) for key, value in node.items()}
    if isinstance(node, list):
        return [interpolate(item, env) for item in node]
    return node


def load(path: Path, env: Mapping[str, str]) -> dict[str, Any]:
    loaded: dict[str, Any] = interpolate(yaml.safe_load(path.read_text()), env)
    return loaded


@cache
def specification() -> dict[str, Any]:
    vendored = resources.files("check_jsonschema.builtin_schemas.vendor") / "compose-spec.json"
    schema: dict[str, Any] = json.loads(vendored.read_text())
    return schema


def schema_errors(model: Mapping[str, Any]) -> list[str]:
    """Where `model` breaks the Compose Specification (empty: it conforms)."""
    schema = specification()
    validator = jsonschema.validators.validator_for(schema)(schema)
    return [
        f"{'/'.join(str(p) for p in error.absolute_path) or '<root>'}: {error.message}"
        for error in validator.iter_errors(model)
    ]
