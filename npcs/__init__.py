"""The NPC domain: who the NPCs are and how they answer (the layer below ``bot``).

Rooms: ``schema`` (an NPC's YAML model), ``campaign/`` (campaign folders as NPCs plus content,
with hot reload), ``addressing``, ``name_index``, ``vocative`` and ``name_words`` (who a line
is spoken to), ``tier_selector``, ``tier_phrases`` and ``phrase_match`` (which latency tier a
turn gets), ``dm_voice`` (the DM's voice commands), ``context`` and ``sentences`` (prompts and
the sentences of an answer), ``voices`` (which voices are installed), ``engines/`` (cascaded,
sentence cascade, realtime) and ``inference/`` (clients, pools and the bundled LLM server,
which knows no NPC).
"""
