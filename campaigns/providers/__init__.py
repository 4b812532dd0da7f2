"""What every caller of a model provider shares: the speech stack and the NPC engines alike.

The services of ``glyphoxa.yaml``'s ``providers`` section (LLM, speech recognition, voices,
realtime, embeddings) are called from two places that must not know each other: the speech
stack (``bot.audio.speech``, which knows no NPC) and the engines (``npcs.engines``). What both speak
lives here, in the lowest layer (imports flow ``bot -> npcs -> tools -> campaigns``), so each
sees it without reaching the other:

- :mod:`~campaigns.providers.openai_client`: the one builder of OpenAI-compatible clients;
- :mod:`~campaigns.providers.usage`: what a provider call used (tokens, characters, audio
  seconds) and where it is reported, for the table's spend meter;
- :mod:`~campaigns.providers.voices`: the voice an NPC asks for (``VoiceSettings``, its
  ``voice:`` block) and the voices each text-to-speech provider has installed here.

Nothing is imported here, so loading one of them stays as light as that module alone
(``glyphoxa check`` and ``glyphoxa voices`` read the voices without the speech stack).
"""
