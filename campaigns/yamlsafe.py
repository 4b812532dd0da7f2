"""The node-level guards of safe YAML loading: composing with counted aliases, then building
plain Python data within a budget.

PyYAML composes a node graph in which an alias is a shared node; expanding it naively is how a
"billion laughs" document exhausts memory, and an alias to a node that contains it (``&v {<<:
*v}``, ``&l [*l]``) makes the graph a circle. ``CountingLoader`` counts aliases, distinct nodes
and nesting while composing (never expanding); ``NodeBuilder`` turns nodes into plain data,
refusing circles, tags, non-scalar keys and runaway nesting, while spending two budgets: nodes
(proportional to the distinct ones) and characters (proportional to the file's size), so an
alias repeated a hundred times to one long string cannot multiply it either.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from campaigns.yamldoc import MERGE_TAG, YamlDocument

__all__ = [
    "EXPANSION_SLACK",
    "EXPANSION_SLACK_CHARS",
    "MAX_ALIASES",
    "MAX_DEPTH",
    "MERGE_TAG",
    "CountingLoader",
    "NodeBuilder",
    "Refused",
    "expansion_char_budget",
]

MAX_ALIASES = 100
"""Most ``*alias`` references a document may contain."""
MAX_DEPTH = 64
"""Deepest nesting of mappings and sequences."""
EXPANSION_SLACK = 10_000
"""Nodes visited beyond twice the distinct ones before alias expansion is refused."""
EXPANSION_SLACK_CHARS = 64 * 1024
"""Characters of keys and values built beyond twice the file's length before expansion is
refused: anchors may be reused, but not to multiply a document's size."""

_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"


def expansion_char_budget(text_length: int) -> int:
    """Characters a document of ``text_length`` may expand to through aliases and merges."""
    return 2 * text_length + EXPANSION_SLACK_CHARS


class Refused(Exception):
    """Input refused outright; ``node`` (if known) says where."""

    def __init__(self, message: str, node: Node | None = None) -> None:
        super().__init__(message)
        self.node = node


class CountingLoader(yaml.SafeLoader):
    """SafeLoader that counts aliases, distinct nodes and nesting while composing.

    Nesting is refused here, before PyYAML's recursive composer can run out of stack.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.alias_count = 0
        self.node_count = 0
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            self.alias_count += 1
            if self.alias_count > MAX_ALIASES:
                raise Refused(
                    f"more than {MAX_ALIASES} aliases; refusing a possible alias bomb",
                    self._here(),
                )
            return super().compose_node(parent, index)
        self.node_count += 1
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH + 1:
                raise Refused(f"nesting deeper than {MAX_DEPTH} levels", self._here())
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def _here(self) -> Node:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        return ScalarNode("", "", event.start_mark, event.end_mark)


class NodeBuilder:
    """Turns nodes into plain Python data with budgets, so aliases cannot explode memory.

    Args:
        loader: the loader that composed the nodes (it constructs scalars).
        doc: receives non-fatal issues (duplicate keys).
        budget: nodes that may be visited, aliases expanded.
        char_budget: characters of scalars that may be built, aliases expanded.
    """

    def __init__(
        self, loader: yaml.SafeLoader, doc: YamlDocument, budget: int, char_budget: int
    ) -> None:
        self._loader = loader
        self._doc = doc
        self._budget = budget
        self._chars = char_budget
        self._open: set[int] = set()
        """Collection nodes being built right now: meeting one again is a circle."""

    def build(self, node: Node, depth: int) -> Any:
        self._budget -= 1
        if self._budget < 0:
            raise Refused("alias expansion too large; refusing a possible alias bomb", node)
        if depth > MAX_DEPTH:
            raise Refused(f"nesting deeper than {MAX_DEPTH} levels", node)
        if isinstance(node, ScalarNode):
            return self._scalar(node)
        if isinstance(node, SequenceNode):
            self._check_tag(node, _SEQ_TAG)
            with self._entered(node):
                return [self.build(item, depth + 1) for item in node.value]
        if isinstance(node, MappingNode):
            self._check_tag(node, _MAP_TAG)
            with self._entered(node):
                return self._mapping(node, depth)
        raise Refused(f"unsupported YAML node {type(node).__name__}", node)

    def _entered(self, node: Node) -> _Entered:
        if id(node) in self._open:
            raise Refused("an alias refers to a mapping or list that contains it (a cycle)", node)
        return _Entered(self._open, id(node))

    def _check_tag(self, node: Node, expected: str) -> None:
        if node.tag != expected:
            raise Refused(f"unsupported tag {node.tag!r}; only plain YAML is allowed", node)

    def _scalar(self, node: ScalarNode) -> Any:
        self._chars -= len(node.value)
        if self._chars < 0:
            raise Refused("alias expansion too large; refusing a possible alias bomb", node)
        try:
            return self._loader.construct_object(node)
        except yaml.constructor.ConstructorError as error:
            problem = error.problem or "cannot read this value"
            if "constructor for the tag" in problem:
                problem = f"unsupported tag {node.tag!r}; only plain YAML is allowed"
            raise Refused(problem, node) from None
        except Exception as error:  # a date like 2020-13-45, a 5000-digit integer, !!bool x
            raise Refused(f"cannot read this value: {error}", node) from None

    def _mapping(self, node: MappingNode, depth: int) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        seen: dict[Any, Node] = {}
        merged: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == MERGE_TAG:
                merged.update(self._merge_sources(value_node, depth))
                continue
            if not isinstance(key_node, ScalarNode):
                raise Refused("keys must be plain scalars", key_node)
            key = self._scalar(key_node)
            try:
                hash(key)
            except TypeError:
                raise Refused("keys must be plain scalars", key_node) from None
            if key in seen:
                first = seen[key].start_mark.line + 1
                self._doc.issues.append(
                    self._doc.issue_at(
                        key_node, f"duplicate key '{key}' (first defined on line {first})"
                    )
                )
            seen[key] = key_node
            result[key] = self.build(value_node, depth + 1)
        for key, value in merged.items():
            result.setdefault(key, value)
        return result

    def _merge_sources(self, value_node: Node, depth: int) -> dict[Any, Any]:
        sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
        merged: dict[Any, Any] = {}
        for source in sources:
            if not isinstance(source, MappingNode):
                raise Refused("'<<' merge needs a mapping or a list of mappings", source)
            built = self.build(source, depth + 1)
            for key, value in built.items():
                merged.setdefault(key, value)
        return merged


class _Entered:
    """Marks a collection node as being built for the duration of a ``with`` block."""

    __slots__ = ("_key", "_open")

    def __init__(self, open_nodes: set[int], key: int) -> None:
        self._open = open_nodes
        self._key = key

    def __enter__(self) -> None:
        self._open.add(self._key)

    def __exit__(self, *exc: object) -> None:
        self._open.discard(self._key)
