"""The node-level guards of safe YAML loading: composing with counted aliases, then building
plain Python data within a budget.

PyYAML composes a node graph in which an alias is a shared node; expanding it naively is how a
"billion laughs" document exhausts memory. ``CountingLoader`` counts aliases and distinct nodes
while composing (never expanding) and ``NodeBuilder`` turns nodes into plain data while spending
a budget proportional to that count, refusing tags, non-scalar keys and runaway nesting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

if TYPE_CHECKING:
    from campaigns.yamlio import YamlDocument

__all__ = [
    "EXPANSION_SLACK",
    "MAX_ALIASES",
    "MAX_DEPTH",
    "MERGE_TAG",
    "CountingLoader",
    "NodeBuilder",
    "Refused",
]

MAX_ALIASES = 100
"""Most ``*alias`` references a document may contain."""
MAX_DEPTH = 64
"""Deepest nesting of mappings and sequences."""
EXPANSION_SLACK = 10_000
"""Nodes visited beyond twice the distinct ones before alias expansion is refused."""

MERGE_TAG = "tag:yaml.org,2002:merge"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"


class Refused(Exception):
    """Input refused outright; ``node`` (if known) says where."""

    def __init__(self, message: str, node: Node | None = None) -> None:
        super().__init__(message)
        self.node = node


class CountingLoader(yaml.SafeLoader):
    """SafeLoader that counts aliases and distinct nodes while composing (never expanding)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.alias_count = 0
        self.node_count = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            self.alias_count += 1
            if self.alias_count > MAX_ALIASES:
                event = self.peek_event()
                raise Refused(
                    f"more than {MAX_ALIASES} aliases; refusing a possible alias bomb",
                    ScalarNode("", "", event.start_mark, event.end_mark),
                )
        else:
            self.node_count += 1
        return super().compose_node(parent, index)  # type: ignore[no-any-return]


class NodeBuilder:
    """Turns nodes into plain Python data with a budget, so aliases cannot explode memory."""

    def __init__(self, loader: yaml.SafeLoader, doc: YamlDocument, budget: int) -> None:
        self._loader = loader
        self._doc = doc
        self._budget = budget

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
            return [self.build(item, depth + 1) for item in node.value]
        if isinstance(node, MappingNode):
            self._check_tag(node, _MAP_TAG)
            return self._mapping(node, depth)
        raise Refused(f"unsupported YAML node {type(node).__name__}", node)

    def _check_tag(self, node: Node, expected: str) -> None:
        if node.tag != expected:
            raise Refused(f"unsupported tag {node.tag!r}; only plain YAML is allowed", node)

    def _scalar(self, node: ScalarNode) -> Any:
        try:
            return self._loader.construct_object(node)
        except yaml.constructor.ConstructorError as error:
            problem = error.problem or "cannot read this value"
            if "constructor for the tag" in problem:
                problem = f"unsupported tag {node.tag!r}; only plain YAML is allowed"
            raise Refused(problem, node) from None

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
            for key, value in self._mapping(source, depth + 1).items():
                merged.setdefault(key, value)
        return merged
