"""Safe YAML loading that remembers where every value came from.

A DM edits these files by hand, so every problem must name the file, line and column, and all
problems of a file are reported at once. Loading is defensive: a size cap, no binary input, no
tabs in indentation, no duplicate keys, no object construction (only plain YAML types), and a
hard budget on alias expansion so a "billion laughs" document is refused in milliseconds.
Pydantic errors are translated back to the line that caused them, with "did you mean ...?" for
misspelt keys.
"""

from __future__ import annotations

import difflib
import logging
import re
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import yaml
from pydantic import BaseModel, ValidationError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from campaigns.errors import GlyphoxaError

__all__ = [
    "MAX_ALIASES",
    "MAX_BYTES",
    "MAX_DEPTH",
    "ContentError",
    "Issue",
    "Loaded",
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
MAX_ALIASES = 100
"""Most ``*alias`` references a document may contain."""
MAX_DEPTH = 64
"""Deepest nesting of mappings and sequences."""
_EXPANSION_SLACK = 10_000
"""Nodes visited beyond twice the distinct ones before alias expansion is refused."""

_MERGE_TAG = "tag:yaml.org,2002:merge"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"

M = TypeVar("M", bound=BaseModel)
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


class _Refused(Exception):
    def __init__(self, message: str, node: Node | None = None) -> None:
        super().__init__(message)
        self.node = node


class _CountingLoader(yaml.SafeLoader):
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
                raise _Refused(
                    f"more than {MAX_ALIASES} aliases; refusing a possible alias bomb",
                    ScalarNode("", "", event.start_mark, event.end_mark),
                )
        else:
            self.node_count += 1
        return super().compose_node(parent, index)  # type: ignore[no-any-return]


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
        if key_node.tag == _MERGE_TAG:
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
    loader = _CountingLoader(text)
    try:
        root = loader.get_single_node()
    except _Refused as refused:
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
    builder = _Builder(loader, doc, budget=2 * loader.node_count + _EXPANSION_SLACK)
    try:
        doc.data = builder.build(root, 0)
    except _Refused as refused:
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


def _refused_issue(name: str, refused: _Refused) -> Issue:
    if refused.node is None:
        return Issue(name, None, None, str(refused))
    mark = refused.node.start_mark
    return Issue(name, mark.line + 1, mark.column + 1, str(refused))


class _Builder:
    """Turns nodes into plain Python data with a budget, so aliases cannot explode memory."""

    def __init__(self, loader: yaml.SafeLoader, doc: YamlDocument, budget: int) -> None:
        self._loader = loader
        self._doc = doc
        self._budget = budget

    def build(self, node: Node, depth: int) -> Any:
        self._budget -= 1
        if self._budget < 0:
            raise _Refused("alias expansion too large; refusing a possible alias bomb", node)
        if depth > MAX_DEPTH:
            raise _Refused(f"nesting deeper than {MAX_DEPTH} levels", node)
        if isinstance(node, ScalarNode):
            return self._scalar(node)
        if isinstance(node, SequenceNode):
            self._check_tag(node, _SEQ_TAG)
            return [self.build(item, depth + 1) for item in node.value]
        if isinstance(node, MappingNode):
            self._check_tag(node, _MAP_TAG)
            return self._mapping(node, depth)
        raise _Refused(f"unsupported YAML node {type(node).__name__}", node)

    def _check_tag(self, node: Node, expected: str) -> None:
        if node.tag != expected:
            raise _Refused(f"unsupported tag {node.tag!r}; only plain YAML is allowed", node)

    def _scalar(self, node: ScalarNode) -> Any:
        try:
            return self._loader.construct_object(node)
        except yaml.constructor.ConstructorError as error:
            problem = error.problem or "cannot read this value"
            if "constructor for the tag" in problem:
                problem = f"unsupported tag {node.tag!r}; only plain YAML is allowed"
            raise _Refused(problem, node) from None

    def _mapping(self, node: MappingNode, depth: int) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        seen: dict[Any, Node] = {}
        merged: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                merged.update(self._merge_sources(value_node, depth))
                continue
            if not isinstance(key_node, ScalarNode):
                raise _Refused("keys must be plain scalars", key_node)
            key = self._scalar(key_node)
            try:
                hash(key)
            except TypeError:
                raise _Refused("keys must be plain scalars", key_node) from None
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
                raise _Refused("'<<' merge needs a mapping or a list of mappings", source)
            for key, value in self._mapping(source, depth + 1).items():
                merged.setdefault(key, value)
        return merged


def validate_document(
    doc: YamlDocument,
    model: type[M],
    *,
    allow_empty: bool = False,
) -> tuple[M | None, list[Issue]]:
    """Validate a document against a model; return the value (if valid) and every issue found."""
    issues = list(doc.issues)
    data = doc.data
    if data is None:
        if not allow_empty:
            issues.append(Issue(str(doc.path), 1, 1, f"file is empty; {_expected(model)}"))
            return None, issues
        data = {}
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"a {type(data).__name__} value"
        issues.append(doc.issue_at(doc.root, f"found {kind} at top level; {_expected(model)}"))
        return None, issues
    try:
        value = model.model_validate(data)
    except ValidationError as error:
        issues.extend(pydantic_issues(doc, model, error))
        return None, _sorted(issues)
    return (value if not issues else None), _sorted(issues)


def _sorted(issues: list[Issue]) -> list[Issue]:
    return sorted(issues, key=lambda issue: (issue.line or 0, issue.column or 0))


def _expected(model: type[BaseModel]) -> str:
    required = [
        info.alias or name for name, info in model.model_fields.items() if info.is_required()
    ]
    if required:
        return "expected a mapping with " + ", ".join(required)
    return "expected a mapping of keys"


def pydantic_issues(
    doc: YamlDocument, model: type[BaseModel], error: ValidationError
) -> list[Issue]:
    """Translate a ValidationError into located, readable Issues (one per place)."""
    by_place: dict[tuple[int | None, int | None, str], list[str]] = {}
    order: list[tuple[int | None, int | None, str]] = []
    for detail in error.errors(include_url=False, include_input=True):
        loc: Loc = tuple(detail["loc"])
        kind = detail["type"]
        found = doc.locate(loc)[0] if loc else []
        if kind == "extra_forbidden":
            key = str(loc[-1])
            message = f"unknown key '{key}'"
            choices = _keys_at(model, loc[:-1])
            message += did_you_mean(key, choices)
            if found[:-1]:
                message = f"{_dotted(found[:-1])}: {message}"
            issue = doc.issue(loc, message, at_key=True)
        elif kind == "missing":
            prefix = f"{_dotted(found)}: " if found else ""
            issue = doc.issue(tuple(found), f"{prefix}missing required key '{loc[-1]}'")
        else:
            message = _clean_message(detail)
            prefix = f"{_dotted(found)}: " if found else ""
            issue = doc.issue(tuple(found), prefix + message)
        place = (issue.line, issue.column, issue.message.split(":")[0])
        if place not in by_place:
            by_place[place] = []
            order.append(place)
            by_place[place].append(issue.message)
        elif issue.message not in by_place[place]:
            by_place[place].append(issue.message)
    issues = []
    for place in order:
        messages = by_place[place]
        issues.append(Issue(str(doc.path), place[0], place[1], " | ".join(messages)))
    return issues


def _clean_message(detail: Any) -> str:
    message: str = detail["msg"]
    message = message.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    message = re.sub(
        r"a valid dictionary or instance of \w+", "a mapping of keys (key: value)", message
    )
    kind = detail["type"]
    given = detail.get("input")
    if kind == "string_type" and isinstance(given, dict):
        message += " (text containing ': ' becomes a mapping; put the text in quotes)"
    elif kind == "string_type" and isinstance(given, bool):
        message += " (yes/no/on/off/true/false are booleans in YAML; put the word in quotes)"
    if kind in {"enum", "literal_error"} and isinstance(given, str):
        choices = re.findall(r"'([^']*)'", str(detail.get("ctx", {}).get("expected", "")))
        message = f"'{given}' is not allowed; {message[0].lower()}{message[1:]}"
        message += did_you_mean(given, choices)
    return message


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest choice, or an empty string."""
    choices = list(choices)
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    if not close:
        lowered = {c.lower(): c for c in choices}
        close = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
        close = [lowered[c] for c in close]
    return f"; did you mean '{close[0]}'?" if close else ""


def _dotted(parts: Iterable[str | int]) -> str:
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def _keys_at(model: type[BaseModel], loc: Loc) -> list[str]:
    """Keys the models at ``loc`` accept, for "did you mean" suggestions."""
    current: list[Any] = [model]
    for part in loc:
        following: list[Any] = []
        for annotation in current:
            following.extend(_step(annotation, part))
        if following:
            current = following
    keys: list[str] = []
    for annotation in current:
        for candidate in _flatten(annotation):
            if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                for name, info in candidate.model_fields.items():
                    keys.append(info.alias or name)
    return keys


def _flatten(annotation: Any) -> list[Any]:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _flatten(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [flat for arg in typing.get_args(annotation) for flat in _flatten(arg)]
    return [annotation]


def _step(annotation: Any, part: str | int) -> list[Any]:
    following: list[Any] = []
    for candidate in _flatten(annotation):
        origin = typing.get_origin(candidate)
        args = typing.get_args(candidate)
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            for name, info in candidate.model_fields.items():
                if part in (name, info.alias):
                    following.append(info.annotation)
        elif origin in (list, tuple, set, frozenset) and isinstance(part, int) and args:
            following.append(args[0])
        elif origin is dict and args and isinstance(part, str):
            following.append(args[1])
    return following


@dataclass(slots=True)
class Loaded(Generic[M]):
    """Outcome of loading one file: the model when valid, and every issue found."""

    path: Path
    value: M | None
    document: YamlDocument | None
    issues: list[Issue]

    @property
    def ok(self) -> bool:
        return self.value is not None and not self.issues

    def unwrap(self) -> M:
        """The value, or ContentError listing every issue."""
        if self.value is None or self.issues:
            raise ContentError(self.issues or [Issue(str(self.path), None, None, "invalid")])
        return self.value


Transform = Callable[[YamlDocument], list[Issue]]


def load_model(
    path: str | Path,
    model: type[M],
    *,
    allow_empty: bool = False,
    transform: Transform | None = None,
) -> Loaded[M]:
    """Read, (optionally) transform and validate one file; never raises for content problems.

    ``transform`` may rewrite ``doc.data`` in place (e.g. ``${VAR}`` expansion) and returns
    issues of its own.
    """
    path = Path(path)
    try:
        doc = read_yaml(path)
    except ContentError as error:
        return Loaded(path, None, None, error.issues)
    extra: list[Issue] = transform(doc) if transform is not None else []
    value, issues = validate_document(doc, model, allow_empty=allow_empty)
    issues = extra + issues
    return Loaded(path, value if not issues else None, doc, issues)
