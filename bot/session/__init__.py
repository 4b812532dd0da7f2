"""The table session: one per voice connection, gluing speech lanes, addressing, tiers, NPC
engines, TTS and the mixer. ``bot.assembly.table.open_table(config)`` assembles a started one."""

from __future__ import annotations

from bot.session.session import TableSession
from bot.session.trace import TurnTrace

__all__ = ["TableSession", "TurnTrace"]
