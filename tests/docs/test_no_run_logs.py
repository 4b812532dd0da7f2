"""No page, docstring or comment carries a run log: dates and issue numbers belong in the
changelog, where history is kept; the docs and the code say the rule and the reason.

Dated measurements go stale the day the code moves, and "issue 18" means nothing to a reader
without the tracker, so both are kept out of what readers take as the current truth.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

from .snippets import ROOT, doc_files

DATE = re.compile(r"\b20\d\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])\b")  # a real date
ISSUE = re.compile(r"\bissues? #?\d+", re.IGNORECASE)
#: MCP protocol revisions are names, not dates of a run.
PROTOCOL_REVISIONS = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"}
PACKAGES = ("bot", "npcs", "tools", "campaigns", "scripts")


def _problems(text: str) -> list[str]:
    dates = [d for d in DATE.findall(text) if d not in PROTOCOL_REVISIONS]
    return dates + ISSUE.findall(text)


def _comments_and_docstrings(path: Path) -> Iterator[tuple[int, str]]:
    source = path.read_text(encoding="utf-8")
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            for statement in node.body:
                value = getattr(statement, "value", None)
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    yield statement.lineno, value.value


def test_pages_carry_no_dates_or_issue_numbers() -> None:
    found = [
        f"{path.relative_to(ROOT)}: {problem}"
        for path in doc_files()
        for problem in _problems(path.read_text(encoding="utf-8"))
    ]
    assert not found, f"history belongs in CHANGELOG.md: {found}"


def test_docstrings_and_comments_carry_no_dates_or_issue_numbers() -> None:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:  # Alembic records each revision's creation date
                continue
            for line, text in _comments_and_docstrings(path):
                found += [f"{path.relative_to(ROOT)}:{line}: {p}" for p in _problems(text)]
    assert not found, f"say the rule and the reason instead: {found}"
