"""Safe YAML loading that remembers where every value came from.

A DM edits these files by hand, so every problem must name the file, line and column, and all
problems of a file are reported at once. Loading is defensive: a size cap, no binary input, no
tabs in indentation, no duplicate keys, no object construction (only plain YAML types), and a
hard budget on alias expansion so a "billion laughs" document is refused in milliseconds (the
node-level guards live in ``campaigns.yamlsafe``).
Pydantic errors are translated back to the line that caused them, with "did you mean ...?" for
misspelt keys.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from campaigns.errors import GlyphoxaError
from campaigns.yamlsafe import (
    EXPANSION_SLACK,
    MAX_ALIASES,
    MAX_DEPTH,
    MERGE_TAG,
    CountingLoader,
    NodeBuilder,
    Refused,
)

__all__ = [
    "MAX_ALIASES",
    "MAX_BYTES",
    "MAX_DEPTH",
    "ContentError",
    "Issue",
    "Loaded",
    "Transform",
    "YamlDocument",
    "did_you_mean",
    "load_model",
    "parse_yaml",
    "pydantic_issues",
    "read_yaml",
    "validate_document",
]

log = logging.getLogger(__name__)

MAX_BYTES = 1024 * 1024
"""Largest YAML file we read; campaign files are small, anything bigger is a mistake."""

Loc = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Issue:
    """One problem in one file, printed as ``file:line:column: message``."""

    file: str
    line: int | None
    column: int | None
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return f"{where}: {self.message}"


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

    def issue(self, loc: Loc, message: str, *, at_key: bool = False) -> Issue:
        """An Issue pointing at the value (or key) at ``loc``, or the nearest existing parent."""
        found, node, complete = self.locate(loc)
        if complete and not at_key and loc:
            value = _child_value(self, found)
            node = value if value is not None else node
        return self.issue_at(node, message)

    def issue_at(self, node: Node | None, message: str) -> Issue:
        if node is None:
            return Issue(str(self.path), 1, 1, message)
        mark = node.start_mark
        return Issue(str(self.path), mark.line + 1, mark.column + 1, message)


def _child(node: Node, part: str | int) -> tuple[Node | None, Node] | None:
    """(key node, value node) of ``part`` inside ``node``, following merge keys."""
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
            hit = _child(source, part)
            if hit is not None:
                return hit
    return None


def _scalar_matches(key_node: ScalarNode, part: str | int) -> bool:
    return key_node.value == str(part)


def _child_value(doc: YamlDocument, found: list[str | int]) -> Node | None:
    node = doc.root
    for part in found:
        hit = _child(node, part) if node is not None else None
        if hit is None:
            return None
        node = hit[1]
    return node


def read_yaml(path: str | Path, *, max_bytes: int = MAX_BYTES) -> YamlDocument:
    """Read and parse one YAML file; raise ContentError for anything that is not safe YAML."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise ContentError(
                [Issue(str(path), None, None, f"file is {size} bytes; the limit is {max_bytes}")]
            )
        with path.open("rb") as handle:
            raw = handle.read(max_bytes + 1)
    except FileNotFoundError:
        raise ContentError([Issue(str(path), None, None, "file not found")]) from None
    except IsADirectoryError:
        raise ContentError([Issue(str(path), None, None, "is a directory, not a file")]) from None
    except OSError as error:
        raise ContentError([Issue(str(path), None, None, f"cannot read: {error}")]) from None
    if len(raw) > max_bytes:
        raise ContentError([Issue(str(path), None, None, f"file exceeds {max_bytes} bytes")])
    return parse_yaml(raw, path)


