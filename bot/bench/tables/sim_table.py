"""One simulated Discord table for ``glyphoxa bench tables``: the voice connection's threads and
five players, around a real ``TableSession``.

What a guild's table costs the bot process is what runs here, on the same code paths:

- receive: five remote speakers in a real DAVE group (``LocalDaveGroup``) send Opus that is
  DAVE- and transport-encrypted; a *socket thread* per table (discord.py has one per voice
  connection) hands each datagram to the production ``VoiceReceiver.on_datagram`` at 20 ms pace,
  which runs each decoded frame through its player's lane (VAD) right there, as the Discord
  runtime does (a player's first frame goes to the loop, which opens the lane);
- playback: a *player thread* per table does what discord.py's ``AudioPlayer`` does every 20 ms:
  read ``MixerSource`` (the mixer), Opus-encode, DAVE-encrypt, build RTP and transport-encrypt;
  it records how late each frame is against its 20 ms schedule;
- the players take turns (round robin over the five) saying one FAST line to Bartok, each after
  the previous answer finished playing, so a busy table runs turn after turn.

The packets of the next turns are built before a measurement window starts (:meth:`prepare`),
so the senders' encryption is not counted as the bot's work.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import discord.opus

from bot.bench.doubles.voice_loopback import LocalDaveGroup, LoopbackSpeaker
from bot.voice.dave import DaveReceiver
from bot.voice.frames import VoiceFrame, hear_by_speaker
from bot.voice.playback import MixerSource
from bot.voice.receiver import VoiceReceiver
from bot.voice.stt_decode import SttSpeakerDecoder
from bot.voice.transport_crypto import make_cipher

__all__ = ["PLAYERS", "SimTable", "TableWindow"]

log = logging.getLogger(__name__)

PLAYERS = ("Arin", "Tobble", "Mira", "Kestrel", "Dunmore")
_MODE = "aead_xchacha20_poly1305_rtpsize"
_FRAME_S = 0.020
_BOT_USER = 1
_BOT_SSRC = 7
_TURN_TIMEOUT_S = 30.0


@dataclass(slots=True)
class TableWindow:
    """What one table did during a measurement window."""

    frames: int = 0
    late_frames: int = 0
    """Frames sent more than 20 ms after their slot (a gap the listener hears)."""
    max_late_ms: float = 0.0
    late_spans: list[tuple[float, float]] = field(default_factory=list)
    """Each late frame as (due, sent) in ``time.monotonic()`` seconds."""
    v2v_ms: list[float] = field(default_factory=list)
    """Voice-to-voice of FAST turns: end of the player's voiced audio -> first NPC frame."""
    turns: int = 0
    failed: int = 0


