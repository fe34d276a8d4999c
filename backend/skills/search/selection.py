"""Which skills a search or a Ghost covers, as one SQL condition over `skill_search`.

A Ghost's skills are the names it lists (each the owner's skill in the Ghost's namespace, else
the public one), the owner's skills in that namespace whose labels match `skillSelector`, and with
`includePublicSkills` the public skills (those matching the selector when one is given). An own
skill shadows the public skill of its name. A public Ghost sees public skills only. Only enabled
skills bound to the Chat shell count. Tenancy is part of the condition itself: no other user's
row can ever match it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from sqlalchemy import and_, exists, false, not_, or_, select, true
from sqlalchemy.orm import aliased
from sqlalchemy.sql.elements import ColumnElement

from backend.crd.common import parse_skill_ref
from backend.crd.ghost import GhostSpec
from backend.crd.ghost import LabelSelector as CrdLabelSelector
from backend.db.models import SYSTEM_USER_ID, Kind, SkillLabel, SkillSearch
from backend.kinds.store import Scope

PUBLIC_SKILLS = Scope(SYSTEM_USER_ID, "default")
# The owner's row of a name, which shadows the public one. Built once: an alias proxies every
# column of `skill_search` on first use, which cost a turn milliseconds when built per Ghost.
_OWN = aliased(SkillSearch)
# Conditions by Ghost (see `GhostSkills.condition`): every turn of a Ghost builds the same one.
_CONDITIONS: OrderedDict[Hashable, ColumnElement[bool]] = OrderedDict()
_MAX_CONDITIONS = 1024
Operator = Literal["In", "NotIn", "Exists", "DoesNotExist"]


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: Operator
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class LabelSelector:
    """A Kubernetes label selector; an empty one matches every skill."""

    match_labels: Mapping[str, str] = field(default_factory=dict)
    match_expressions: tuple[Requirement, ...] = ()

    @classmethod
    def from_crd(cls, selector: CrdLabelSelector | None) -> LabelSelector | None:
        """From a Ghost's `spec.skillSelector`; None when absent."""
        if selector is None:
            return None
        expressions = tuple(
            Requirement(e.key, e.operator, tuple(e.values)) for e in selector.match_expressions
        )
        return cls(dict(selector.match_labels), expressions)

    def condition(self) -> ColumnElement[bool]:
        parts: list[ColumnElement[bool]] = []
        for key, value in sorted(self.match_labels.items()):
            parts.append(_has_label(key, [value]))
        for req in self.match_expressions:
            if req.operator == "In":
                parts.append(_has_label(req.key, req.values))
            elif req.operator == "NotIn":  # as in Kubernetes: a skill without the key matches
                parts.append(not_(_has_label(req.key, req.values)))
            elif req.operator == "Exists":
                parts.append(_has_label(req.key, None))
            else:
                parts.append(not_(_has_label(req.key, None)))
        return and_(true(), *parts)


def _has_label(key: str, values: Sequence[str] | None) -> ColumnElement[bool]:
    stmt = select(SkillLabel.kind_id).where(
        SkillLabel.kind_id == SkillSearch.kind_id, SkillLabel.key == key
    )
    if values is not None:
        stmt = stmt.where(SkillLabel.value.in_(list(values)))
    return exists(stmt)


def _in_scope(scope: Scope) -> ColumnElement[bool]:
    return and_(SkillSearch.user_id == scope.user_id, SkillSearch.namespace == scope.namespace)


