"""Playback: the mixer's 20 ms frames as a discord.py ``AudioSource`` that survives reconnects.

discord.py's player thread calls :meth:`MixerSource.read` every 20 ms; returning ``b""`` would
end playback, so the source always returns a full frame (silence when the mixer has nothing or
fails). If the player still ends (a reconnect longer than discord.py's wait), the
:class:`PlaybackKeeper` starts it again once the voice client is connected.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import discord

__all__ = ["FRAME_BYTES", "MixerSource", "PlaybackKeeper"]

log = logging.getLogger(__name__)

FRAME_BYTES = 3840
_SILENCE = bytes(FRAME_BYTES)


class MixerSource(discord.AudioSource):
    """Pulls 48 kHz stereo s16le frames from ``next_frame`` (the mixer's; must not block)."""

    def __init__(self, next_frame: Callable[[], bytes]) -> None:
        self._next_frame = next_frame
        self.frames = 0
        self.failures = 0

    def read(self) -> bytes:
        self.frames += 1
        try:
            frame = self._next_frame()
        except Exception:
            self.failures += 1
            if self.failures == 1 or self.failures % 500 == 0:
                log.exception("mixer failed (%d times); sending silence", self.failures)
            return _SILENCE
        if len(frame) != FRAME_BYTES:
            frame = bytes(frame[:FRAME_BYTES]).ljust(FRAME_BYTES, b"\0")
        return frame

    def is_opus(self) -> bool:
        return False

    def cleanup(self) -> None:
        """The mixer outlives one player run; nothing to release here."""


class PlaybackKeeper:
    """Keeps one :class:`MixerSource` playing on a voice client until :meth:`stop`."""

    def __init__(
        self, voice_client: discord.VoiceClient, source: MixerSource, *, retry_s: float = 0.5
    ) -> None:
        self._vc = voice_client
        self._source = source
        self._retry_s = retry_s
        self._loop = asyncio.get_running_loop()
        self._task: asyncio.Task[None] | None = None
        self._stopped = True
        self._ended = False
        self.restarts = 0

    def start(self) -> None:
        self._stopped = False
        self._ensure_task()

    async def stop(self) -> None:
        self._stopped = True
        if self._task is not None:
            self._task.cancel()
            try:
                await asyncio.wait_for(self._task, timeout=2)
            except (asyncio.CancelledError, TimeoutError):
                pass
            self._task = None
        if self._vc.is_playing():
            self._vc.stop()

    def _ensure_task(self) -> None:
        if self._task is None or self._task.done():
            self._task = self._loop.create_task(self._play_when_connected(), name="playback")

    async def _play_when_connected(self) -> None:
        while not self._stopped:
            if self._ended:
                # discord.py's player can give up during a reconnect without marking itself
                # stopped (``is_playing()`` stays True); clear it so ``play`` starts a new one.
                self._ended = False
                self._vc.stop()
            if self._vc.is_connected() and not self._vc.is_playing():
                try:
                    self._vc.play(self._source, after=self._after, signal_type="voice")
                    return
                except discord.ClientException as error:
                    log.debug("playback not started yet: %s", error)
            elif self._vc.is_playing():
                return
            await asyncio.sleep(self._retry_s)

    def _after(self, error: Exception | None, *_: Any) -> None:
        """Player thread: the run ended; restart it from the loop unless we were stopped."""
        if error is not None:
            log.warning("playback ended with %r; restarting", error)
        if self._stopped:
            return
        self._ended = True
        self.restarts += 1
        try:
            self._loop.call_soon_threadsafe(self._ensure_task)
        except RuntimeError:
            pass
