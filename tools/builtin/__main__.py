"""``python -m tools.builtin NAME``: run one built-in tool server over MCP stdio."""

from __future__ import annotations

import sys

from tools.builtin.standalone import main

if __name__ == "__main__":
    sys.exit(main())
