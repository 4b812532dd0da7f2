"""One place builds a table from ``glyphoxa.yaml``: the room every front end assembles through.

What it holds: :mod:`~bot.table.assembly.table` (``open_table``: a started ``TableSession`` with its
speech, voices, memory, tool host and engines, closed together),
:mod:`~bot.table.assembly.providers` (speech recognition, voices, the LLM's client and the bundled
LLM server, from the typed ``providers`` options), :mod:`~bot.table.assembly.engines` (the one
engine factory, with production's defaults) and :mod:`~bot.table.assembly.memory`
(``open_memory``). ``glyphoxa run`` and the Discord front end, ``glyphoxa rehearse``, the benches,
the doctor, the CLI's chat and the tests all build through it, so what they run is what a table
runs. Every OpenAI-compatible client comes from ``campaigns.providers.openai_client``.
"""
