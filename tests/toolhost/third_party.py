"""Third-party MCP servers installed from their registries during the test run.

The reference "everything" server (``@modelcontextprotocol/server-everything`` on npm, written
on the TypeScript SDK) covers embedded resources, resource links, images, structured content,
a task-required tool and a ``tools/list_changed`` right after the handshake. It is installed
with npm into ``~/.cache/glyphoxa/npm/<version>`` (``GLYPHOXA_NPM_CACHE``) once per machine.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["EVERYTHING_VERSION", "everything_command", "legacy_server_command"]

EVERYTHING_PACKAGE = "@modelcontextprotocol/server-everything"
EVERYTHING_VERSION = "2026.8.31"


def _cache_root() -> Path:
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "glyphoxa" / "npm"
    return Path(os.environ.get("GLYPHOXA_NPM_CACHE", default))


def everything_command() -> list[str]:
    """``node .../index.js stdio`` of the pinned everything server, installing it if needed.

    Raises RuntimeError (the test fails, it is not skipped) when node/npm are missing or the
    install fails: these tests exist to run against the real third-party server.
    """
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        raise RuntimeError("node and npm are needed for the third-party MCP server tests")
    folder = _cache_root() / f"server-everything-{EVERYTHING_VERSION}"
    entry = folder / "node_modules" / EVERYTHING_PACKAGE / "dist" / "index.js"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:  # parallel test runs install once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not entry.is_file():
            done = subprocess.run(
                [
                    npm,
                    "install",
                    "--no-audit",
                    "--no-fund",
                    "--prefix",
                    str(folder),
                    f"{EVERYTHING_PACKAGE}@{EVERYTHING_VERSION}",
                ],
                capture_output=True,
                text=True,
                timeout=240,
                check=False,
            )
            if done.returncode != 0 or not entry.is_file():
                raise RuntimeError(f"npm install {EVERYTHING_PACKAGE} failed: {done.stderr[-800:]}")
    return [node, str(entry), "stdio"]


def legacy_server_command() -> list[str]:
    """Our handshake-era test server (``servers/legacy_server.mjs``) on the TypeScript SDK that
    came with the everything server."""
    node, entry = everything_command()[:2]
    sdk = Path(entry).parents[2] / "sdk" / "dist" / "esm"
    script = Path(__file__).parent / "servers" / "legacy_server.mjs"
    return ["env", f"MCP_SDK={sdk}", node, str(script)]
