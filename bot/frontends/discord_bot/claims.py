"""Why this process does not open a guild's table: it runs in another process, or here already.

Shared by the table keeper (which raises them), the resumer (which skips a guild a
``/session start`` got to first) and the cogs (which stay silent for a table run elsewhere).
"""

from __future__ import annotations

import logging

from discord import app_commands

from campaigns.basics import GlyphoxaError

__all__ = ["TableElsewhere", "TableRunning"]

log = logging.getLogger(__name__)


class TableElsewhere(app_commands.CheckFailure):
    """Another process runs this guild's table (two processes hold its shard): that process
    answers the interaction, this one stays silent."""


class TableRunning(GlyphoxaError):
    """This process already runs (or is opening) the guild's table."""

    def __init__(self) -> None:
        super().__init__("A session is already running; `/session stop` it first.")
