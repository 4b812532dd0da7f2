"""Shared helpers of the built-in tool servers: latency presets and validated tool definitions.

Every built-in tool is declared once through :func:`define_tool`, which wraps the handler so the
arguments are checked against the tool's JSON Schema before it runs. That way bad input gives
the same clear ``ToolError`` in-process (host calls the handler directly) and over MCP.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from jsonschema import Draft202012Validator

from tools.spec import LatencyMeta, ToolDef, ToolError, ToolHandler

__all__ = [
    "deep",
    "define_tool",
    "fast",
    "object_schema",
    "standard",
]

log = logging.getLogger(__name__)


def fast(*, estimated: float = 20, maximum: float = 400, **flags: Any) -> LatencyMeta:
    """Latency of a local, in-memory tool (dice, entity lookups, file I/O, ambience)."""
    return LatencyMeta(estimated_duration_ms=estimated, max_duration_ms=maximum, **flags)


def standard(*, estimated: float = 800, maximum: float = 1500, **flags: Any) -> LatencyMeta:
    """Latency of a search over the campaign store or the rules index."""
    return LatencyMeta(estimated_duration_ms=estimated, max_duration_ms=maximum, **flags)


def deep(*, estimated: float = 2500, maximum: float = 4000, **flags: Any) -> LatencyMeta:
    """Latency of a tool that leaves the machine (image generation, web)."""
    return LatencyMeta(estimated_duration_ms=estimated, max_duration_ms=maximum, **flags)


def object_schema(
    properties: dict[str, dict[str, Any]], required: list[str] | None = None
) -> dict[str, Any]:
    """An ``inputSchema`` object that forbids unknown arguments."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = required
    return schema


def _describe_error(tool: str, error: Any) -> str:
    where = ".".join(str(p) for p in error.absolute_path)
    if error.validator == "additionalProperties":
        return f"{tool}: {error.message}"
    if error.validator == "required":
        return f"{tool}: missing argument: {error.message}"
    prefix = f"argument {where!r}" if where else "arguments"
    return f"{tool}: {prefix}: {error.message}"


def define_tool(
    name: str,
    description: str,
    input_schema: dict[str, Any],
    handler: ToolHandler,
    latency: LatencyMeta,
    output_schema: dict[str, Any] | None = None,
) -> ToolDef:
    """A ``ToolDef`` whose handler first validates its keyword arguments.

    Args:
        name: Tool name as the LLM sees it.
        description: One or two sentences telling the LLM when to use it.
        input_schema: JSON Schema of the arguments (an object schema).
        handler: Async callable taking the arguments as keywords.
        latency: Declared latency metadata.
        output_schema: Optional JSON Schema of the structured result.
    """
    Draft202012Validator.check_schema(input_schema)
    validator = Draft202012Validator(input_schema)

    @functools.wraps(handler)
    async def validated(**arguments: Any) -> Any:
        # Small LLMs often send ``null`` for an optional argument they mean to leave out.
        arguments = {key: value for key, value in arguments.items() if value is not None}
        errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.path))
        if errors:
            raise ToolError(_describe_error(name, errors[0]))
        return await handler(**arguments)

    return ToolDef(
        name=name,
        description=description,
        input_schema=input_schema,
        handler=validated,
        latency=latency,
        output_schema=output_schema,
    )
