"""The lowest layer: the project's basic vocabulary, campaign content and campaign memory.

Rooms: ``basics`` (``GlyphoxaError``, ``Tier``, ``AudioChunk``, ``percentile``: what every
layer speaks), the YAML machinery (``yamlio`` with ``yamlsafe``, ``yamlparse``,
``yamlvalidate``, ``yamldoc``, ``yamlhints``, ``yamlmessages``: loading with located errors and
did-you-mean, ``suggest``), ``content`` (the campaign's own files: ``campaign.yaml``, entities,
random tables), ``providers/`` (what every caller of a model provider shares: the OpenAI client
builder, a call's usage, the voices; the speech stack and the engines both read it) and
``memory/`` (the SQL store of transcripts, recall, knowledge graph, summaries). Campaign folders
are loaded with their NPCs in ``npcs.campaign``.
"""
