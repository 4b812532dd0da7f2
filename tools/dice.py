"""``python -m tools.dice``: the built-in ``dice`` tool server over MCP stdio."""

from __future__ import annotations

import sys

from tools.builtin.standalone import run_named

if __name__ == "__main__":
    sys.exit(run_named("dice"))
