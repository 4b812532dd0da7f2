"""Validation half of the YAML loader: pydantic errors mapped back to file, line and column.

Every problem is reported at once, messages name the key (``voice.speed: ...``), misspelt keys
and enum values get "did you mean ...?", and input values are never echoed (they may be
secrets expanded from the environment). ``campaigns.yamlio`` re-exports everything public here;
this module imports only the layers below it (``yamldoc``, ``yamlparse``, ``yamlhints``,
``yamlmessages``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from campaigns.suggest import did_you_mean
from campaigns.yamldoc import ContentError, Issue, Loc, YamlDocument
from campaigns.yamlhints import CommaSplit, comma_split_key
from campaigns.yamlmessages import dotted, keys_at, misplaced_key, readable_message
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
            message = _unknown_key(doc, model, loc)
            if found[:-1]:
                message = f"{dotted(found[:-1])}: {message}"
            issue = doc.issue(loc, message, at_key=True)
        elif kind == "missing":
            prefix = f"{dotted(found)}: " if found else ""
            issue = doc.issue(tuple(found), f"{prefix}missing required key '{loc[-1]}'")
        elif (split := _null_from_comma(doc, tuple(found), detail)) is not None:
            prefix = f"{dotted(found[:-1])}: " if found[:-1] else ""
            message = f"{prefix}'{found[-1]}' is not a key: {split.explain()}"
            issue = doc.issue(tuple(found), message, at_key=True)
        else:
            key = found[-1] if found and isinstance(found[-1], str) else None
            message = readable_message(detail, key)
            prefix = f"{dotted(found)}: " if found else ""
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
        issues.append(Issue(str(doc.path), place[0], place[1], _joined(messages)))
    return issues


def _joined(messages: list[str]) -> str:
    """Several errors at one place (the members of a union) as one sentence when they are all
    ``"<key>: expected ..."``: ``"port: expected text or a whole number"``."""
    parts = [message.partition("expected ") for message in messages]
    prefixes = {before for before, found, _ in parts if found}
    if len(messages) > 1 and len(prefixes) == 1 and all(found for _, found, _ in parts):
        wanted = [after.split(";")[0] for _, _, after in parts]
        return f"{prefixes.pop()}expected {', '.join(wanted[:-1])} or {wanted[-1]}"
    return " | ".join(messages)


def _null_from_comma(doc: YamlDocument, loc: Loc, detail: Any) -> CommaSplit | None:
    """The comma split behind an empty value at ``loc`` (``{class: ranger, wet}``)."""
    if detail.get("input", "") is not None or not loc or not isinstance(loc[-1], str):
        return None
    return comma_split_key(doc, loc)


def _unknown_key(doc: YamlDocument, model: type[BaseModel], loc: Loc) -> str:
    """Why a key is unknown: a comma that split a flow mapping, a key that belongs elsewhere
    in the schema, or a misspelling."""
    key = str(loc[-1])
    split = comma_split_key(doc, loc)
    if split is not None:
        return f"'{key}' is not a key: {split.explain()}"
    choices = keys_at(model, loc[:-1])
    if key.lower() not in (choice.lower() for choice in choices):
        home = misplaced_key(model, loc, _value_text(doc, loc), lambda path: doc.locate(path)[2])
        if home is not None:
            return home
    return f"unknown key '{key}'" + did_you_mean(key, choices)


def _value_text(doc: YamlDocument, loc: Loc) -> str | None:
    """How the value at ``loc`` was written, when it is one short line."""
    _found, _node, complete = doc.locate(loc)
    if not complete or not doc.text:
        return None
    value = doc.issue(loc, "")  # the value's position
    lines = doc.text.splitlines()
    if value.line is None or value.column is None or not 0 < value.line <= len(lines):
        return None  # an empty value at the very end ("? ---"): nothing was written
    line = lines[value.line - 1]
    text = line[value.column - 1 :].split(" #")[0].strip()
    return text if text and len(text) <= 40 and not text.endswith(":") else None


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
