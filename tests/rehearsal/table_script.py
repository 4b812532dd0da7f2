"""Scripted providers for table-session timelines: our own protocols, deterministic behaviour.

Each player utterance is a pure tone; its frequency names the words (``ToneStt`` maps the
dominant frequency back to the scripted text), so real lanes, real segmentation, the real mixer
and the real barge-in controller run unchanged while recognition and the LLM are scripted.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import numpy as np

from bot.audio.speech import FRAME_SAMPLES, SAMPLE_RATE, SILENCE_FRAME, STT_SAMPLE_RATE
from bot.table.session.events import SessionEvent
from bot.table.session.session import TableSession
from campaigns.basics import AudioChunk
from campaigns.providers.voices import VoiceSettings
from npcs.engines import FirstToken, Sentence, ToolsUsed, TurnDone, TurnRequest
from tests.speech.speech_helpers import EnergyVad
from tools.host import ToolResult, TurnToolReport

__all__ = ["EnergyVad", "ScriptedEngine", "TableDriver", "ToneStt", "ToneTts", "tone_frames"]

TTS_RATE = 24_000
SECONDS_PER_WORD = 0.12


class ToneStt:
    """``SttProvider``: the utterance's dominant frequency picks its scripted text; a partial
    returns the first half of the words."""

    def __init__(self) -> None:
        self.texts: dict[int, str] = {}
        self.stable: set[int] = set()
        self.finals = 0

    def register(self, text: str, *, stable: bool = False) -> int:
        """``stable``: partials already hold every word (the recognizer got it early)."""
        freq = 300 + 60 * len(self.texts)
        self.texts[freq] = text
        if stable:
            self.stable.add(freq)
        return freq

    async def transcribe(self, audio: np.ndarray, *, partial: bool = False, vocabulary=None) -> str:
        if audio.size < STT_SAMPLE_RATE // 10:
            return ""
        spectrum = np.abs(np.fft.rfft(audio))
        peak = float(np.fft.rfftfreq(audio.size, 1 / STT_SAMPLE_RATE)[int(np.argmax(spectrum))])
        freq = min(self.texts, key=lambda f: abs(f - peak))
        words = self.texts[freq].split()
        if not partial:
            self.finals += 1
        if partial and freq not in self.stable:
            return " ".join(words[: max(1, len(words) // 2)])
        return " ".join(words)


class ToneTts:
    """``TtsProvider``: a quiet tone, ``SECONDS_PER_WORD`` per word, in two chunks."""

    def __init__(self) -> None:
        self.spoken: list[str] = []

    async def synthesize(self, text: str, voice: VoiceSettings) -> AsyncIterator[AudioChunk]:
        self.spoken.append(text)
        samples = int(len(text.split()) * SECONDS_PER_WORD * TTS_RATE)
        t = np.arange(samples) / TTS_RATE
        pcm = (np.sin(2 * np.pi * 220 * t) * 8000).astype("<i2").tobytes()
        half = len(pcm) // 2 // 2 * 2
        for piece in (pcm[:half], pcm[half:]):
            await asyncio.sleep(0)
            yield AudioChunk(piece, TTS_RATE)


@dataclass
class ScriptedEngine:
    """``Engine``: speaks the scripted sentences for an NPC; ``hold`` keeps the turn running
    after the sentences (an LLM still writing), so cancellation can be observed."""

    replies: dict[str, list[str]]
    tools: dict[str, list[ToolResult]] = field(default_factory=dict)
    hold: asyncio.Event | None = None
    think: asyncio.Event | None = None
    """Holds the first sentence back (a model still thinking) until set."""
    requests: list[TurnRequest] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    prefills: list[tuple[float, TurnRequest]] = field(default_factory=list)
    written: dict[str, str] = field(default_factory=dict)
    """The reply as the model wrote it, where that differs from the sentences (line breaks)."""

    async def prefill(self, request: TurnRequest) -> bool:
        self.prefills.append((time.monotonic(), request))
        await asyncio.sleep(0.01)
        return True

    async def respond(self, request: TurnRequest):  # type: ignore[no-untyped-def]
        self.requests.append(request)
        name = request.npc.name
        try:
            await asyncio.sleep(0.01)
            yield FirstToken()
            if name in self.tools:
                results = self.tools[name]
                yield ToolsUsed(TurnToolReport(results, max(r.duration_ms for r in results)))
            sentences = self.replies.get(name, [f"{name} answers."])
            if self.think is not None:
                await self.think.wait()
            for sentence in sentences:
                yield Sentence(sentence)
            if self.hold is not None:
                await self.hold.wait()
            yield TurnDone(self.written.get(name, " ".join(sentences)))
        except (asyncio.CancelledError, GeneratorExit):
            self.cancelled.append(name)
            raise


def tone_frames(freq: int, seconds: float) -> list[bytes]:
    """Stereo 48 kHz s16le frames of a tone (a player "speaking")."""
    n = int(seconds * SAMPLE_RATE) // FRAME_SAMPLES * FRAME_SAMPLES
    t = np.arange(n) / SAMPLE_RATE
    mono = (np.sin(2 * np.pi * freq * t) * 12000).astype(np.int16)
    stereo = np.repeat(mono, 2).astype("<i2").tobytes()
    size = FRAME_SAMPLES * 4
    return [stereo[i : i + size] for i in range(0, len(stereo), size)]


class TableDriver:
    """Lockstep clock: each tick pushes one frame per player and pulls one mixer frame."""

    def __init__(self, session: TableSession, stt: ToneStt, players: list[str]) -> None:
        self.session = session
        self.stt = stt
        self.players = players
        self.queued: dict[str, list[bytes]] = {p: [] for p in players}
        self.events: list[SessionEvent] = []
        self.audible: list[str | None] = []
        self.peaks: list[int] = []
        """Loudest sample of each mixed frame (NPC voices, ambience and cues such as chimes)."""
        session.listeners.append(self.events.append)

    def say(self, player: str, text: str, seconds: float = 1.0, *, stable: bool = False) -> None:
        self.queued[player] += tone_frames(self.stt.register(text, stable=stable), seconds)

    async def tick(self) -> None:
        for number, player in enumerate(self.players):
            queue = self.queued[player]
            self.session.push_frame(number + 1, player, queue.pop(0) if queue else SILENCE_FRAME)
        holder = self.session.mixer.current
        frame = np.frombuffer(self.session.mixer.next_frame(), dtype="<i2")
        self.peaks.append(int(np.abs(frame.astype(np.int32)).max()))
        audible = holder is not None and holder.playback_started_at is not None
        self.audible.append(holder.npc if audible and not holder.done() else None)
        await asyncio.sleep(0.002)

    async def run_until(self, condition, timeout_ticks: int = 3000) -> int:  # type: ignore[no-untyped-def]
        for tick in range(timeout_ticks):
            if condition():
                return tick
            await self.tick()
        raise AssertionError(f"condition not reached in {timeout_ticks} ticks")

    def of_type(self, kind: type) -> list:  # type: ignore[type-arg]
        return [e for e in self.events if isinstance(e, kind)]
