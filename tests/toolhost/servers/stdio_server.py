"""A real MCP server over stdio (mcp SDK ``MCPServer``) with tools that misbehave on purpose.

Run as ``python tests/toolhost/servers/stdio_server.py``. Tools: ``fast`` (declares FAST latency,
idempotent, cacheable), ``slow`` (sleeps as asked; declares a 300 ms hard limit), ``flaky``
(fails when asked), ``crash`` (kills the process mid-call), ``huge`` (a very long text),
``legacy`` (declares latency nowhere, so it counts as DEEP), ``count`` (how many calls this
process has served, to prove caching), ``add_tool`` (adds ``late`` at runtime and publishes a
``subscriptions/listen`` tools event: the host speaks 2026-07-28 with this server), ``roll``
and ``weird.name/with spaces`` (naming tests), ``sound`` (audio) and ``scroll`` (a long
embedded resource). With ``GATE_FILE`` set, it exits at once while that file is missing.
"""

from __future__ import annotations

import asyncio
import base64
import os
import struct
import sys

import mcp.types as mt
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("misbehaving")
calls = {"n": 0}


def latency(estimated: float, maximum: float, **extra: object) -> dict[str, object]:
    return {
        "io.glyphoxa/latency": {
            "estimated_duration_ms": estimated,
            "max_duration_ms": maximum,
            **extra,
        }
    }


@server.tool(meta=latency(5, 200, idempotent=True, cacheable_seconds=60))
async def fast(x: int) -> dict[str, int]:
    """Echo x and its double."""
    calls["n"] += 1
    return {"x": x, "double": 2 * x}


@server.tool(meta=latency(100, 300))
async def slow(ms: int) -> str:
    """Sleep ms milliseconds."""
    calls["n"] += 1
    await asyncio.sleep(ms / 1000)
    return f"slept {ms}"


@server.tool(meta=latency(20, 500))
async def flaky(fail: bool) -> str:
    """Fail when told to."""
    calls["n"] += 1
    if fail:
        raise ToolError("flaky failed as requested")
    return "fine"


@server.tool(meta=latency(20, 2000))
async def crash() -> str:
    """Die mid-call."""
    await asyncio.sleep(0.05)
    sys.stderr.write("crash tool: exiting now\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool(meta=latency(10, 1000))
async def huge(n: int) -> str:
    """A very long text."""
    return "x" * n


@server.tool()
async def legacy() -> str:
    """No latency metadata at all."""
    return "old"


@server.tool(meta=latency(1, 200, idempotent=True))
async def count() -> int:
    """How many calls this process served."""
    return calls["n"]


@server.tool(meta=latency(5, 500))
async def roll(dice: str) -> str:
    """A remote roll that collides with the built-in one."""
    return f"remote {dice}"


@server.tool(name="weird.name/with spaces", meta=latency(5, 500))
async def weird() -> str:
    """A tool whose name is not provider-safe."""
    return "weird"


@server.tool(meta=latency(5, 1000))
async def spam(lines: int) -> str:
    """Write many lines to stderr."""
    for i in range(lines):
        sys.stderr.write(f"spam line {i}\n")
    sys.stderr.flush()
    return "spammed"


def _silent_wav() -> bytes:
    """A valid 44-byte WAV header with no samples."""
    fmt = struct.pack("<4sIHHIIHH", b"fmt ", 16, 1, 1, 8000, 16000, 2, 16)
    return b"RIFF" + struct.pack("<I", 36) + b"WAVE" + fmt + b"data" + struct.pack("<I", 0)


@server.tool(meta=latency(5, 500))
async def sound() -> list[mt.ContentBlock]:
    """A text line and a short audio clip."""
    audio = base64.b64encode(_silent_wav()).decode()
    return [mt.TextContent(text="a bell"), mt.AudioContent(data=audio, mime_type="audio/wav")]


@server.tool(meta=latency(5, 500))
async def scroll(n: int) -> list[mt.ContentBlock]:
    """A long embedded markdown resource."""
    resource = mt.TextResourceContents(uri="lore://scroll", mime_type="text/markdown", text="z" * n)
    return [mt.EmbeddedResource(resource=resource)]


async def late(word: str) -> str:
    """Added at runtime."""
    return word.upper()


@server.tool(meta=latency(5, 1000))
async def add_tool(ctx: Context) -> str:
    """Add the ``late`` tool and tell the client its tool list changed."""
    server.add_tool(late, meta=latency(5, 500))
    await ctx.notify_tools_changed()  # 2026-07-28: a subscriptions/listen event
    return "added"


if __name__ == "__main__":
    gate = os.environ.get("GATE_FILE")
    if gate and not os.path.exists(gate):  # lets a test keep this server "down" for a while
        sys.stderr.write(f"gate {gate} closed\n")
        sys.exit(1)
    sys.stderr.write("misbehaving server starting\n")
    sys.stderr.flush()
    server.run("stdio")
