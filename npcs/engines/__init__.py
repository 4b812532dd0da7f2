"""NPC engines: cascaded (LLM + tools -> sentences), realtime (speech-to-speech), sentence
cascade (fast opener, strong continuation). All share ``TurnRequest`` and the event types."""

from __future__ import annotations

from npcs.context import SceneLine
from npcs.engines.cascaded import CascadedEngine
from npcs.engines.events import (
    Caption,
    Engine,
    EngineEvent,
    Filler,
    FirstToken,
    Sentence,
    ToolsUsed,
    TurnDone,
    TurnRequest,
)
from npcs.engines.realtime import RealtimeEngine
from npcs.engines.sentence_cascade import SentenceCascadeEngine

__all__ = [
    "Caption",
    "CascadedEngine",
    "Engine",
    "EngineEvent",
    "Filler",
    "FirstToken",
    "RealtimeEngine",
    "SceneLine",
    "Sentence",
    "SentenceCascadeEngine",
    "ToolsUsed",
    "TurnDone",
    "TurnRequest",
]
