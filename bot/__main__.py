"""``python -m bot`` is the same as ``glyphoxa``."""

import sys

from bot.cli import main

sys.exit(main())
