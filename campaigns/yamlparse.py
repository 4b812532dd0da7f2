"""Reading YAML files safely: size cap, no binary input, no tabs in indentation, located
syntax errors with hints, and the node-level guards of ``campaigns.yamlsafe``.

A DM edits these files by hand, so every problem names the file, line and column.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from campaigns.yamldoc import ContentError, Issue, YamlDocument
from campaigns.yamlsafe import (
    EXPANSION_SLACK,
    CountingLoader,
    NodeBuilder,
    Refused,
    expansion_char_budget,
)

__all__ = ["MAX_BYTES", "parse_yaml", "read_yaml"]

MAX_BYTES = 1024 * 1024
"""Largest YAML file we read; campaign files are small, anything bigger is a mistake."""


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
    except RecursionError:  # the composer refuses deep nesting first; this is a backstop
        raise ContentError([Issue(name, None, None, "nesting too deep")]) from None
    finally:
        loader.dispose()
    doc = YamlDocument(path=path, data=None, root=root, text=text)
    if root is None:
        return doc
    builder = NodeBuilder(
        loader,
        doc,
        budget=2 * loader.node_count + EXPANSION_SLACK,
        char_budget=expansion_char_budget(len(text)),
    )
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
