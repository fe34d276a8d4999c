"""What every Skillhive CRD shares: the camelCase wire style, the name rule and `metadata`.

CRDs are Kubernetes-shaped (docs/architecture.md): `{apiVersion, kind, metadata, spec, status}`.
Skill and Ghost both build on `CamelModel` and `ObjectMeta` from here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Final

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

API_VERSION: Final = "skillhive.io/v1"

MAX_NAME_LENGTH = 64
NAME_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_NAME_CHARS = re.compile(r"[a-z0-9-]*")


def name_problem(name: str) -> str | None:
    """Which part of the name rule `name` breaks (a sentence fragment), or None if it is valid.

    The rule is `^[a-z0-9]+(-[a-z0-9]+)*$`, at most 64 characters: the Agent Skills name rule
    restricted to ASCII, so names are safe in URLs, paths and prompts as they are.
    """
    if not name:
        return "must not be empty"
    if len(name) > MAX_NAME_LENGTH:
        return f"must be at most {MAX_NAME_LENGTH} characters (it has {len(name)})"
    if name != name.lower():
        return "must be lowercase"
    if not _NAME_CHARS.fullmatch(name):
        bad = sorted({c for c in name if not _NAME_CHARS.fullmatch(c)})
        return f"may contain only a-z, 0-9 and '-' (found {', '.join(map(repr, bad))})"
    if name.startswith("-") or name.endswith("-"):
        return "must not start or end with '-'"
    if "--" in name:
        return "must not contain consecutive hyphens"
    assert NAME_PATTERN.fullmatch(name)  # the checks above spell out the pattern
    return None


def _valid_name(name: str) -> str:
    problem = name_problem(name)
    if problem is not None:
        raise ValueError(f"name {name!r} {problem}")
    return name


ResourceName = Annotated[
    str,
    AfterValidator(_valid_name),
    WithJsonSchema(
        {"type": "string", "pattern": f"^{NAME_PATTERN.pattern}$", "maxLength": MAX_NAME_LENGTH}
    ),
]


def ref_problem(ref: str) -> str | None:
    """What is wrong with a skill reference: a name, or `<plugin>/<skill>` for a skill a plugin
    owns (backend/plugins); None if it is valid."""
    parts = ref.split("/")
    if len(parts) > 2:
        return "has more than one '/'"
    if len(ref) > MAX_NAME_LENGTH:
        return f"must be at most {MAX_NAME_LENGTH} characters (it has {len(ref)})"
    for part in parts:
        problem = name_problem(part)
        if problem is not None:
            return problem
    return None


def _valid_ref(ref: str) -> str:
    problem = ref_problem(ref)
    if problem is not None:
        raise ValueError(f"skill {ref!r} {problem}")
    return ref


SkillRef = Annotated[
    str,
    AfterValidator(_valid_ref),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": f"^{NAME_PATTERN.pattern}(?:/{NAME_PATTERN.pattern})?$",
            "maxLength": MAX_NAME_LENGTH,
        }
    ),
]


# A skill reference in a Ghost's lists may pin a package version: `name@3`, `plugin/skill@3`.
_VERSION = re.compile(r"[1-9][0-9]{0,8}")
MAX_PINNED_REF_LENGTH = MAX_NAME_LENGTH + 10


@dataclass(frozen=True)
class SkillPin:
    """A parsed Ghost skill reference: the skill's name and the pinned version, if any."""

    name: str
    version: int | None = None

    def __str__(self) -> str:
        return self.name if self.version is None else f"{self.name}@{self.version}"


def parse_skill_ref(ref: str) -> SkillPin:
    """The one parser of `name[@version]` (`name` as `ref_problem` allows); ValueError says what
    is wrong."""
    name, at, version = ref.partition("@")
    problem = ref_problem(name)
    if problem is not None:
        raise ValueError(f"skill {name[:MAX_PINNED_REF_LENGTH]!r} {problem}")
    if not at:
        return SkillPin(name)
    if not _VERSION.fullmatch(version):
        raise ValueError(
            f"skill {name!r}: the version after '@' must be a positive integer without "
            "leading zeros (e.g. 'name@3')"
        )
    return SkillPin(name, int(version))


def _valid_pinned_ref(ref: str) -> str:
    try:
        parse_skill_ref(ref)
    except ValueError as exc:  # a custom type, so the API can answer `invalid_skill_ref`
        raise PydanticCustomError("invalid_skill_ref", str(exc)) from None
    return ref


PinnedSkillRef = Annotated[
    str,
    AfterValidator(_valid_pinned_ref),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": f"^{NAME_PATTERN.pattern}(?:/{NAME_PATTERN.pattern})?(?:@[1-9][0-9]*)?$",
            "maxLength": MAX_PINNED_REF_LENGTH,
        }
    ),
]


# Labels as Kubernetes spells them: a key is a name (`[A-Za-z0-9]`, and `-_.` inside) after an
# optional DNS-style prefix and `/`; a value is empty or a name. Lengths are the columns'
# (`skill_labels`: key 63, value 253). Keys under `skillhive.io/` are the service's own (a
# plugin's skills carry `skillhive.io/plugin`): users do not write them.
_LABEL_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
LABEL_KEY_PATTERN = rf"^(?:[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?/)?{_LABEL_NAME}$"
LABEL_VALUE_PATTERN = rf"^(?:{_LABEL_NAME})?$"
SYSTEM_LABEL_PREFIX = "skillhive.io/"
MAX_LABELS = 64
LabelKey = Annotated[str, Field(min_length=1, max_length=63, pattern=LABEL_KEY_PATTERN)]
LabelValue = Annotated[str, Field(max_length=253, pattern=LABEL_VALUE_PATTERN)]
Labels = Annotated[dict[LabelKey, LabelValue], Field(max_length=MAX_LABELS)]


class CamelModel(BaseModel):
    """Wire models: snake_case in Python, camelCase in JSON, unknown keys refused."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="forbid",
    )


class ObjectMeta(CamelModel):
    """`metadata` of a CRD; `resourceVersion` is the row's integer version (If-Match uses it)."""

    name: ResourceName
    namespace: ResourceName = "default"
    labels: Labels = Field(default_factory=dict)
    resource_version: int | None = None
    creation_timestamp: datetime | None = None


class SkillMeta(ObjectMeta):
    """A Skill's `metadata`: its name may be `<plugin>/<skill>` (a skill a plugin owns)."""

    name: SkillRef
