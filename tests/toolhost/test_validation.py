"""The fast argument check never accepts what jsonschema rejects, and messages come from
jsonschema either way."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools.host.validation import _fast_check, compile_validator

BOUNDS = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]
numbers = st.one_of(st.integers(-5, 5), st.floats(-5, 5, allow_nan=False))
values = st.one_of(
    st.sampled_from([x / 2 for x in range(-12, 13)]),
    numbers,
    st.sampled_from([0.5, 1.0, -1.5, 2, 0, True, False, "a", "", None, 1e300]),
    st.booleans(),
    st.integers(-10, 10),
    st.floats(allow_nan=False),
    st.text(max_size=4),
    st.sampled_from(["a", "bb", "ccc"]),
    st.lists(st.integers(), max_size=2),
)


@st.composite
def scalar_specs(draw: Any) -> dict[str, Any]:
    kind = draw(st.sampled_from(["string", "integer", "number", "boolean"]))
    spec: dict[str, Any] = {"type": kind, "description": "x"}
    if kind == "string":
        if draw(st.booleans()):
            spec["enum"] = draw(st.lists(st.sampled_from(["a", "bb", "ccc"]), min_size=1))
        if draw(st.booleans()):
            spec["minLength"] = draw(st.integers(0, 2))
        if draw(st.booleans()):
            spec["maxLength"] = draw(st.integers(0, 3))
    elif kind in ("integer", "number"):
        # One or two bounds, so a value can sit right at one edge and pass the others.
        for key in draw(st.lists(st.sampled_from(BOUNDS), unique=True, max_size=2)):
            spec[key] = draw(numbers)
    return spec


@st.composite
def object_schemas(draw: Any) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from(["a", "b", "c"]), unique=True, max_size=3))
    properties = {name: draw(scalar_specs()) for name in names}
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    schema["required"] = draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), unique=True))
    if draw(st.booleans()):
        schema["additionalProperties"] = draw(st.booleans())
    return schema


@st.composite
def schema_and_arguments(draw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Arguments aimed at the schema's edges: bounds +- a little, lengths around the limits."""
    schema = draw(object_schemas())
    arguments: dict[str, Any] = {}
    for name in draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), unique=True)):
        spec = schema["properties"].get(name, {})
        edges: list[Any] = []
        for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if key in spec:
                edges += [spec[key] + delta for delta in (-1, -0.5, 0, 0.5, 1)]
        for key in ("minLength", "maxLength"):
            if key in spec:
                edges += ["x" * max(0, spec[key] + delta) for delta in (-1, 0, 1)]
        edges += list(spec.get("enum", []))
        aimed = edges and draw(st.integers(0, 4)) > 0
        arguments[name] = draw(st.sampled_from(edges) if aimed else values)
    return schema, arguments


@settings(max_examples=800)
@given(schema_and_arguments())
def test_fast_path_agrees_with_jsonschema(case: tuple[dict[str, Any], dict[str, Any]]):
    schema, arguments = case
    fast = _fast_check(schema)
    assert fast is not None  # these schemas are all within the fast path's reach
    expected = jsonschema.Draft202012Validator(schema).is_valid(arguments)
    assert fast(arguments) == expected
    message = compile_validator(schema)(arguments)
    assert (message is None) == expected


def test_richer_schemas_use_jsonschema_only():
    nested = {"type": "object", "properties": {"p": {"type": "object"}}}
    assert _fast_check(nested) is None
    pattern = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^a"}}}
    assert _fast_check(pattern) is None
    assert compile_validator(pattern)({"s": "b"}) == "'b' does not match '^a' (at s)"


def test_invalid_schema_disables_validation():
    assert compile_validator({"type": "object", "properties": 5})({"x": 1}) is None


@pytest.mark.parametrize(
    ("spec", "value", "valid"),
    [
        ({"type": "number", "minimum": 2}, 2, True),
        ({"type": "number", "minimum": 2}, 1.5, False),
        ({"type": "number", "exclusiveMinimum": 2}, 2, False),
        ({"type": "number", "exclusiveMinimum": 2}, 2.5, True),
        ({"type": "number", "maximum": 2}, 2, True),
        ({"type": "number", "maximum": 2}, 2.5, False),
        ({"type": "number", "exclusiveMaximum": 2}, 2, False),
        ({"type": "number", "exclusiveMaximum": 2}, 1.5, True),
        ({"type": "integer"}, 1.0, True),
        ({"type": "integer"}, 1.5, False),
        ({"type": "integer"}, True, False),
        ({"type": "number"}, False, False),
        ({"type": "boolean"}, 0, False),
        ({"type": "string", "minLength": 2}, "a", False),
        ({"type": "string", "minLength": 2}, "ab", True),
        ({"type": "string", "maxLength": 2}, "abc", False),
        ({"type": "string", "enum": ["x", "y"]}, "z", False),
        ({"type": "string", "enum": ["x", "y"]}, "y", True),
    ],
)
def test_fast_path_edges(spec: dict[str, Any], value: Any, valid: bool):
    schema = {"type": "object", "properties": {"v": spec}, "additionalProperties": False}
    fast = _fast_check(schema)
    assert fast is not None
    assert jsonschema.Draft202012Validator(schema).is_valid({"v": value}) is valid
    assert fast({"v": value}) is valid
    assert fast({"v": value, "extra": 1}) is False
