"""Getting the bot onto Discord: the token's shape, the scopes, permissions and intents it
needs, the invite link, and who may act as the Dungeon Master.

One source of these facts for ``glyphoxa discord setup``, ``glyphoxa doctor --discord`` and the
bot itself (its intents and its DM rule). Import the modules directly: ``token`` and
``dm_rule`` need no discord.py; ``needs``, ``guide`` and ``online`` import it.
"""
