"""End-to-end (DAVE) decryption of received Opus frames, on top of discord.py's session.

discord.py 2.7.1 owns the ``davey.DaveSession`` (it runs the MLS handshake on the voice
gateway) but never decrypts incoming media. This wrapper does, following discord.js
(``networking/DAVESession.ts``, ``receive/VoiceReceiver.ts``) with one addition:

- the Opus silence frame ``F8 FF FE`` is never encrypted and passes through;
- protocol version 0 (no E2EE, or after a downgrade): a ready session whose decryptor for the
  sender is in davey's passthrough mode decrypts (it passes plain frames and still decrypts a
  sender that has not switched yet); otherwise frames are plain;
- while our session is not ready (joining, or re-forming after a reinit or a v0 -> v1 upgrade)
  plain frames pass through as discord.js does;
- in addition, a frame that still carries DAVE's trailer (magic ``FA FA``) is never handed
  on when it cannot be decrypted: Opus would decode it as noise;
- decryption failures are counted across all senders and any success resets the count, so one
  broken sender never triggers a recovery that would silence the others; failures are not
  counted while a transition is pending or our session is re-forming. Past the threshold the
  owner is asked to recover (opcode 31, then a new key package).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import davey

__all__ = [
    "DEFAULT_FAILURE_THRESHOLD",
    "OPUS_SILENCE",
    "DaveDecryptError",
    "DaveNotReady",
    "DaveReceiveStats",
    "DaveReceiver",
    "SessionSource",
    "looks_encrypted",
]

log = logging.getLogger(__name__)

OPUS_SILENCE = b"\xf8\xff\xfe"
#: discord.js DEFAULT_DECRYPTION_FAILURE_TOLERANCE: a few packets slip past at every transition.
DEFAULT_FAILURE_THRESHOLD = 36
_MAGIC = b"\xfa\xfa"
_MIN_TRAILER = 12  # 8-byte tag, 1-byte nonce, supplemental size byte, 2-byte magic marker
_FATAL = (KeyboardInterrupt, SystemExit, GeneratorExit)

#: Returns ``(session, protocol_version)`` as discord.py currently holds them.
SessionSource = Callable[[], "tuple[davey.DaveSession | None, int]"]


class DaveNotReady(Exception):
    """DAVE is negotiated but our group membership is not established yet."""


class DaveDecryptError(Exception):
    """The frame is end-to-end encrypted and could not be decrypted."""


def looks_encrypted(frame: bytes) -> bool:
    """True if ``frame`` ends with a DAVE trailer (supplemental size, then ``FA FA``)."""
    return (
        len(frame) >= _MIN_TRAILER
        and frame[-2:] == _MAGIC
        and _MIN_TRAILER <= frame[-3] <= len(frame)
    )


@dataclass(slots=True)
class DaveReceiveStats:
    decrypted: int = 0
    silence: int = 0
    plain: int = 0
    """Frames passed on unencrypted (no DAVE, or passthrough while the session re-forms)."""
    not_ready: int = 0
    failures: int = 0
    uncounted_failures: int = 0
    """Failures during a pending transition or while re-forming (not toward recovery)."""
    panics: int = 0
    """davey panicked (a PyO3 ``PanicException``, a BaseException); the frame was dropped."""
    recoveries_requested: int = 0
    consecutive_failures: int = 0


class DaveReceiver:
    """Decrypts one voice connection's incoming frames; safe to call from the socket thread.

    Args:
        source: reads the live session and protocol version (discord.py replaces neither
            atomically with the other, so both are read per frame).
        pending: True while a DAVE transition is announced but not executed yet.
        on_recovery_needed: called (on the calling thread) once the frames of every sender
            failed more than ``failure_threshold`` times in a row; then not again until the
            session re-formed (:meth:`transition_executed`, or it turns ready again).
    """

    def __init__(
        self,
        source: SessionSource,
        *,
        pending: Callable[[], bool] | None = None,
        on_recovery_needed: Callable[[], None] | None = None,
        failure_threshold: int = DEFAULT_FAILURE_THRESHOLD,
    ) -> None:
        self._source = source
        self._pending = pending or (lambda: False)
        self._on_recovery_needed = on_recovery_needed
        self._threshold = failure_threshold
        self._recovering = False
        self._seen_unready = False
        self.stats = DaveReceiveStats()

    @property
    def recovering(self) -> bool:
        """Recovery was requested and the session has not re-formed since."""
        return self._recovering

    def decrypt(self, user_id: int, frame: bytes) -> bytes:
        """Return the Opus frame sent by ``user_id``.

        Raises:
            DaveNotReady: DAVE is on, our session is not ready and the frame is encrypted.
            DaveDecryptError: the frame is encrypted and could not be decrypted.
        """
        stats = self.stats
        if frame == OPUS_SILENCE:
            stats.silence += 1
            return frame
        session, version = self._source()
        if version == 0:
            return self._plain_channel(session, user_id, frame)
        if session is None or not session.ready:
            self._seen_unready = True
            if looks_encrypted(frame):
                stats.not_ready += 1
                raise DaveNotReady
            stats.plain += 1
            return frame
        if self._recovering and self._seen_unready:
            self._re_formed()
        try:
            plain = session.decrypt(user_id, davey.MediaType.audio, frame)
        except BaseException as error:  # davey raises ValueError, or panics (BaseException)
            if isinstance(error, _FATAL):
                raise
            self._failed(user_id, error)
            raise DaveDecryptError(str(error)) from None
        stats.decrypted += 1
        stats.consecutive_failures = 0
        return plain

    def reinitialised(self) -> None:
        """The owner re-created our session (recovery): it re-forms with the next welcome."""
        self._recovering = True
        self._seen_unready = True
        self.stats.consecutive_failures = 0

    def transition_executed(self) -> None:
        """The voice server executed a transition (op 22): the group re-formed."""
        self._re_formed()

    def reset(self) -> None:
        """A new voice connection (READY): no recovery is in flight any more."""
        self._recovering = False
        self._seen_unready = False
        self.stats.consecutive_failures = 0

    def recovery_failed(self) -> None:
        """The owner could not start the recovery: let the next failures ask again."""
        self._recovering = False

    def forget(self, user_id: int) -> None:
        """The user left the channel. Failures are counted across users, so nothing to drop."""
        del user_id

    # -- internals ---------------------------------------------------------------------------

    def _plain_channel(
        self, session: davey.DaveSession | None, user_id: int, frame: bytes
    ) -> bytes:
        """Protocol version 0: davey's passthrough mode decrypts a sender still encrypting."""
        stats = self.stats
        if session is not None and session.ready and session.can_passthrough(user_id):
            try:
                plain = session.decrypt(user_id, davey.MediaType.audio, frame)
            except BaseException as error:
                if isinstance(error, _FATAL):
                    raise
                self._uncounted(user_id, error)
                raise DaveDecryptError(str(error)) from None
            if plain is frame or plain == frame:
                stats.plain += 1
            else:
                stats.decrypted += 1
            return plain
        if looks_encrypted(frame):
            self._uncounted(user_id, "encrypted frame on a channel without DAVE")
            raise DaveDecryptError("end-to-end encrypted frame without a session to decrypt it")
        stats.plain += 1
        return frame

    def _re_formed(self) -> None:
        if self._recovering:
            log.info("DAVE session re-formed after recovery")
        self._recovering = False
        self._seen_unready = False
        self.stats.consecutive_failures = 0

    def _uncounted(self, user_id: int, error: object) -> None:
        self.stats.uncounted_failures += 1
        log.debug("DAVE frame of user %s dropped: %s", user_id, error)

    def _failed(self, user_id: int, error: BaseException) -> None:
        stats = self.stats
        if not isinstance(error, Exception):
            stats.panics += 1
            log.error("davey panicked decrypting a frame of user %s: %r", user_id, error)
        if self._recovering or self._pending():
            self._uncounted(user_id, error)
            return
        stats.failures += 1
        stats.consecutive_failures += 1
        count = stats.consecutive_failures
        if count == 1:
            log.debug("DAVE decrypt failed for user %s: %s", user_id, error)
        if count <= self._threshold:
            return
        self._recovering = True
        self._seen_unready = False
        stats.recoveries_requested += 1
        log.warning(
            "DAVE decryption failed %d times in a row for every sender (last: user %s, %s); "
            "re-joining the group (opcode 31, new key package)",
            count,
            user_id,
            error,
        )
        if self._on_recovery_needed is not None:
            try:
                self._on_recovery_needed()
            except Exception:
                log.exception("DAVE recovery callback failed")
                self._recovering = False
