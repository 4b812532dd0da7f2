"""One simulated Discord table for ``glyphoxa bench tables``: the voice connection's threads and
five players, around a real ``TableSession``.

What a guild's table costs the bot process is what runs here, on the same code paths:

- receive: five remote speakers in a real DAVE group (``LocalDaveGroup``) send Opus that is
  DAVE- and transport-encrypted; a *socket thread* per table (discord.py has one per voice
  connection) hands each datagram to the production ``VoiceReceiver.on_datagram`` at 20 ms pace,
  which runs each decoded frame through its player's lane (VAD) right there, as the Discord
  runtime does (a player's first frame goes to the loop, which opens the lane);
- playback: the production :class:`~bot.audio.voice.playback.Playback` thread per table, sending
  only while the mixer has audio; what it sends goes through what discord.py's ``send_audio_packet``
  does (Opus-encode, DAVE-encrypt, build RTP, transport-encrypt); each frame's lateness against
  its 20 ms slot is recorded;
- the connection's watchers, as ``ListeningVoiceClient`` runs them: a tick every 100 ms
  (reorder buffers, the deaf detector, the stall watch) and the UDP keepalive every 5 s;
- the players take turns (round robin over the five) saying one FAST line to Bartok, each after
  the previous answer finished playing, so a busy table runs turn after turn; an idle table
  (:meth:`SimTable.hush`) has players who say nothing.

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

from bot.audio.voice.dave import DaveReceiver
from bot.audio.voice.deaf import DeafDetector
from bot.audio.voice.frames import VoiceFrame, hear_by_speaker
from bot.audio.voice.keepalive import UdpKeepalive
from bot.audio.voice.playback import Playback
from bot.audio.voice.receiver import VoiceReceiver
from bot.audio.voice.stall import StallWatch
from bot.audio.voice.stt_decode import SttSpeakerDecoder
from bot.audio.voice.transport_crypto import make_cipher
from bot.bench.doubles.voice_loopback import LocalDaveGroup, LoopbackSpeaker

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
    """Packets the table sent (its NPCs' audio and the silence frames ending it)."""
    keepalives: int = 0
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
        self._outgoing = _SimOut(LoopbackSpeaker(_BOT_SSRC, cipher, self._bot_dave))
        self.playback = Playback(
            session.mixer, self._outgoing, name=f"table{number}-playback", on_frame=self._sent
        )
        self.keepalive = UdpKeepalive(self._keepalive)
        self._deaf = DeafDetector()
        self._stalls = StallWatch()
        self._hushed = False
        self._in_turn = False
        self._prepared: list[tuple[int, list[bytes]]] = []
        self._sends: queue.Queue[tuple[list[bytes], int, asyncio.Future[float]] | None] = (
            queue.Queue()
        )
        self.window = TableWindow()
        self._next_player = number % len(PLAYERS)
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._socket_thread, name=f"table{number}-socket"),
        ]
        self._tasks: list[asyncio.Task[None]] = []

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        for thread in self._threads:
            thread.start()
        self.playback.start()
        self.keepalive.kick()
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
        await self.playback.stop()
        await self.keepalive.aclose()
        self.receiver.close()

    def prepare(self, turns: int) -> None:
        """Build (encrypt) the packets of the next ``turns`` lines, outside the measurement."""
        while len(self._prepared) < turns:
            player = self._next_player
            self._next_player = (player + 1) % len(PLAYERS)
            speaker = self._speakers[player]
            packets = [speaker.packet(opus) for opus in self._opus_line]
            self._prepared.append((player, packets))

    @property
    def busy(self) -> bool:
        """A line is being said or answered, or playback is sending."""
        return self._in_turn or bool(self.session.busy) or self.playback.talking

    def hush(self) -> None:
        """The players stop talking after the current turn, for good (an idle table)."""
        self._hushed = True

    def reset_window(self) -> TableWindow:
        done, self.window = self.window, TableWindow()
        return done

    # -- the players (event loop) -------------------------------------------------------------

    async def _players(self) -> None:
        await asyncio.sleep(random.uniform(0.0, 2.0))  # tables do not talk in lockstep
        while not self._hushed:
            if not self._prepared:
                await asyncio.sleep(0.05)  # the runner prepares the next window's lines
                continue
            player, packets = self._prepared.pop(0)
            self._in_turn = True
            before = len(self.session.traces)
            sent: asyncio.Future[float] = self._loop.create_future()
            self._stalls.speaking(100 + player, time.monotonic())  # SPEAKING, as Discord says
            self._sends.put((packets, self._voiced, sent))
            speech_end = await sent
            trace = await self._answer(before)
            window = self.window
            window.turns += 1
            if trace is None or trace.error or trace.playback_start is None:
                window.failed += 1
            elif trace.tier == "fast":
                window.v2v_ms.append((trace.playback_start - speech_end) * 1000)
            self._in_turn = False
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
        receiver = self.receiver
        while True:  # as ListeningVoiceClient does: reorder buffers, deaf detector, stall watch
            await asyncio.sleep(0.1)
            receiver.tick()
            now = time.monotonic()
            self._deaf.check(now, receiver.snapshot(), receiver.last_decoded_at)
            self._stalls.check(now, receiver.rtp_at, receiver.last_rtp_at)

    def _keepalive(self, packet: bytes) -> bool:
        del packet  # a datagram on the bot's socket; the bench only counts it
        self.window.keepalives += 1
        return True

    def _sent(self, due: float, sent: float) -> None:
        """Playback thread: one packet went out in its slot ``due``."""
        window = self.window
        window.frames += 1
        if sent - due > _FRAME_S:
            window.late_frames += 1
            window.late_spans.append((due, sent))
        window.max_late_ms = max(window.max_late_ms, (sent - due) * 1000)

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


class _SimOut:
    """A table's voice connection in the bench: what discord.py's ``send_audio_packet`` does
    (Opus-encode, DAVE-encrypt, RTP header, transport-encrypt), the packet then dropped."""

    def __init__(self, speaker: LoopbackSpeaker) -> None:
        self._speaker = speaker
        self._encoder = discord.opus.Encoder(signal_type="voice")

    def connected(self) -> bool:
        return True

    def wait_connected(self, timeout: float) -> bool:
        return True

    def begin(self) -> None:
        """The speaking flag is a websocket message: nothing to do here."""

    def send(self, data: bytes, *, encode: bool) -> None:
        opus = self._encoder.encode(data, self._encoder.SAMPLES_PER_FRAME) if encode else data
        self._speaker.packet(opus)

    def end(self) -> None:
        """See :meth:`begin`."""


def _sleep_until(moment: float) -> None:
    delay = moment - time.monotonic()
    if delay > 0:
        time.sleep(delay)


def _resolve(future: asyncio.Future[float], value: float) -> None:
    if not future.done():
        future.set_result(value)