def parse_yaml(content: str | bytes, path: str | Path = "<string>") -> YamlDocument:
    """Parse YAML text (already read) with the same safety checks as :func:`read_yaml`."""
    path = Path(path)
    name = str(path)
    if isinstance(content, bytes):
        text = _decode(content, name)
    else:
        text = content
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise ContentError([Issue(name, line, None, "binary data (NUL byte); not a YAML file")])
    text = text.removeprefix("\ufeff")
    tab_issues = _tab_issues(text, name)
    if tab_issues:
        raise ContentError(tab_issues)
    loader = CountingLoader(text)
    try:
        root = loader.get_single_node()
    except Refused as refused:
        raise ContentError([_refused_issue(name, refused)]) from None
    except yaml.MarkedYAMLError as error:
        raise ContentError([_syntax_issue(name, error)]) from None
    except yaml.YAMLError as error:
        raise ContentError([Issue(name, None, None, f"not valid YAML: {error}")]) from None
    except RecursionError:
        raise ContentError([Issue(name, None, None, "nesting too deep")]) from None
    finally:
        loader.dispose()
    doc = YamlDocument(path=path, data=None, root=root)
    if root is None:
        return doc
    builder = NodeBuilder(loader, doc, budget=2 * loader.node_count + EXPANSION_SLACK)
    try:
        doc.data = builder.build(root, 0)
    except Refused as refused:
        raise ContentError([_refused_issue(name, refused)]) from None
    return doc


def _decode(raw: bytes, name: str) -> str:
    if b"\x00" in raw:
        line = raw.count(b"\n", 0, raw.index(b"\x00")) + 1
        raise ContentError([Issue(name, line, None, "binary data (NUL byte); not a YAML file")])
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        message = f"not UTF-8 text (byte 0x{raw[error.start]:02x}); save the file as UTF-8"
        raise ContentError([Issue(name, line, None, message)]) from None


def _tab_issues(text: str, name: str) -> list[Issue]:
    issues = []
    for number, line in enumerate(text.splitlines(), start=1):
        indent = len(line) - len(line.lstrip(" \t"))
        if "\t" in line[:indent] and line.strip():
            column = line.index("\t") + 1
            issues.append(Issue(name, number, column, "tab used for indentation; use spaces"))
            if len(issues) >= 20:
                break
    return issues


_SYNTAX_HINTS = (
    ("mapping values are not allowed here", "check the indentation, or quote a value with ': '"),
    ("could not find expected ':'", "a key needs ':' after it, or a long value needs '|'"),
    ("did not find expected key", "check the indentation of this line against the one above"),
    ("expected <block end>", "this line's indentation does not match the lines above it"),
    ("but got '{'", "inside [...] or {...}, put ${VAR} references in quotes"),
    ("did not find expected '-' indicator", "list items must line up under each other"),
    ("found character '%' that cannot start any token", "quote values starting with '%'"),
    ("found character '@' that cannot start any token", "quote values starting with '@'"),
    ("found character '`' that cannot start any token", "quote values starting with '`'"),
)


def _syntax_issue(name: str, error: yaml.MarkedYAMLError) -> Issue:
    mark = error.problem_mark or error.context_mark
    problem = error.problem or "invalid YAML"
    message = f"YAML syntax error: {problem}"
    if error.context:
        message += f" ({error.context})"
    for needle, hint in _SYNTAX_HINTS:
        if needle in problem:
            message += f"; {hint}"
            break
    context = error.context_mark
    if (
        context is not None
        and "end of stream" in problem
        and "quoted scalar" in (error.context or "")
    ):
        # The end of the file is not where the mistake is: the unclosed quote is.
        message = "YAML syntax error: this quote is never closed"
        mark = context
    if mark is None:
        return Issue(name, None, None, message)
    return Issue(name, mark.line + 1, mark.column + 1, message)


def _refused_issue(name: str, refused: Refused) -> Issue:
    if refused.node is None:
        return Issue(name, None, None, str(refused))
    mark = refused.node.start_mark
    return Issue(name, mark.line + 1, mark.column + 1, str(refused))


# The validation half lives in campaigns.yamlvalidate (which imports this module); its public
# names are re-exported lazily so callers need only ``campaigns.yamlio``.
_VALIDATION_NAMES = frozenset(
    {"Loaded", "Transform", "did_you_mean", "load_model", "pydantic_issues", "validate_document"}
)

if TYPE_CHECKING:
    from campaigns.yamlvalidate import (
        Loaded,
        Transform,
        did_you_mean,
        load_model,
        pydantic_issues,
        validate_document,
    )


def __getattr__(name: str) -> Any:
    if name in _VALIDATION_NAMES:
        from campaigns import yamlvalidate

        return getattr(yamlvalidate, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
