"""The table session: one per voice connection, gluing speech lanes, addressing, tiers, NPC
engines, TTS and the mixer."""
