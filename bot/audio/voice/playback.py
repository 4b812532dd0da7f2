"""Playback: the mixer's audio on a voice connection, sent only while there is audio.

A Discord client sends nothing while its user is quiet: it sets the speaking flag (op 5) when
it starts, sends a 20 ms Opus frame every 20 ms while there is sound, ends with five Opus
silence frames and clears the flag. :class:`Playback` does the same for the table's mixer on a
thread of its own: it sleeps until the mixer says audio may be ready (an NPC's first TTS chunk,
an ambience track, a DM command's cue), so the first frame goes out at once instead of at the
next tick of a 20 ms clock, and an idle table sends no audio at all (the connection's UDP
keepalive, :mod:`bot.audio.voice.keepalive`, keeps it reachable). A gap inside an NPC's speech (its
TTS running behind) is filled with silence for up to ``max_gap_s`` so one answer stays one
utterance. What it sends on goes through an :class:`AudioOut`: :class:`DiscordOut` is
discord.py's voice client (Opus, DAVE, RTP, transport encryption); the tables bench passes its
own, so it measures this very loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

import discord
import discord.opus
from discord.enums import SpeakingState

from bot.audio.voice.dave import OPUS_SILENCE

__all__ = [
    "FRAME_BYTES",
    "FRAME_S",
    "TRAILING_SILENCE_FRAMES",
    "AudioFeed",
    "AudioOut",
    "DiscordOut",
    "Playback",
]

log = logging.getLogger(__name__)

FRAME_BYTES = 3840
"""20 ms of 48 kHz stereo s16le."""
FRAME_S = 0.02
TRAILING_SILENCE_FRAMES = 5
"""Discord's clients end each utterance with five Opus silence frames."""
_SILENCE = bytes(FRAME_BYTES)
_IDLE_CHECK_S = 1.0
"""An idle playback looks at the feed this often even without being woken (a safety net)."""
_READY_CHECK_S = 0.5
_SAMPLES_PER_FRAME = 960
_TIMESTAMP_MOD = 2**32


class AudioFeed(Protocol):
    """What playback pulls from (the :class:`~bot.audio.speech.mixer.Mixer`); thread-safe."""

    def pull_audio(self) -> bytes | None:
        """The next 20 ms frame, or None if nothing in it would be heard."""
        ...

    @property
    def mid_utterance(self) -> bool:
        """Silence now is a gap inside speech that has started, not its end."""
        ...

    def add_listener(self, callback: Callable[[], None]) -> None: ...

    def remove_listener(self, callback: Callable[[], None]) -> None: ...


class AudioOut(Protocol):
    """Where playback sends: one voice connection (called on the playback thread)."""

    def connected(self) -> bool:
        """Packets can be sent now."""
        ...

    def wait_connected(self, timeout: float) -> bool:
        """Block until connected (True) or ``timeout`` seconds passed (False)."""
        ...

    def begin(self) -> None:
        """An utterance starts: set the speaking flag."""
        ...

    def send(self, data: bytes, *, encode: bool) -> None:
        """One frame: 20 ms of PCM to encode, or an Opus frame as it is."""
        ...

    def end(self) -> None:
        """The utterance ended (its silence frames are sent): clear the speaking flag."""
        ...


