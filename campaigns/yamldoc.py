"""What a parsed YAML file is: its data, its node tree and the located issues found in it.

The lowest layer of the YAML loader: ``campaigns.yamlsafe`` builds data into a
:class:`YamlDocument`, ``campaigns.yamlparse`` reads files into one and
``campaigns.yamlvalidate`` maps validation errors back to its lines. Nothing here imports
those modules, so the loader has no import cycle.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from campaigns.basics import GlyphoxaError

__all__ = ["MERGE_TAG", "ContentError", "Issue", "Loc", "Severity", "YamlDocument"]

MERGE_TAG = "tag:yaml.org,2002:merge"

Loc = tuple[str | int, ...]


Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Issue:
    """One problem in one file, printed as ``file:line:column: message``.

    A ``warning`` is YAML that reads legally but probably not as meant (a sentence split at
    its commas); it is printed as ``file:line:column: warning: message`` and does not fail
    ``glyphoxa check`` unless ``--strict`` is given.
    """

    file: str
    line: int | None
    column: int | None
    message: str
    severity: Severity = "error"

    @property
    def where(self) -> str:
        """``file:line:column`` (as much of it as is known)."""
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return where

    def __str__(self) -> str:
        label = "warning: " if self.severity == "warning" else ""
        return f"{self.where}: {label}{self.message}"


class ContentError(GlyphoxaError):
    """One or more problems in campaign or config files; ``str()`` lists them all."""

    def __init__(self, issues: Iterable[Issue]) -> None:
        self.issues = list(issues)
        super().__init__("\n".join(str(issue) for issue in self.issues))


@dataclass(slots=True)
class YamlDocument:
    """Plain data of one YAML file plus its node tree, to map a data path back to a line."""

    path: Path
    data: Any
    root: Node | None
    issues: list[Issue] = field(default_factory=list)
    """Non-fatal problems found while reading (duplicate keys)."""
    text: str = ""
    """The source text, for checks that look at how a value was written."""

    def locate(self, loc: Loc) -> tuple[list[str | int], Node | None, bool]:
        """Follow ``loc`` through the node tree as far as it exists in the file.

        Returns the parts actually found, the deepest node reached (the key node when the last
        part names a key) and whether every part was found. Parts that do not exist in the file
        (pydantic union tags) are skipped.
        """
        node = self.root
        found: list[str | int] = []
        key_node: Node | None = None
        complete = True
        for index, part in enumerate(loc):
            child = _child(node, part) if node is not None else None
            if child is None:
                complete = False
                if index == len(loc) - 1:
                    break
                continue
            found.append(part)
            key_node, node = child
        last = key_node if complete and key_node is not None and isinstance(loc[-1], str) else None
        return found, last or node, complete

    def issue(
        self, loc: Loc, message: str, *, at_key: bool = False, severity: Severity = "error"
    ) -> Issue:
        """An Issue pointing at the value (or key) at ``loc``, or the nearest existing parent."""
        found, node, complete = self.locate(loc)
        if complete and not at_key and loc:
            value = _child_value(self, found)
            node = value if value is not None else node
        return self.issue_at(node, message, severity=severity)

    def issue_at(self, node: Node | None, message: str, *, severity: Severity = "error") -> Issue:
        """An Issue pointing at ``node`` (line 1 when there is none)."""
        if node is None:
            return Issue(str(self.path), 1, 1, message, severity)
        mark = node.start_mark
        return Issue(str(self.path), mark.line + 1, mark.column + 1, message, severity)


def _child(
    node: Node, part: str | int, seen: frozenset[int] = frozenset()
) -> tuple[Node | None, Node] | None:
    """(key node, value node) of ``part`` inside ``node``, following merge keys (never in a
    circle: the parser refuses cyclic merges, and ``seen`` makes sure of it)."""
    if id(node) in seen:
        return None
    if isinstance(node, SequenceNode) and isinstance(part, int):
        if 0 <= part < len(node.value):
            return None, node.value[part]
        return None
    if not isinstance(node, MappingNode):
        return None
    merges: list[Node] = []
    for key_node, value_node in node.value:
        if key_node.tag == MERGE_TAG:
            merges.append(value_node)
        elif isinstance(key_node, ScalarNode) and _scalar_matches(key_node, part):
            return key_node, value_node
    for merged in merges:
        sources = merged.value if isinstance(merged, SequenceNode) else [merged]
        for source in sources:
            hit = _child(source, part, seen | {id(node)})
            if hit is not None:
                return hit
    return None


def _scalar_matches(key_node: ScalarNode, part: str | int) -> bool:
    matches: bool = key_node.value == str(part)
    return matches


def _child_value(doc: YamlDocument, found: list[str | int]) -> Node | None:
    node = doc.root
    for part in found:
        hit = _child(node, part) if node is not None else None
        if hit is None:
            return None
        node = hit[1]
    return node
