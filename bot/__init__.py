"""The runnable bot: the top layer (``bot -> npcs -> tools -> campaigns``).

Rooms: ``cli`` and ``commands/`` (``glyphoxa ...``, one module per command, with their helpers
``scaffold``, ``npc_view``, ``tool_inspection`` and ``schemas``), ``config`` and
``config_providers`` (the models of ``glyphoxa.yaml``) with ``config_loader``, ``assembly/`` (one
place builds a table from the config), ``session/`` (the table session), ``speech/`` (VAD,
recognition, voices, mixer: transport-neutral), ``voice/`` (Discord voice receive and playback),
``discord_bot/`` and ``discord_setup/`` (the Discord front end and getting onto Discord),
``rehearsal/`` (a table without Discord, from a scene script), ``doctor/``, ``metrics`` and
``logging_setup``; and ``bench/``, the harness room (benchmarks and the doubles they drive), which
the product never imports.
"""
