"""Audio: ``speech/`` (per-speaker lanes, recognition, voices, mixer; no transport) and
``voice/`` (Discord voice receive and playback, DAVE-aware). Neither knows an NPC (a contract in
pyproject.toml): the table above tells them what to hear and say."""
