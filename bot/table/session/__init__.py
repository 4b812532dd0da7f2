"""The table session: one per voice connection, gluing speech lanes, addressing, tiers, NPC
engines, TTS and the mixer. ``build_session`` builds one from providers;
``bot.table.assembly.table.open_table(config)`` builds the providers and a started one."""

from __future__ import annotations

from bot.table.session.builder import build_session
from bot.table.session.session import TableSession
from bot.table.session.trace import TurnTrace

__all__ = ["TableSession", "TurnTrace", "build_session"]