@dataclass(frozen=True)
class GhostSkills:
    """The skills of one Ghost: listed by name, selected by label, or all public ones."""

    owner: Scope
    names: tuple[str, ...] = ()
    selector: LabelSelector | None = None
    include_public: bool = False
    plugins: tuple[str, ...] = ()  # every skill of these plugins (`<plugin>/<skill>`)

    @classmethod
    def from_spec(cls, owner: Scope, spec: GhostSpec) -> GhostSkills:
        return cls(
            owner=owner,
            names=tuple(parse_skill_ref(r).name for r in spec.skills),  # pins aside
            selector=LabelSelector.from_crd(spec.skill_selector),
            include_public=bool(spec.include_public_skills),
            plugins=tuple(spec.plugins or ()),
        )

    def _plugin_skills(self, plugin: str) -> ColumnElement[bool]:
        """The skills of `plugin`: the owner's plugin of that name, else the public one."""
        named = SkillSearch.name.startswith(f"{plugin}/", autoescape=True)
        public = _in_scope(PUBLIC_SKILLS)
        if self.is_public_ghost:
            return and_(named, public)
        own_plugin = exists(
            select(Kind.id).where(
                Kind.kind == "Plugin",
                Kind.user_id == self.owner.user_id,
                Kind.namespace == self.owner.namespace,
                Kind.name == plugin,
            )
        )
        return and_(named, or_(_in_scope(self.owner), and_(public, not_(own_plugin))))

    @property
    def uses_public(self) -> bool:
        """Whether public skills can be among them (by name, plugin, or all of them)."""
        return bool(self.names or self.plugins) or self.include_public or self.is_public_ghost

    def owners(self) -> tuple[int, ...]:
        """The users whose rows the condition can match: the owner's, and the public ones'
        when it uses public skills."""
        users = {self.owner.user_id}
        if self.uses_public:
            users.add(SYSTEM_USER_ID)
        return tuple(sorted(users))

    @property
    def is_public_ghost(self) -> bool:
        return self.owner.user_id == SYSTEM_USER_ID

    def _key(self) -> Hashable:
        selector = self.selector
        labels = None
        if selector is not None:
            labels = (tuple(sorted(selector.match_labels.items())), selector.match_expressions)
        return (self.owner, self.names, labels, self.include_public, self.plugins)

    def condition(self) -> ColumnElement[bool]:
        """Built once per distinct Ghost skills value (an LRU across turns): building it costs
        more than running the query it filters."""
        key = self._key()
        found = _CONDITIONS.get(key)
        if found is None:
            found = _CONDITIONS[key] = self._condition()
            if len(_CONDITIONS) > _MAX_CONDITIONS:
                _CONDITIONS.popitem(last=False)
        else:
            _CONDITIONS.move_to_end(key)
        return found

    def _condition(self) -> ColumnElement[bool]:
        public = _in_scope(PUBLIC_SKILLS)
        if self.uses_public and not self.is_public_ghost:
            shadowed = exists(
                select(_OWN.kind_id).where(
                    _OWN.user_id == self.owner.user_id,
                    _OWN.namespace == self.owner.namespace,
                    _OWN.name == SkillSearch.name,
                )
            )
            public = and_(public, not_(shadowed))
        parts: list[ColumnElement[bool]] = []
        if self.names:
            sources = public if self.is_public_ghost else or_(_in_scope(self.owner), public)
            parts.append(and_(SkillSearch.name.in_(self.names), sources))
        chosen = self.selector.condition() if self.selector is not None else None
        if chosen is not None and not self.is_public_ghost:
            parts.append(and_(_in_scope(self.owner), chosen))
        if self.include_public or (chosen is not None and self.is_public_ghost):
            parts.append(public if chosen is None else and_(public, chosen))
        parts += [self._plugin_skills(p) for p in self.plugins]
        if not parts:
            return false()
        return and_(SkillSearch.enabled.is_(True), SkillSearch.chat.is_(True), or_(*parts))


@dataclass(frozen=True)
class ReadableSkills:
    """Every skill a user may read: their own, in any namespace, and the public ones."""

    user_id: int

    def owners(self) -> tuple[int, ...]:
        return tuple(sorted({self.user_id, SYSTEM_USER_ID}))

    def condition(self) -> ColumnElement[bool]:
        return or_(SkillSearch.user_id == self.user_id, _in_scope(PUBLIC_SKILLS))


SkillSource = GhostSkills | ReadableSkills
