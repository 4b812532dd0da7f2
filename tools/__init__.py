"""Tools the NPCs may call, budgeted by latency (the layer below ``npcs``).

Rooms: ``host/`` (the tool host: registry, MCP connections, tiers, calibration, approvals,
execution), ``builtin/`` (the built-in servers, in-process or over MCP with ``glyphoxa
serve-tool``), ``spec`` (how a built-in is defined), ``catalog`` and ``selection`` (which tools
an NPC's ``tools:`` list names) and ``config`` (the ``mcp`` and ``tools`` sections).
"""
