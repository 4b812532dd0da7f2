"""A table's state survives a restart: scene, mutes, tier overrides and the memory session.

Two real ``TableSession``s over one campaign memory (SQLite): the first is steered and talked
to, its state captured and sent through JSON as the registry stores it; the second restores it
before anyone speaks and continues the same memory session.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.audio.speech import EspeakTts
from bot.settings.config import GlyphoxaConfig
from bot.table.session import snapshot
from bot.table.session.builder import build_session
from bot.table.session.session import TableSession
from bot.telemetry.metrics import Metrics
from campaigns.basics import Tier
from campaigns.memory import MemoryStore
from npcs.campaign import load_campaign
from npcs.context import SceneLine

EXAMPLE = Path(__file__).resolve().parents[2] / "campaigns" / "example"


class NoStt:
    async def transcribe(self, audio: object, **_: object) -> str:
        return ""


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[MemoryStore]:
    store = await MemoryStore.open(f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}")
    yield store
    await store.close()


def _session(memory: MemoryStore, memory_session_id: str | None = None) -> TableSession:
    return build_session(
        config=GlyphoxaConfig.model_validate({"campaign": {"hot_reload": False}}),
        campaign=load_campaign(EXAMPLE),
        stt=NoStt(),  # type: ignore[arg-type]
        tts=EspeakTts(),
        engines=lambda npc: None,
        memory=memory,
        metrics=Metrics(),
        memory_session_id=memory_session_id,
    )


async def test_state_survives_a_restart_through_json(memory: MemoryStore) -> None:
    first = _session(memory)
    await first.start()
    first.scene_log.add(SceneLine("Aria", "Bartok, what's on tap?", None, time.monotonic() - 5))
    first.scene_log.add(SceneLine("Bartok", "Dark ale, two coppers.", "Bartok", time.monotonic()))
    first.controls.set_tier_override(Tier.DEEP, npc="Bartok")
    first.controls.set_tier_override(Tier.STANDARD, duration_s=600)
    first.controls.set_tier_override(Tier.FAST, npc="Whisper", duration_s=0.001)  # expires at once
    first.controls.mute("Captain Vessa")
    first.controls.direct("Greymantle", "Hint at the mill.", turns=2)
    first.controls.direct("Bartok", "You saw the thief; deny it.", None)  # until cleared
    first.controls.set_mood("Greymantle", "weary, suspicious of the elves")
    state = snapshot.capture(first)
    stored = json.loads(json.dumps(state.as_json()))  # what the registry keeps
    memory_session = first.recorder.session_id
    await first.stop()

    restored = snapshot.TableState.from_json(stored, memory_session)
    second = _session(memory, restored.memory_session_id)
    assert snapshot.restore(second, restored) == []
    await second.start()
    try:
        assert [(line.speaker, line.text, line.npc) for line in second.scene] == [
            ("Aria", "Bartok, what's on tap?", None),
            ("Bartok", "Dark ale, two coppers.", "Bartok"),
        ]
        assert second.scene[0].at < second.scene[1].at <= time.monotonic()
        assert second.controls.is_muted("Captain Vessa") and not second.controls.is_muted("Bartok")
        status = second.status().npcs
        assert (status["Bartok"].override or "").startswith("DM override deep for Bartok")
        assert (status["Greymantle"].override or "").startswith("DM override standard for all")
        assert "s left" in (status["Greymantle"].override or "")  # the duration carried over
        assert (status["Whisper"].override or "").startswith("DM override standard")  # own expired
        assert second.recorder.session_id == memory_session  # the transcript continues there
        assert status["Greymantle"].direction_turns == 2
        assert second.seats.seat("Greymantle").direction.text == "Hint at the mill."
        assert status["Bartok"].direction == "until cleared"
        assert status["Greymantle"].mood == "weary, suspicious of the elves"
        assert status["Bartok"].mood is None
        told = second.seats.brief("Greymantle", take=False) or ""
        assert told.startswith("Your mood right now: weary, suspicious of the elves;")
    finally:
        await second.stop()
    assert await memory.count("sessions") == 1


async def test_what_no_longer_exists_is_reported_not_fatal(memory: MemoryStore) -> None:
    state = snapshot.TableState.from_json(
        {
            "scene": [{"speaker": "Aria", "text": "Hello"}, {"text": "no speaker"}, "junk"],
            "muted": ["Nobody"],
            "overrides": [
                {"npc": "Ghost", "tier": "deep", "until": None},
                {"npc": None, "tier": "ludicrous", "until": None},
                {"npc": None, "tier": "deep", "until": time.time() - 5},
            ],
        },
        "no-such-memory-session",
    )
    session = _session(memory, state.memory_session_id)
    problems = snapshot.restore(session, state)
    await session.start()
    try:
        assert problems == [
            "NPC Nobody no longer exists (its mute or direction is dropped)",
            "tier override for Ghost: no such NPC any more",
            "tier override 'ludicrous' is not a tier",
        ]
        assert [line.text for line in session.scene] == ["Hello"]
        assert session.status().npcs["Bartok"].override is None
        assert session.recorder.session_id not in (None, "no-such-memory-session")
    finally:
        await session.stop()
