"""Text helpers shared by the docs site's generated reference pages (schemas and CLI)."""

from __future__ import annotations

import re

__all__ = ["inline", "table_cell"]

_CODE = re.compile(r"(`[^`]*`)")


def inline(text: str) -> str:
    """A docstring or help text as one Markdown line.

    Whitespace is collapsed, reStructuredText's ``code`` becomes Markdown's `code`, and ``<``,
    ``>`` outside code are escaped, so ``campaigns/<name>`` is shown rather than read as HTML.
    """
    text = " ".join(text.split()).replace("``", "`")
    parts = _CODE.split(text)
    for index in range(0, len(parts), 2):
        parts[index] = parts[index].replace("<", "&lt;").replace(">", "&gt;")
    return "".join(parts)


def table_cell(text: str) -> str:
    """``text`` made safe inside a Markdown table cell (pipes escaped, never empty)."""
    return text.replace("|", "\\|") or " "
