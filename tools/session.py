"""``python -m tools.session``: the built-in ``session`` tool server over MCP stdio."""

from __future__ import annotations

import sys

from tools.builtin.standalone import run_named

if __name__ == "__main__":
    sys.exit(run_named("session"))
