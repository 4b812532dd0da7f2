"""Validation errors in a DM's words: what is wrong and the form that is right.

Pydantic's wording ("Input should be a valid list") says neither what the file should say nor
how; here every common error kind gets its own sentence, a list written as text is shown as a
list (``tools: [roll, roll_table]``), and a key in the wrong place says where it belongs
(``pitch_shift`` at the top of an NPC file belongs under ``voice:``), found by searching the
model tree, so it stays true as the schema grows. Input values are quoted only where the DM
needs them to see the fix; nothing here reads secrets (they are validated as ``SecretStr``).
"""

from __future__ import annotations

import json
import re
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel

from campaigns.suggest import did_you_mean
from campaigns.yamldoc import Loc

__all__ = ["dotted", "keys_at", "list_form", "misplaced_key", "readable_message"]

_SIMPLE = {
    "dict_type": "expected a mapping of keys (key: value)",
    "model_type": "expected a mapping of keys (key: value)",
    "model_attributes_type": "expected a mapping of keys (key: value)",
    "string_type": "expected text",
    "int_type": "expected a whole number",
    "int_parsing": "expected a whole number",
    "int_from_float": "expected a whole number, not a fraction",
    "float_type": "expected a number",
    "float_parsing": "expected a number",
    "bool_type": "expected true or false",
    "bool_parsing": "expected true or false",
    "none_required": "expected no value here",
}

_BOUNDS = {
    "greater_than": ("gt", "must be greater than {}"),
    "greater_than_equal": ("ge", "must be at least {}"),
    "less_than": ("lt", "must be less than {}"),
    "less_than_equal": ("le", "must be at most {}"),
    "string_too_long": ("max_length", "must be at most {} characters"),
    "too_short": ("min_length", "needs at least {} item(s)"),
    "too_long": ("max_length", "may have at most {} item(s)"),
}


def readable_message(detail: Any, key: str | None) -> str:
    """One pydantic error detail as a sentence; ``key`` is the YAML key it belongs to."""
    kind: str = detail["type"]
    given = detail.get("input")
    ctx = detail.get("ctx") or {}
    if given is None and (kind.endswith("_type") or kind.endswith("_parsing")):
        if key is None:
            return "is empty; write a value (or remove the item)"
        return "has no value; write one after the ':' (or remove the key)"
    if kind in ("value_error", "assertion_error"):
        message: str = detail["msg"]
        return message.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    if kind == "list_type":
        if isinstance(given, str):
            return "expected a list" + list_form(key, given)
        kind_of = "a mapping of keys" if isinstance(given, dict) else "one value"
        return f"expected a list, not {kind_of}; write each item on its own line as '- item'"
    if kind in ("enum", "literal_error"):
        choices = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
        shown = f"'{given}'" if isinstance(given, str | int | float) else "this value"
        return f"{shown} is not allowed; choose {_either(choices)}" + (
            did_you_mean(given, choices) if isinstance(given, str) else ""
        )
    if kind == "union_tag_invalid":
        tags = re.findall(r"'([^']*)'", str(ctx.get("expected_tags", "")))
        return (
            f"'{ctx.get('tag')}' is not a known {ctx.get('discriminator', 'type')}".replace(
                "'type'", "type"
            )
            + f"; choose {_either(tags)}"
            + did_you_mean(str(ctx.get("tag")), tags)
        )
    if kind == "union_tag_not_found":
        return f"missing required key {ctx.get('discriminator', 'type')}"
    if kind == "string_too_short":
        minimum = ctx.get("min_length", 1)
        return "must not be empty" if minimum == 1 else f"must be at least {minimum} characters"
    if kind == "string_pattern_mismatch":
        return f"is not in the expected form (pattern {ctx.get('pattern')})"
    if kind in _BOUNDS:
        name, text = _BOUNDS[kind]
        return text.format(_number(ctx.get(name)))
    message = _SIMPLE.get(kind) or str(detail["msg"])
    if kind == "string_type" and isinstance(given, dict):
        message += " (text containing ': ' becomes a mapping; put the text in quotes)"
    elif kind == "string_type" and isinstance(given, bool):
        message += " (yes/no/on/off/true/false are booleans in YAML; put the word in quotes)"
    elif kind == "string_type" and isinstance(given, int | float):
        message += " (put the number in quotes to make it text)"
    return message