class SimTable:
    """A started session (from ``open_table``) with its voice threads and five players."""

    def __init__(
        self,
        number: int,
        session: Any,
        opus_line: Sequence[bytes],
        voiced_frames: int,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.number = number
        self.session = session
        self._opus_line = list(opus_line)
        self._voiced = voiced_frames
        self._loop = loop
        group = LocalDaveGroup(channel_id=9000 + number)
        self._bot_dave = group.new_session(_BOT_USER)
        remotes = [group.new_session(100 + i) for i in range(len(PLAYERS))]
        group.join([self._bot_dave, *remotes])
        key = bytes(range(32))
        cipher = make_cipher(_MODE, key)
        self._speakers = [LoopbackSpeaker(2000 + i, cipher, s) for i, s in enumerate(remotes)]
        self.receiver = VoiceReceiver(
            loop,
            self._push,
            dave=DaveReceiver(lambda: (self._bot_dave, 1)),
            decoder=SttSpeakerDecoder,  # as the Discord client: players' audio only goes to STT
            hold_at_pace=True,
        )
        self.receiver.hear = self._hear
        self.receiver.set_transport(_MODE, key)
        self.receiver.set_own_ssrc(_BOT_SSRC)
        for i, _name in enumerate(PLAYERS):
            self.receiver.map_ssrc(2000 + i, 100 + i)
        self._outgoing = LoopbackSpeaker(_BOT_SSRC, cipher, self._bot_dave)
        self._prepared: list[tuple[int, list[bytes]]] = []
        self._sends: queue.Queue[tuple[list[bytes], int, asyncio.Future[float]] | None] = (
            queue.Queue()
        )
        self.window = TableWindow()
        self._next_player = number % len(PLAYERS)
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._socket_thread, name=f"table{number}-socket"),
            threading.Thread(target=self._player_thread, name=f"table{number}-player"),
        ]
        self._tasks: list[asyncio.Task[None]] = []

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        for thread in self._threads:
            thread.start()
        self._tasks = [
            self._loop.create_task(self._tick(), name=f"table{self.number}-tick"),
            self._loop.create_task(self._players(), name=f"table{self.number}-players"),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._stop.set()
        self._sends.put(None)
        for thread in self._threads:
            await asyncio.to_thread(thread.join, 5)
        self.receiver.close()

    def prepare(self, turns: int) -> None:
        """Build (encrypt) the packets of the next ``turns`` lines, outside the measurement."""
        while len(self._prepared) < turns:
            player = self._next_player
            self._next_player = (player + 1) % len(PLAYERS)
            speaker = self._speakers[player]
            packets = [speaker.packet(opus) for opus in self._opus_line]
            self._prepared.append((player, packets))

    def reset_window(self) -> TableWindow:
        done, self.window = self.window, TableWindow()
        return done

    # -- the players (event loop) -------------------------------------------------------------

    async def _players(self) -> None:
        await asyncio.sleep(random.uniform(0.0, 2.0))  # tables do not talk in lockstep
        while True:
            if not self._prepared:
                await asyncio.sleep(0.05)  # the runner prepares the next window's lines
                continue
            _player, packets = self._prepared.pop(0)
            before = len(self.session.traces)
            sent: asyncio.Future[float] = self._loop.create_future()
            self._sends.put((packets, self._voiced, sent))
            speech_end = await sent
            trace = await self._answer(before)
            window = self.window
            window.turns += 1
            if trace is None or trace.error or trace.playback_start is None:
                window.failed += 1
            elif trace.tier == "fast":
                window.v2v_ms.append((trace.playback_start - speech_end) * 1000)
            await asyncio.sleep(random.uniform(0.3, 1.0))  # the next player takes a breath

    async def _answer(self, before: int) -> Any:
        """The turn's trace once the NPC finished speaking (None after a timeout)."""
        deadline = time.monotonic() + _TURN_TIMEOUT_S
        while time.monotonic() < deadline:
            if len(self.session.traces) > before and not self.session.busy:
                return self.session.traces[before]
            await asyncio.sleep(0.02)
        return None

    async def _tick(self) -> None:
        while True:  # as ListeningVoiceClient does: release what reorder buffers hold
            await asyncio.sleep(0.1)
            self.receiver.tick()

    def _hear(self, frames: list[VoiceFrame]) -> list[VoiceFrame]:
        return hear_by_speaker(frames, self.session.hear_frames)

    def _push(self, frames: Sequence[VoiceFrame]) -> None:
        for frame in frames:
            name = PLAYERS[(frame.user_id - 100) % len(PLAYERS)]
            self.session.push_frame(frame.user_id, name, frame.pcm)

    # -- threads ------------------------------------------------------------------------------

    def _socket_thread(self) -> None:
        """discord.py's socket reader: one datagram every 20 ms while a player talks."""
        while True:
            job = self._sends.get()
            if job is None or self._stop.is_set():
                return
            packets, voiced, done = job
            started = time.monotonic()
            speech_end = started
            for index, datagram in enumerate(packets):
                _sleep_until(started + index * _FRAME_S)
                self.receiver.on_datagram(datagram)
                if index == voiced - 1:
                    speech_end = time.monotonic()
            self._loop.call_soon_threadsafe(_resolve, done, speech_end)

    def _player_thread(self) -> None:
        """discord.py's ``AudioPlayer``: read, encode, encrypt every 20 ms on a fixed clock."""
        source = MixerSource(self.session.mixer.next_frame)
        encoder = discord.opus.Encoder()
        started = time.monotonic()
        frame = 0
        while not self._stop.is_set():
            frame += 1
            pcm = source.read()
            self._outgoing.packet(encoder.encode(pcm, encoder.SAMPLES_PER_FRAME))
            due = started + frame * _FRAME_S
            sent = time.monotonic()
            window = self.window
            window.frames += 1
            if sent - due > _FRAME_S:
                window.late_frames += 1
                window.late_spans.append((due, sent))
            window.max_late_ms = max(window.max_late_ms, (sent - due) * 1000)
            _sleep_until(started + (frame + 1) * _FRAME_S)


def _sleep_until(moment: float) -> None:
    delay = moment - time.monotonic()
    if delay > 0:
        time.sleep(delay)


def _resolve(future: asyncio.Future[float], value: float) -> None:
    if not future.done():
        future.set_result(value)
