"""The table session: one per voice connection, gluing speech lanes, addressing, tiers, NPC
engines, TTS and the mixer. ``build_session`` builds one from providers;
``bot.assembly.table.open_table(config)`` builds the providers and a started one."""

from __future__ import annotations

from bot.session.builder import build_session
from bot.session.session import TableSession
from bot.session.trace import TurnTrace

__all__ = ["TableSession", "TurnTrace", "build_session"]
