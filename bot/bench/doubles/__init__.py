"""Doubles for what this machine cannot reach, each speaking the real wire protocol: a local
Discord (gateway, REST, voice with DAVE), a voice loopback of real davey sessions, instant
OpenAI-compatible LLM and speech servers, and a 20 ms clock probe. ``glyphoxa bench`` and the
tests drive the bot's real code against them; the product never imports them."""
