"""NPC engines: cascaded (LLM + tools -> sentences), realtime (speech-to-speech), sentence
cascade (fast opener, strong continuation). All share ``TurnRequest`` and the event types."""

from __future__ import annotations

from npcs.context import SceneLine
from npcs.engines.cascaded import CascadedEngine
from npcs.engines.events import (
    AudioChunk,
    Engine,
    EngineEvent,
    Filler,
    FirstToken,
    Sentence,
    ToolsUsed,
    TurnDone,
    TurnRequest,
)

__all__ = [
    "AudioChunk",
    "CascadedEngine",
    "Engine",
    "EngineEvent",
    "Filler",
    "FirstToken",
    "SceneLine",
    "Sentence",
    "ToolsUsed",
    "TurnDone",
    "TurnRequest",
]
