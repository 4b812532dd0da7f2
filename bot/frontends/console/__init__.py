"""The DM's console: a web page served by the bot process to watch and steer the table live
and to prepare the campaign (``docs/console.md``).

``ConsoleServer`` serves a ``ConsoleHub`` on the bot's event loop; tables ``attach`` to the hub
while they run. The package imports Starlette, uvicorn and Jinja only when a console is made.
"""

from __future__ import annotations

from bot.frontends.console.hub import ConsoleHub, PrepContext
from bot.frontends.console.server import ConsoleServer, console_for

__all__ = ["ConsoleHub", "ConsoleServer", "PrepContext", "console_for"]
