"""Safe YAML loading that remembers where every value came from: the one import for callers.

A DM edits these files by hand, so every problem must name the file, line and column, and all
problems of a file are reported at once. Loading is defensive: a size cap, no binary input, no
tabs in indentation, no duplicate keys, no object construction (only plain YAML types), no
alias circles, and hard budgets on alias expansion (nodes and characters) so a "billion
laughs" document is refused in milliseconds. Pydantic errors are translated back to the line
that caused them, with "did you mean ...?" for misspelt keys.

The layers, each importing only those before it: ``yamldoc`` (documents and issues) <-
``yamlsafe`` (node guards) <- ``yamlparse`` (reading files) <- ``yamlvalidate`` (pydantic
errors mapped to lines) <- this facade.
"""

from __future__ import annotations

from campaigns.yamldoc import ContentError, Issue, YamlDocument
from campaigns.yamlparse import MAX_BYTES, parse_yaml, read_yaml
from campaigns.yamlsafe import MAX_ALIASES, MAX_DEPTH
from campaigns.yamlvalidate import (
    Loaded,
    Transform,
    did_you_mean,
    load_model,
    pydantic_issues,
    validate_document,
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
