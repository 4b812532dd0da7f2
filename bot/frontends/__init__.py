"""How people reach a table: ``commands/`` (the CLI's commands, leaves nothing else imports),
``discord_bot/`` and ``discord_setup/`` (Discord, and getting onto it), ``console/`` (the DM's
web console), ``rehearsal/`` (a table without Discord, from a scene script) and ``doctor/``;
with what several of them share: ``checking`` (``glyphoxa check`` as a library), ``npc_view``,
``scaffold``, ``schemas`` and ``tool_inspection``."""
