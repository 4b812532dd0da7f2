"""Validation half of the YAML loader: pydantic errors mapped back to file, line and column.

Every problem is reported at once, messages name the key (``voice.speed: ...``), misspelt keys
and enum values get "did you mean ...?", and input values are never echoed (they may be
secrets expanded from the environment). ``campaigns.yamlio`` re-exports everything public here;
this module imports only the layers below it (``yamldoc``, ``yamlparse``).
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from campaigns.yamldoc import ContentError, Issue, YamlDocument
from campaigns.yamlparse import read_yaml

__all__ = [
    "Loaded",
    "Transform",
    "did_you_mean",
    "load_model",
    "pydantic_issues",
    "validate_document",
]

M = TypeVar("M", bound=BaseModel)
Loc = tuple[str | int, ...]


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
