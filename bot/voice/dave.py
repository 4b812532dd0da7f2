"""End-to-end (DAVE) decryption of received Opus frames, on top of discord.py's session.

discord.py 2.7.1 owns the ``davey.DaveSession`` (it runs the MLS handshake on the voice
gateway) but never decrypts incoming media. This wrapper does, with the rules we verified
(DESIGN.md section 5): the Opus silence frame ``F8 FF FE`` is never encrypted and passes through;
without DAVE (protocol version 0, e.g. stage channels) frames are plain; otherwise frames are
decrypted with the sender's user id once the session is ready. Persistent failures ask the
owner to recover (re-send our key package so the voice server re-adds us to the group).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import davey

__all__ = [
    "OPUS_SILENCE",
    "DaveDecryptError",
    "DaveNotReady",
    "DaveReceiveStats",
    "DaveReceiver",
    "SessionSource",
]

log = logging.getLogger(__name__)

OPUS_SILENCE = b"\xf8\xff\xfe"

#: Returns ``(session, protocol_version)`` as discord.py currently holds them.
SessionSource = Callable[[], "tuple[davey.DaveSession | None, int]"]


class DaveNotReady(Exception):
    """DAVE is negotiated but our group membership is not established yet."""


class DaveDecryptError(Exception):
    """davey rejected the frame (unknown sender, wrong epoch, replay, tampering)."""


@dataclass(slots=True)
class DaveReceiveStats:
    decrypted: int = 0
    silence: int = 0
    plain: int = 0
    not_ready: int = 0
    failures: int = 0
    recoveries_requested: int = 0
    consecutive_failures: dict[int, int] = field(default_factory=dict)


class DaveReceiver:
    """Decrypts one voice connection's incoming frames; safe to call from the socket thread.

    Args:
        source: reads the live session and protocol version (discord.py replaces neither
            atomically with the other, so both are read per frame).
        on_recovery_needed: called (on the calling thread) when one sender's frames failed
            ``failure_threshold`` times in a row; at most once per ``recovery_cooldown_s``.
    """

    def __init__(
        self,
        source: SessionSource,
        *,
        on_recovery_needed: Callable[[], None] | None = None,
        failure_threshold: int = 50,
        recovery_cooldown_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._source = source
        self._on_recovery_needed = on_recovery_needed
        self._threshold = failure_threshold
        self._cooldown = recovery_cooldown_s
        self._clock = clock
        self._last_recovery = -float("inf")
        self.stats = DaveReceiveStats()

    def decrypt(self, user_id: int, frame: bytes) -> bytes:
        """Return the Opus frame sent by ``user_id``.

        Raises:
            DaveNotReady: DAVE is on but the group is not joined yet.
            DaveDecryptError: the frame could not be decrypted.
        """
        stats = self.stats
        if frame == OPUS_SILENCE:
            stats.silence += 1
            return frame
        session, version = self._source()
        if session is None or version == 0:
            stats.plain += 1
            return frame
        if not session.ready:
            stats.not_ready += 1
            raise DaveNotReady
        try:
            plain = session.decrypt(user_id, davey.MediaType.audio, frame)
        except Exception as error:  # davey raises ValueError; never let the thread die
            self._count_failure(user_id, error)
            raise DaveDecryptError(str(error)) from None
        stats.decrypted += 1
        failures = stats.consecutive_failures.pop(user_id, 0)
        if failures >= self._threshold:
            log.info("DAVE decryption for user %s recovered after %d failures", user_id, failures)
        return plain

    def forget(self, user_id: int) -> None:
        """Drop per-sender failure state (the user left the channel)."""
        self.stats.consecutive_failures.pop(user_id, None)

    def _count_failure(self, user_id: int, error: Exception) -> None:
        stats = self.stats
        stats.failures += 1
        count = stats.consecutive_failures.get(user_id, 0) + 1
        stats.consecutive_failures[user_id] = count
        if count == 1:
            log.debug("DAVE decrypt failed for user %s: %s", user_id, error)
        if count < self._threshold:
            return
        now = self._clock()
        if now - self._last_recovery < self._cooldown:
            return
        self._last_recovery = now
        stats.recoveries_requested += 1
        log.warning(
            "DAVE decryption for user %s failed %d times in a row (%s); requesting recovery",
            user_id,
            count,
            error,
        )
        if self._on_recovery_needed is not None:
            try:
                self._on_recovery_needed()
            except Exception:
                log.exception("DAVE recovery callback failed")
