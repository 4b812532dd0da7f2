"""Expose a ``BuiltinServer`` as a standalone MCP server over stdio.

Uses the mcp SDK's low-level ``Server`` so each tool's ``inputSchema`` and the Glyphoxa latency
metadata under ``_meta`` are published exactly as declared in its ``ToolDef``; the caller a
request's ``_meta`` names (``tools.caller``) is set for the handler as in-process. A
``ToolError`` (or bad arguments) comes back as an ``isError`` result the LLM can read, never as
a protocol error; an unexpected failure is marked as a crash (``FAILURE_META_KEY``) so a
Glyphoxa host counts it against the tool's health. ``tools.builtin.serve_http`` serves the same
over streamable HTTP.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from tools.caller import ToolCaller, calling_as
from tools.spec import FAILURE_META_KEY, BuiltinServer, ToolDef, ToolError

__all__ = ["build_mcp_server", "call_tool_result", "serve_stdio", "tool_listing"]

log = logging.getLogger(__name__)


def tool_listing(tool: ToolDef) -> types.Tool:
    """The MCP ``Tool`` entry of a ``ToolDef`` (schema, latency ``_meta``, hints)."""
    return types.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=tool.input_schema,
        output_schema=tool.output_schema,
        annotations=types.ToolAnnotations(
            read_only_hint=tool.latency.read_only,
            idempotent_hint=tool.latency.idempotent,
        ),
        _meta=tool.latency.to_meta(),
    )


def _as_text(result: Any) -> str:
    if isinstance(result, str):
        return result
    return json.dumps(result, ensure_ascii=False, default=str)


async def call_tool_result(tool: ToolDef, arguments: dict[str, Any] | None) -> types.CallToolResult:
    """Run ``tool`` and wrap its outcome (or its clear failure) as an MCP result."""
    try:
        result = await tool.handler(**(arguments or {}))
    except ToolError as error:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=str(error))], is_error=True
        )
    except Exception as error:  # a bug must not kill the server; the LLM gets a short note
        log.exception("tool %s failed", tool.name)
        return types.CallToolResult(
            content=[
                types.TextContent(
                    type="text", text=f"{tool.name} failed unexpectedly: {type(error).__name__}"
                )
            ],
            is_error=True,
            _meta={FAILURE_META_KEY: "crash"},
        )
    structured = result if isinstance(result, dict) else None
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=_as_text(result))],
        structured_content=structured,
    )


def build_mcp_server(server: BuiltinServer) -> Server[Any]:
    """A low-level MCP ``Server`` serving ``server``'s tools."""
    by_name = {tool.name: tool for tool in server.tools}
    listing = [tool_listing(tool) for tool in server.tools]

    async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = by_name.get(params.name)
        if tool is None:
            return types.CallToolResult(
                content=[
                    types.TextContent(
                        type="text",
                        text=f"unknown tool {params.name!r}; this server has "
                        f"{', '.join(sorted(by_name))}",
                    )
                ],
                is_error=True,
            )
        # The host names the NPC the call is made for (``tools.caller``); the handler reads it.
        with calling_as(ToolCaller.from_meta(params.meta)):
            return await call_tool_result(tool, params.arguments)

    return Server(
        f"glyphoxa-{server.name}",
        version="0.1.0",
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )


async def serve_stdio(server: BuiltinServer) -> None:
    """Serve ``server`` on stdin/stdout until the client closes the stream.

    ``startup`` runs before the first request and ``shutdown`` after the last, so the server
    owns its resources (database, HTTP client) for exactly the connection's lifetime.
    """
    mcp_server = build_mcp_server(server)
    if server.startup is not None:
        await server.startup()
    try:
        async with stdio_server() as (read_stream, write_stream):
            await mcp_server.run(
                read_stream, write_stream, mcp_server.create_initialization_options()
            )
    finally:
        if server.shutdown is not None:
            await server.shutdown()
