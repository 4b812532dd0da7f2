"""The runnable bot: the top layer (``bot -> npcs -> tools -> campaigns``), grouped by role.

From the top floor down, each room importing only the rooms below it:

- ``cli`` (and ``__main__``): the ``glyphoxa`` command line, which finds the commands;
- ``bench/``: the harness room (benchmarks and the doubles they drive); the product never imports
  it, and ``glyphoxa bench`` (``bench/command.py``) is its one door;
- ``frontends/``: how people reach a table: the CLI's commands, the Discord bot and getting onto
  Discord, the DM's console, the rehearsal, the doctor, and the libraries they share (``checking``,
  ``npc_view``, ``scaffold``, ``schemas``, ``tool_inspection``);
- ``table/``: the table itself: ``assembly/`` builds one from the config, ``session/`` runs it;
- ``audio/``: ``speech/`` (VAD, recognition, voices, mixer: transport-neutral) and ``voice/``
  (Discord voice receive and playback); it knows no NPC;
- ``telemetry/``: metrics and logging;
- ``settings/``: the models of ``glyphoxa.yaml`` and their loader.
"""
