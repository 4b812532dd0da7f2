"""The table: ``assembly/`` builds one from ``glyphoxa.yaml`` (speech, voices, memory, tool host,
engines), ``session/`` runs it (lanes, addressing, tiers, the floor, each NPC's seat). Front ends
and the bench reach a table only through here; audio, telemetry and settings sit below it."""
