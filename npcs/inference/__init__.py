"""The inference room: how Glyphoxa talks to model servers, and the one it can run itself.

What it holds:

- :mod:`~npcs.inference.pools`: one connection pool per endpoint per process, a per-table
  request limit and retries, shared by the LLM, STT and TTS of every table;
- the bundled local LLM: :mod:`~npcs.inference.server` (starts, supervises and restarts the
  llama.cpp process), :mod:`~npcs.inference.serve` (what runs inside it),
  :mod:`~npcs.inference.chatml_tools` (streamed tool calls in ChatML),
  :mod:`~npcs.inference.prefix_cache` (KV snapshots of each NPC's prompt),
  :mod:`~npcs.inference.model`, :mod:`~npcs.inference.probe`,
  :mod:`~npcs.inference.requant` (finding, checking and preparing the bundled GGUF) and
  :mod:`~npcs.inference.health`.

It knows nothing of NPCs: the engines (:mod:`npcs.engines`) use it to reach a model, and the
table's assembly gives the speech providers (``bot.audio.speech``) pooled clients from it. The
clients themselves are built by :mod:`campaigns.providers.openai_client`, below every layer
that calls a provider.
"""