class Playback:
    """Sends ``feed``'s audio on ``out`` from its own thread until :meth:`stop`.

    Args:
        feed: the mixer.
        out: the voice connection.
        name: the thread's name.
        max_gap_s: silence inside an NPC's speech sent as silence (one utterance) for at most
            this long; past it the utterance ends and a new one starts when audio comes.
        on_frame: called after each packet with its 20 ms slot and when it was sent
            (``time.monotonic()``), for the tables bench's lateness count.
    """

    def __init__(
        self,
        feed: AudioFeed,
        out: AudioOut,
        *,
        name: str = "voice-playback",
        max_gap_s: float = 1.0,
        on_frame: Callable[[float, float], None] | None = None,
    ) -> None:
        self._feed = feed
        self._out = out
        self._name = name
        self._max_gap = max(0, round(max_gap_s / FRAME_S))
        self._on_frame = on_frame
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._listener = self._wake.set
        self._thread: threading.Thread | None = None
        self.utterances = 0
        self.packets = 0
        """Packets sent: audio, silence inside speech, and the silence frames that end it."""
        self.failures = 0
        self.talking = False
        """An utterance is in progress (the speaking flag is set)."""

    def start(self) -> None:
        if self._thread is not None:
            return
        self._feed.add_listener(self._listener)
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()

    async def stop(self) -> None:
        """End the utterance in progress (its silence frames, the flag) and the thread."""
        self._stopping.set()
        self._wake.set()
        self._feed.remove_listener(self._listener)
        thread = self._thread
        if thread is not None and thread.is_alive():
            await asyncio.to_thread(thread.join, 5)

    # -- the playback thread -------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait(_IDLE_CHECK_S)
            self._wake.clear()
            if self._stopping.is_set():
                return
            frame = self._pull()
            if frame is None:
                continue
            try:
                self._utterance(frame)
            except Exception:  # a bug must not silence the table for the rest of the night
                self.failures += 1
                log.exception("playback failed during an utterance; waiting for the next")
                self._end()

    def _utterance(self, frame: bytes | None) -> None:
        if not self._until_connected():
            return
        self._begin()
        started, sent, gap, tail = time.monotonic(), 0, 0, 0
        while True:
            if frame is not None:
                gap = tail = 0
                data, encode = frame, True
            elif gap < self._max_gap and not self._stopping.is_set() and self._feed.mid_utterance:
                gap += 1
                data, encode = _SILENCE, True
            elif tail < TRAILING_SILENCE_FRAMES:
                tail += 1
                data, encode = OPUS_SILENCE, False
            else:
                break
            if not self._out.connected():
                # A reconnect (voice server move, resume): hold the audio, flag it again after.
                if not self._until_connected():
                    break
                self._begin()
                started, sent = time.monotonic(), 0
            due = started + sent * FRAME_S
            self._out.send(data, encode=encode)
            sent += 1
            self.packets += 1
            if self._on_frame is not None:
                self._on_frame(due, time.monotonic())
            _sleep_until(started + sent * FRAME_S)
            frame = None if self._stopping.is_set() else self._pull()
        self._end()

    def _begin(self) -> None:
        self.talking = True
        self.utterances += 1
        self._out.begin()

    def _end(self) -> None:
        if self.talking:
            self.talking = False
            self._out.end()

    def _until_connected(self) -> bool:
        while not self._stopping.is_set():
            if self._out.connected() or self._out.wait_connected(_READY_CHECK_S):
                return not self._stopping.is_set()
        return False

    def _pull(self) -> bytes | None:
        try:
            frame = self._feed.pull_audio()
        except Exception:
            self.failures += 1
            if self.failures == 1 or self.failures % 500 == 0:
                log.exception("the mixer failed (%d times); sending nothing for it", self.failures)
            return None
        if frame is not None and len(frame) != FRAME_BYTES:
            frame = bytes(frame[:FRAME_BYTES]).ljust(FRAME_BYTES, b"\0")
        return frame


def _sleep_until(moment: float) -> None:
    delay = moment - time.monotonic()
    if delay > 0:
        time.sleep(delay)


class DiscordOut:
    """discord.py's voice client as an :class:`AudioOut`: ``send_audio_packet`` does Opus,
    DAVE, the RTP header and transport encryption, as its own ``AudioPlayer`` would."""

    def __init__(self, voice_client: discord.VoiceClient) -> None:
        self._vc = voice_client
        if not voice_client.encoder:  # VoiceClient.play makes it; playback never calls play
            voice_client.encoder = discord.opus.Encoder(signal_type="voice")
        self._last_sent: float | None = None

    def connected(self) -> bool:
        return self._vc.is_connected()

    def wait_connected(self, timeout: float) -> bool:
        return bool(self._vc.wait_until_connected(timeout))

    def begin(self) -> None:
        # RTP timestamps count sampling time (RFC 3550): after a pause they jump by its length,
        # as a WebRTC client's do, so listeners' jitter buffers see a pause, not a late packet.
        if self._last_sent is not None:
            skipped = int((time.monotonic() - self._last_sent) / FRAME_S) - 1
            if skipped > 0:
                vc = self._vc
                vc.timestamp = (vc.timestamp + skipped * _SAMPLES_PER_FRAME) % _TIMESTAMP_MOD
        self._speak(SpeakingState.voice)

    def send(self, data: bytes, *, encode: bool) -> None:
        self._vc.send_audio_packet(data, encode=encode)
        self._last_sent = time.monotonic()

    def end(self) -> None:
        self._speak(SpeakingState.none)

    def _speak(self, state: SpeakingState) -> None:
        try:
            speak = self._vc.ws.speak(state)
        except Exception:  # no websocket right now (reconnecting): the next utterance says it
            log.debug("could not send the speaking flag (%s)", state, exc_info=True)
            return
        try:
            asyncio.run_coroutine_threadsafe(speak, self._vc.loop)
        except RuntimeError:  # the loop is closed: the bot is shutting down
            speak.close()