def list_form(key: str | None, text: str) -> str:
    """``"; write tools: [roll, roll_table]"``: a list written as plain text, shown as a list.
    Single words separated by commas become items; a sentence becomes one quoted item."""
    label = f"{key}: " if key else ""
    parts = [part.strip() for part in text.split(",")]
    if all(part and " " not in part and _plain(part) for part in parts):
        return f", not text; write {label}[{', '.join(parts)}]"
    return f", not text; write {label}[{json.dumps(text.strip(), ensure_ascii=False)}]"


def misplaced_key(
    model: type[BaseModel],
    loc: Loc,
    value_text: str | None,
    exists: Callable[[tuple[str, ...]], bool] = lambda path: False,
) -> str | None:
    """Where an unknown key at ``loc`` belongs, if another part of the schema has it:
    ``"'pitch_shift' does not go at the top level; it belongs under voice:, as in voice:
    {pitch_shift: -3}"``. ``exists`` says whether the file already has a mapping at a path
    (then the fix is to move the key into it)."""
    key = str(loc[-1])
    here = tuple(str(part) for part in loc[:-1] if isinstance(part, str))
    homes = [path for path in _places_of(model, key) if path != here]
    if not homes:
        return None
    where = f"under {dotted(here)}:" if here else "at the top level"
    home = homes[0]
    sample = f"{key}: {value_text or '...'}"
    for part in reversed(home):
        if part.endswith("[]"):
            sample = f"{part[:-2]}: [{{{sample}}}]"
        else:
            sample = f"{part}: {{{sample}}}"
    if not home:
        fix = f"it belongs at the top level of the file: {sample}"
    elif home[-1].endswith("[]"):
        fix = f"it belongs in each item of {home[-1][:-2]}:, as in {sample}"
    elif exists(home):
        fix = f"move it into the {dotted(home)}: block above, indented like its other keys"
    else:
        fix = f"it belongs under {dotted(home)}:, as in {sample}"
    return f"'{key}' does not go {where}; {fix}"


def dotted(parts: Iterable[str | int]) -> str:
    """``voice.speed``, ``entries[2].text``."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def keys_at(model: type[BaseModel], loc: Loc) -> list[str]:
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


def _places_of(model: type[BaseModel], key: str) -> list[tuple[str, ...]]:
    """Paths of the mappings that accept ``key``; ``entries[]`` stands for each item of a list."""
    places: list[tuple[str, ...]] = []
    queue: list[tuple[tuple[str, ...], type[BaseModel]]] = [((), model)]
    seen: set[type[BaseModel]] = set()
    while queue:
        path, current = queue.pop(0)
        if current in seen:
            continue
        seen.add(current)
        for name, info in current.model_fields.items():
            field_key = info.alias or name
            if field_key == key:
                places.append(path)
            for candidate in _flatten(info.annotation):
                origin, args = typing.get_origin(candidate), typing.get_args(candidate)
                if origin in (list, tuple) and args:
                    inner = [c for c in _flatten(args[0]) if _is_model(c)]
                    queue += [((*path, f"{field_key}[]"), c) for c in inner]
                elif _is_model(candidate):
                    queue.append(((*path, field_key), candidate))
    return places


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


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


def _either(choices: list[str]) -> str:
    if len(choices) <= 1:
        return "".join(choices) or "another value"
    return ", ".join(choices[:-1]) + f" or {choices[-1]}"


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _plain(word: str) -> bool:
    """Whether ``word`` reads as the same text unquoted inside ``[...]``."""
    return re.fullmatch(r"[A-Za-z_][\w.*-]*", word) is not None
