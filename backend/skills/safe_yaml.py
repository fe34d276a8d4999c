"""YAML for hostile input: bounded in time, memory and in the size of the JSON it becomes.

`yaml.safe_load` builds nothing dangerous, but it shares aliased nodes, so a few hundred bytes
("billion laughs") become a value whose JSON is gigabytes, and deep nesting overflows the
stack. This loader:

- first streams the parser's events to refuse nesting deeper than `MAX_DEPTH` before the
  composer (recursive, in C with libyaml) sees it;
- measures the node graph *as if aliases were expanded* (memoized, so in time linear in the
  nodes) and refuses it when that exceeds the budget, or when an alias makes it cyclic;
- constructs only JSON types: timestamps stay strings, non-finite floats stay their text,
  mapping keys are strings as written, any other tag (`!!binary`, `!!set`, `!python/...`) fails,
  and so does an integer longer than `MAX_INT_CHARS` (Python would refuse or bloat on it);
- refuses a mapping key written twice.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from yaml import MarkedYAMLError, YAMLError
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import CollectionEndEvent, CollectionStartEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import Resolver

try:  # libyaml scans ~20x faster than the pure-Python scanner
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

MAX_DEPTH = 32  # nested mappings/sequences, aliases expanded
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_MERGE = "tag:yaml.org,2002:merge"
_JSON_TAGS = [f"tag:yaml.org,2002:{t}" for t in ("null", "bool", "str", "seq", "map")]
_TEXT_TAGS = {"tag:yaml.org,2002:str", "tag:yaml.org,2002:null"}


class YamlError(Exception):
    """Invalid YAML; `line` is 1-based within the loaded text when known."""

    def __init__(self, message: str, line: int | None = None, *, too_complex: bool = False):
        super().__init__(message)
        self.line = line
        self.too_complex = too_complex


@dataclass(frozen=True)
class LoadedYaml:
    value: Any
    # Top-level scalars YAML typed as numbers or booleans, as written (`version: 1.10`).
    raw_scalars: dict[str, str]


MAX_INT_CHARS = 100  # a longer integer is no setting: Python refuses to parse 4,300 digits


def _construct_int(loader: SafeConstructor, node: ScalarNode) -> int:
    if len(node.value) > MAX_INT_CHARS:
        raise ConstructorError(
            None, None, f"found an integer of more than {MAX_INT_CHARS} characters", node.start_mark
        )
    value: int = loader.construct_yaml_int(node)
    return value


def _construct_float(loader: SafeConstructor, node: ScalarNode) -> float | str:
    value = loader.construct_yaml_float(node)
    return value if math.isfinite(value) else str(node.value)


class _JsonLoader(_Loader):
    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
        for first, resolvers in Resolver.yaml_implicit_resolvers.items()
    }
    yaml_constructors = {
        **{tag: SafeConstructor.yaml_constructors[tag] for tag in _JSON_TAGS},
        "tag:yaml.org,2002:int": _construct_int,
        "tag:yaml.org,2002:float": _construct_float,
        None: SafeConstructor.construct_undefined,
    }

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        # Keys are taken as written, before YAML types them: `1`, `true` and `1.0` would
        # otherwise collide (1 == True == 1.0 in a dict) and JSON wants strings anyway. A key
        # written twice is refused: parsers differ on which one counts (this one took the
        # last), so one document could mean two things. Keys a merge (`<<`) brings in may be
        # overridden, as YAML says.
        written: set[str] = set()
        for key_node, _ in node.value:
            if isinstance(key_node, ScalarNode) and key_node.tag != _MERGE:
                if key_node.value in written:
                    raise ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"found the key {str(key_node.value)[:100]!r} twice",
                        key_node.start_mark,
                    )
                written.add(key_node.value)
        self.flatten_mapping(node)
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode):
                raise ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    "found a non-scalar key",
                    key_node.start_mark,
                )
            mapping[str(key_node.value)] = self.construct_object(value_node, deep=deep)
        return mapping


def load_yaml(text: str, *, max_expanded: int) -> LoadedYaml:
    """Load one YAML document; its alias-expanded size must stay within `max_expanded`."""
    with _yaml_errors():
        _check_nesting(text)
        loader = _JsonLoader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return LoadedYaml(None, {})
            _Expansion(max_expanded).measure(node, 0)
            return LoadedYaml(loader.construct_document(node), _raw_scalars(node))
        finally:
            loader.dispose()


def load_yaml_all(text: str, *, max_expanded: int, max_documents: int) -> list[Any]:
    """Every document of a stream (empty ones as None); all of them together, aliases expanded,
    must stay within `max_expanded`."""
    with _yaml_errors():
        _check_nesting(text)
        loader = _JsonLoader(text)
        try:
            documents: list[Any] = []
            budget = max_expanded
            while loader.check_node():
                if len(documents) == max_documents:
                    raise YamlError(f"more than {max_documents} documents", too_complex=True)
                node = loader.get_node()
                if node is None:  # not after check_node(); for the type checker
                    break
                budget -= _Expansion(budget).measure(node, 0)[0]
                if budget < 0:
                    raise YamlError(f"expands to more than {max_expanded} bytes", too_complex=True)
                documents.append(loader.construct_document(node))
            return documents
        finally:
            loader.dispose()


@contextmanager
def _yaml_errors() -> Iterator[None]:
    try:
        yield
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise YamlError(exc.problem or exc.context or "invalid YAML", line) from exc
    except YAMLError as exc:
        raise YamlError(str(exc)) from exc


def _check_nesting(text: str) -> None:
    loader = _JsonLoader(text)
    try:
        depth = 0
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    mark = event.start_mark
                    line = None if mark is None else mark.line + 1
                    raise YamlError(
                        f"nested deeper than {MAX_DEPTH} levels", line, too_complex=True
                    )
            elif isinstance(event, CollectionEndEvent):
                depth -= 1
    finally:
        loader.dispose()


def _raw_scalars(node: Node) -> dict[str, str]:
    if not isinstance(node, MappingNode):
        return {}
    return {
        str(k.value): str(v.value)
        for k, v in node.value
        if isinstance(k, ScalarNode) and isinstance(v, ScalarNode) and v.tag not in _TEXT_TAGS
    }


class _Expansion:
    """Size of the node graph with every alias expanded, roughly its length as JSON."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.memo: dict[int, tuple[int, int] | None] = {}  # id -> (size, height); None = open

    def measure(self, node: Node, depth: int) -> tuple[int, int]:
        """(size, height) of `node` reached under `depth` collections; height counts collections."""
        key = id(node)
        if key in self.memo:
            known = self.memo[key]
            if known is None:
                raise YamlError("recursive alias", node.start_mark.line + 1, too_complex=True)
            size, height = known
        else:
            self.memo[key] = None
            size, height = self._measure_children(node, depth)
            self.memo[key] = (size, height)
        if depth + height > MAX_DEPTH:
            raise YamlError(
                f"nested deeper than {MAX_DEPTH} levels once aliases are expanded",
                node.start_mark.line + 1,
                too_complex=True,
            )
        return size, height

    def _measure_children(self, node: Node, depth: int) -> tuple[int, int]:
        if isinstance(node, ScalarNode):
            return len(node.value) + 2, 0
        children: list[Node] = []
        if isinstance(node, SequenceNode):
            children = node.value
        elif isinstance(node, MappingNode):
            children = [n for pair in node.value for n in pair]
        size, height = 2, 0
        for child in children:
            child_size, child_height = self.measure(child, depth + 1)
            size += child_size
            height = max(height, child_height)
            if size > self.budget:
                raise YamlError(
                    f"expands to more than {self.budget} bytes (aliases count once per use)",
                    node.start_mark.line + 1,
                    too_complex=True,
                )
        return size, height + 1
