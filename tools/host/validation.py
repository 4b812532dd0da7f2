"""Argument validation against a tool's JSON schema, compiled once per schema.

Most tool schemas are flat objects of scalars (what an LLM fills in). For those a small
hand-written check decides validity in about a microsecond; anything it does not fully
understand goes to ``jsonschema``, which also writes every error message, so both paths
accept exactly the same arguments (a property test compares them).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError, best_match

__all__ = ["ArgumentValidator", "compile_validator"]

log = logging.getLogger(__name__)

#: Returns None when the arguments are valid, else a message for the LLM.
ArgumentValidator = Callable[[dict[str, Any]], str | None]

_ANNOTATIONS = {"title", "description", "default", "examples", "$comment"}
_OBJECT_KEYS = {"type", "properties", "required", "additionalProperties", "$schema"} | _ANNOTATIONS
_SCALAR_KEYS = {
    "type",
    "enum",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
} | _ANNOTATIONS
_SCALAR_TYPES = {"string", "integer", "number", "boolean"}


def compile_validator(schema: dict[str, Any], *, tool: str = "?") -> ArgumentValidator:
    """A validator for ``schema``; an invalid schema disables validation with a warning."""
    try:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        full = cls(schema)
    except SchemaError as error:
        log.warning("tool %s has an invalid input schema (%s); not validating", tool, error.message)
        return _accept_all

    def explain(arguments: dict[str, Any]) -> str | None:
        problem = best_match(full.iter_errors(arguments))
        if problem is None:
            return None
        where = "/".join(str(p) for p in problem.absolute_path)
        message: str = problem.message
        return message + (f" (at {where})" if where else "")

    fast = _fast_check(schema)
    if fast is None:
        return explain

    def validate(arguments: dict[str, Any]) -> str | None:
        return None if fast(arguments) else explain(arguments)

    return validate


def _accept_all(arguments: dict[str, Any]) -> str | None:
    return None


def _fast_check(schema: dict[str, Any]) -> Callable[[dict[str, Any]], bool] | None:
    """A validity check for a flat object-of-scalars schema, or None if the schema is richer."""
    if schema.get("type") != "object" or not set(schema) <= _OBJECT_KEYS:
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(properties, dict) or not isinstance(required, list):
        return None
    if not isinstance(extra, bool):
        return None
    checks: dict[str, Callable[[Any], bool]] = {}
    for name, spec in properties.items():
        check = _scalar_check(spec)
        if check is None:
            return None
        checks[name] = check
    required_names = tuple(required)

    def fast(arguments: dict[str, Any]) -> bool:
        for name in required_names:
            if name not in arguments:
                return False
        for name, value in arguments.items():
            check = checks.get(name)
            if check is None:
                if not extra:
                    return False
            elif not check(value):
                return False
        return True

    return fast


def _scalar_check(spec: Any) -> Callable[[Any], bool] | None:
    if not isinstance(spec, dict) or not set(spec) <= _SCALAR_KEYS:
        return None
    kind = spec.get("type")
    if kind not in _SCALAR_TYPES:
        return None
    enum = spec.get("enum")
    if enum is not None and (kind != "string" or not all(isinstance(e, str) for e in enum)):
        return None
    bounds = {
        k: spec[k]
        for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
        if k in spec
    }
    if any(isinstance(b, bool) or not isinstance(b, int | float) for b in bounds.values()):
        return None
    lengths = (spec.get("minLength", 0), spec.get("maxLength"))
    if kind != "string" and ("minLength" in spec or "maxLength" in spec):
        return None
    if kind not in ("integer", "number") and bounds:
        return None
    allowed = frozenset(enum) if enum is not None else None

    def check(value: Any) -> bool:
        if kind == "string":
            if not isinstance(value, str):
                return False
            if allowed is not None and value not in allowed:
                return False
            low, high = lengths
            return len(value) >= low and (high is None or len(value) <= high)
        if kind == "boolean":
            return isinstance(value, bool)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if kind == "integer" and not (isinstance(value, int) or value.is_integer()):
            return False
        return _within(value, bounds)

    return check


def _within(value: float, bounds: dict[str, float]) -> bool:
    if "minimum" in bounds and value < bounds["minimum"]:
        return False
    if "maximum" in bounds and value > bounds["maximum"]:
        return False
    if "exclusiveMinimum" in bounds and value <= bounds["exclusiveMinimum"]:
        return False
    return not ("exclusiveMaximum" in bounds and value >= bounds["exclusiveMaximum"])
