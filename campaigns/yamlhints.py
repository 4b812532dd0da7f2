"""YAML that reads legally but probably not as the DM meant: found from how it was written.

Each finding is a warning (``Issue(severity="warning")``) with the line and the quoted fix:

- a flow list that split a sentence at its commas (``secret_knowledge: [Her husband, Lord
  Aldric, pushed her]`` is three secrets); only for prose lists, and only when a later item
  starts in lower case, the mark of a sentence that goes on;
- a list item indented differently from the one above, which YAML joins to it as one text
  (a plain scalar running over several lines, one of them starting with ``- ``);
- a flow mapping split at a comma (``{text: Chain shirt, slightly rusty}`` reads
  ``slightly rusty`` as a key of its own); :func:`comma_split_key` lets the validator explain
  the "unknown key" error this usually causes.

Only the node tree and the source text are read; nothing here knows the models.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator
from dataclasses import dataclass

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from campaigns.yamldoc import Issue, Loc, YamlDocument

__all__ = ["CommaSplit", "comma_split_key", "yaml_warnings"]

_NULL_TAG = "tag:yaml.org,2002:null"


@dataclass(frozen=True, slots=True)
class CommaSplit:
    """A flow-mapping key that is really the rest of the value before it."""

    key: str
    before: str
    """The value the comma cut short (``Chain shirt``)."""
    fix: str
    """The mapping as it was probably meant: ``{text: "Chain shirt, slightly rusty"}``."""

    def explain(self) -> str:
        return (
            f"the comma after '{self.before}' ended that text, so YAML read '{self.key}' as a "
            f"key of its own; put the text in quotes: {self.fix}"
        )


def yaml_warnings(doc: YamlDocument, prose_fields: Collection[str] = ()) -> list[Issue]:
    """Every warning of one document; ``prose_fields`` are the top-level keys whose lists hold
    sentences (an NPC's ``secret_knowledge``, ``behavior_rules``, ``filler_lines``)."""
    if doc.root is None or not doc.text:
        return []
    lines = doc.text.splitlines()
    issues: list[Issue] = []
    for path, node, parent in _walk(doc.root, ()):
        if (
            isinstance(node, SequenceNode)
            and node.flow_style
            and len(path) == 1
            and (path[0] in prose_fields)
        ):
            message = _split_sentence(doc.text, str(path[0]), node)
            if message is not None:
                issues.append(doc.issue_at(node, message, severity="warning"))
        elif isinstance(node, ScalarNode) and node.style is None:
            message = _merged_item(lines, node, parent)
            if message is not None:
                issues.append(doc.issue_at(node, message, severity="warning"))
        elif isinstance(node, MappingNode) and node.flow_style:
            for key_node, split in _comma_splits(doc.text, node):
                issues.append(doc.issue_at(key_node, split.explain(), severity="warning"))
    return issues


def comma_split_key(doc: YamlDocument, loc: Loc) -> CommaSplit | None:
    """The comma split behind an unknown key at ``loc``, if that is what it is."""
    node = _node_at(doc.root, loc[:-1])
    if not isinstance(node, MappingNode) or not node.flow_style:
        return None
    for key_node, split in _comma_splits(doc.text, node):
        if key_node.value == str(loc[-1]):
            return split
    return None


def _node_at(node: Node | None, loc: Loc) -> Node | None:
    """The value node at ``loc`` (plain keys and indexes; merge keys are not followed)."""
    for part in loc:
        if isinstance(node, SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        elif isinstance(node, MappingNode):
            node = next((v for k, v in node.value if k.value == str(part)), None)
        else:
            return None
    return node


def _walk(
    node: Node, path: Loc, parent: Node | None = None
) -> Iterator[tuple[Loc, Node, Node | None]]:
    """Every node with its data path and parent; aliases are visited once."""
    seen: set[int] = set()
    stack: list[tuple[Loc, Node, Node | None]] = [(path, node, parent)]
    while stack:
        here, current, above = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield here, current, above
        if isinstance(current, MappingNode):
            for key_node, value_node in reversed(current.value):
                key = key_node.value if isinstance(key_node, ScalarNode) else "?"
                stack.append(((*here, key), value_node, current))
        elif isinstance(current, SequenceNode):
            for index in reversed(range(len(current.value))):
                stack.append(((*here, index), current.value[index], current))


def _split_sentence(text: str, field: str, node: SequenceNode) -> str | None:
    items = node.value
    if len(items) < 2 or not all(isinstance(i, ScalarNode) and i.style is None for i in items):
        return None
    words = [str(item.value) for item in items]
    if not any(word[:1].islower() for word in words[1:]):
        return None
    inside = text[node.start_mark.index + 1 : node.end_mark.index - 1].strip()
    shown = " | ".join(f"'{word}'" for word in words)
    return (
        f"{field}: the commas split this into {len(words)} items ({shown}); if it is one "
        f"sentence, quote it as one item: - {_quoted(inside)}"
    )


def _merged_item(lines: list[str], node: ScalarNode, parent: Node | None) -> str | None:
    first, last = node.start_mark.line, node.end_mark.line
    if last <= first:
        return None
    for number in range(first + 1, min(last, len(lines) - 1) + 1):
        stripped = lines[number].strip()
        if stripped != "-" and not stripped.startswith("- "):
            continue
        joined = " ".join(str(node.value).split())
        if isinstance(parent, SequenceNode) and not parent.flow_style:
            dash = lines[first].rfind("-", 0, node.start_mark.column)
            fixed = " " * max(dash, 0) + stripped
            return (
                f"line {number + 1} ('{stripped}') is indented differently from this list item, "
                f"so YAML joined them into one item: '{joined}'; line the '-' up with the one "
                f'above: "{fixed}"'
            )
        return (
            f"line {number + 1} ('{stripped}') continues this text, so YAML read one text: "
            f"'{joined}'; for a list, put each '- ' item on its own line under the key, "
            "lined up"
        )
    return None


def _comma_splits(text: str, node: MappingNode) -> Iterator[tuple[ScalarNode, CommaSplit]]:
    """Each key that is really the continuation of the plain value before it (a run of them
    for a value with several commas), with the whole mapping as it was probably meant."""
    entries = node.value
    index = 0
    while index < len(entries):
        _key, value_node = entries[index]
        run = 0
        while index + run + 1 < len(entries) and _implicit_null(text, *entries[index + run + 1]):
            run += 1
        if not run or not (isinstance(value_node, ScalarNode) and value_node.style is None):
            index += max(run, 1)
            continue
        pieces = [str(value_node.value)]
        pieces += [str(k.value) for k, _ in entries[index + 1 : index + run + 1]]
        parts = []
        for position, (k, v) in enumerate(entries):
            if position == index:
                parts.append(f"{k.value}: {_quoted(', '.join(pieces))}")
            elif not index < position <= index + run:
                parts.append(_entry_text(text, k, v))
        split = CommaSplit("", pieces[0], "{" + ", ".join(parts) + "}")
        for k, _ in entries[index + 1 : index + run + 1]:
            yield k, CommaSplit(str(k.value), split.before, split.fix)
        index += run + 1


def _implicit_null(text: str, key_node: Node, value_node: Node) -> bool:
    """A key written without ``:`` (``{a: b, c}``): its value is an empty null."""
    if not isinstance(key_node, ScalarNode) or key_node.style is not None:
        return False
    if not (isinstance(value_node, ScalarNode) and value_node.tag == _NULL_TAG):
        return False
    if value_node.value != "":
        return False
    after = text[key_node.end_mark.index :].lstrip(" ")
    return not after.startswith(":")


def _entry_text(text: str, key_node: Node, value_node: Node) -> str:
    return text[key_node.start_mark.index : value_node.end_mark.index].strip()


def _quoted(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)
