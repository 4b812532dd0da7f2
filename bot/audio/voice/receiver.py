"""The receive path: raw UDP datagram -> per-speaker 20 ms PCM frames on the event loop.

``on_datagram`` runs on discord.py's socket-reader thread. It filters and parses RTP, removes
transport encryption, padding and the header-extension body, removes DAVE encryption and feeds
the speaker's Opus decoder (:mod:`bot.audio.voice.opus_decode`). Decoded frames cross into asyncio
through one coalesced ``loop.call_soon_threadsafe`` (neither side ever waits for the other),
unless a ``FrameHearer`` takes them on the socket thread first: the speech lanes run their VAD
right there and wake the loop only for speech events (:mod:`bot.audio.speech.lane_feed`).
Every datagram is counted exactly once: accepted, or dropped with a reason.

At Discord's pace (a packet every 20 ms) each packet finds the caches cold: decrypting,
decoding and hearing it cost several times what they do in a loop (``glyphoxa bench receive``).
So with ``hold_at_pace`` a talking player's packet waits for their next one, and the two run
back to back, the second on warm caches. Only audio that follows audio waits (20 ms): a
speaker's first packet, the Opus silence frames a client sends when its player stops, and
packets in a burst run at once, and a packet whose successor does not come is released within
a tick (``tick``), as a reorder buffer's gap is.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bot.audio.voice.dave import OPUS_SILENCE, DaveDecryptError, DaveNotReady, DaveReceiver
from bot.audio.voice.frames import FrameHearer, FrameSink, VoiceFrame
from bot.audio.voice.opus_decode import DecodedFrame, SpeakerDecoder
from bot.audio.voice.receive_counters import DropReason, ReceiveCounters
from bot.audio.voice.rtp import (
    NONCE_SIZE,
    RtpParseError,
    parse_header,
    parse_ssrc,
    parse_user_id,
    peek_ssrc,
    strip_padding_and_extension,
)
from bot.audio.voice.transport_crypto import TransportCipher, TransportDecryptError, make_cipher

__all__ = ["FrameHearer", "FrameSink", "VoiceFrame", "VoiceReceiver"]

log = logging.getLogger(__name__)

_FATAL = (KeyboardInterrupt, SystemExit, GeneratorExit)

OP_READY = 2
OP_SESSION_DESCRIPTION = 4
OP_SPEAKING = 5
OP_CLIENT_DISCONNECT = 13

_PACE_S = (0.01, 0.06)
"""Gaps between one speaker's packets that mean a live stream (Discord sends every 20 ms)."""
_HOLD_MAX_S = 0.04
"""A held packet whose successor is this late is released on its own."""


@dataclass(slots=True)
class _Speaker:
    user_id: int
    decoder: SpeakerDecoder
    last_packet: float
    talking: bool = False
    """Their last packet was audio, not the Opus silence frame."""
    held: bytes | None = None
    """A datagram waiting to run with their next one (``hold_at_pace``)."""
    held_at: float = 0.0


class VoiceReceiver:
    """One voice connection's receive pipeline.

    Args:
        loop: the event loop that owns ``sink``.
        sink: called on ``loop`` with batches of decoded frames.
        dave: DAVE decryption; ``None`` means a channel without end-to-end encryption.
        reorder_depth: packets a gap is waited out before it is concealed (~20 ms each).
        idle_flush_s: a speaker silent this long has its reorder buffer flushed.
        decoder: the per-SSRC decoder class (its output format; ``SttSpeakerDecoder`` decodes
            straight to the 16 kHz mono the speech lanes want).
        hold_at_pace: run a talking player's packets in pairs (see the module docstring).
        clock: monotonic seconds (tests replay time with their own).
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        sink: FrameSink,
        *,
        dave: DaveReceiver | None = None,
        reorder_depth: int = 3,
        idle_flush_s: float = 0.1,
        decoder: type[SpeakerDecoder] = SpeakerDecoder,
        hold_at_pace: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._loop = loop
        self._clock = clock
        self._sink = sink
        self.dave = dave
        self._depth = reorder_depth
        self._idle_flush = idle_flush_s
        self._decoder = decoder
        self._hold_at_pace = hold_at_pace
        self._lock = threading.Lock()
        self._cipher: TransportCipher | None = None
        self._own_ssrc: int | None = None
        self._ssrc_users: dict[int, int] = {}
        self._speakers: dict[int, _Speaker] = {}
        self._retired = ReceiveCounters()
        self._pending: deque[VoiceFrame] = deque()
        self._scheduled = False
        self._next_idle_check = 0.0
        self._closed = False
        self.hear: FrameHearer | None = None
        """Takes frames on the socket thread before the loop's ``sink`` gets the rest."""
        self.counters = ReceiveCounters()
        self.last_decoded_at = 0.0
        """``clock()`` when a packet other than the Opus silence frame last decoded."""
        self._heard: dict[int, float] = {}
        self._arrived: dict[int, float] = {}
        self._rtp_at: dict[int, float] = {}
        self.last_rtp_at = 0.0
        """``clock()`` when an RTP packet from anyone else last arrived (decryptable or not)."""

    # -- configuration (event loop thread) -------------------------------------------------

    def set_transport(self, mode: str, key: bytes | Sequence[int]) -> None:
        """Install the key from SESSION_DESCRIPTION (op 4); a reconnect brings a new one.

        Raises:
            ValueError: unsupported mode or a key that is not 32 bytes. The previous key is
                removed all the same: it belongs to a session that no longer exists, and packets
                are better counted as ``no_key`` than decrypted with it.
        """
        try:
            if not isinstance(key, bytes | bytearray | list | tuple):
                raise ValueError(f"voice secret key must be a list of bytes, not {type(key)}")
            cipher: TransportCipher | None = make_cipher(mode, key)
        except (ValueError, TypeError, OverflowError) as error:
            cipher = None
            raise ValueError(str(error)) from None
        finally:
            with self._lock:
                self._cipher = cipher

    def set_own_ssrc(self, ssrc: int | None) -> None:
        with self._lock:
            self._own_ssrc = ssrc

    def new_session(self, own_ssrc: int) -> None:
        """READY (op 2): a new voice session. Every SSRC is announced again (op 5) and decoder
        state belongs to the old streams, so both go; the transport key comes with op 4."""
        with self._lock:
            self._own_ssrc = own_ssrc
            self._ssrc_users.clear()
            for ssrc in list(self._speakers):
                self._retire(ssrc)
            self._cipher = None
        if self.dave is not None:
            self.dave.reset()

    def map_ssrc(self, ssrc: int, user_id: int) -> None:
        """SPEAKING (op 5): ``ssrc`` now carries ``user_id``'s audio."""
        with self._lock:
            previous = self._ssrc_users.get(ssrc)
            if previous is not None and previous != user_id:
                self._retire(ssrc)
            self._ssrc_users[ssrc] = user_id

    def forget_user(self, user_id: int) -> None:
        """CLIENT_DISCONNECT (op 13): the user left; drop their SSRCs and decoders."""
        with self._lock:
            for ssrc in [s for s, u in self._ssrc_users.items() if u == user_id]:
                del self._ssrc_users[ssrc]
                self._retire(ssrc)
        if self.dave is not None:
            self.dave.forget(user_id)

    def user_for(self, ssrc: int) -> int | None:
        return self._ssrc_users.get(ssrc)

    def arrived_at(self, user_id: int) -> float | None:
        """``clock()`` when a packet of ``user_id`` last reached the decoder (socket thread)."""
        return self._arrived.get(user_id)

    def rtp_at(self, user_id: int) -> float | None:
        """``clock()`` when an RTP packet on one of ``user_id``'s SSRCs last arrived, whether
        or not it decrypted (the stall watch: did their packets reach us at all?)."""
        return self._rtp_at.get(user_id)

    def heard_at(self, user_id: int) -> float | None:
        """``clock()`` when audio (not the silence frame) of ``user_id`` last decoded."""
        return self._heard.get(user_id)

    def handle_gateway(self, message: dict[str, Any]) -> None:
        """Apply one voice gateway JSON message (the discord.py websocket hook calls this)."""
        op = message.get("op")
        data = message.get("d")
        try:
            if not isinstance(data, dict):
                return
            if op == OP_SPEAKING and "ssrc" in data and "user_id" in data:
                self.map_ssrc(parse_ssrc(data["ssrc"]), parse_user_id(data["user_id"]))
            elif op == OP_CLIENT_DISCONNECT and "user_id" in data:
                self.forget_user(parse_user_id(data["user_id"]))
            elif op == OP_READY and "ssrc" in data:
                self.new_session(parse_ssrc(data["ssrc"]))
            elif op == OP_SESSION_DESCRIPTION and "secret_key" in data:
                self.set_transport(str(data.get("mode")), data["secret_key"])
        except (TypeError, ValueError, OverflowError) as error:
            log.warning("ignoring malformed voice gateway op %s: %s", op, error)

    def snapshot(self) -> ReceiveCounters:
        """Counters including decoder statistics, as one consistent copy."""
        with self._lock:
            out = self.counters.copy()  # the live counters leave decoding to the decoders
            out.add_decoding(self._retired)
            for speaker in self._speakers.values():
                out.add_decoding(speaker.decoder.stats)
            out.discarded = self._retired.discarded
        return out

    def flush(self) -> list[VoiceFrame]:
        """Release every frame held in reorder buffers (end of stream); returns them."""
        with self._lock:
            return self._flush_idle(float("inf"), idle=0.0)

    def buffered(self) -> int:
        """Packets held: in reorder buffers, or waiting for their speaker's next one."""
        with self._lock:
            speakers = self._speakers.values()
            return sum(s.decoder.buffered + (s.held is not None) for s in speakers)

    def close(self) -> None:
        """Stop delivering; later datagrams are counted and ignored."""
        self._closed = True

    # -- socket thread -----------------------------------------------------------------------

    def on_datagram(self, data: bytes) -> None:
        """socket listener: process one datagram and hand frames on. Never raises."""
        frames = self.process(data)
        hear = self.hear
        if frames and hear is not None and not self._closed:
            try:
                left = hear(frames)
            except Exception:  # a bug there must not make the bot deaf: the loop gets them
                log.exception("hearing %d frames on the socket thread failed", len(frames))
            else:
                self.counters.heard += len(frames) - len(left)
                frames = left
        self._hand_off(frames)

    def tick(self) -> None:
        """Release frames held for speakers who went quiet (call every ~100 ms, any thread).

        Without it, a reorder buffer waiting out a gap at the end of an utterance would only
        be flushed when the next datagram arrives.
        """
        with self._lock:
            frames = self._flush_idle(self._clock())
        self._hand_off(frames)

    def _hand_off(self, frames: list[VoiceFrame]) -> None:
        if not frames or self._closed:
            return
        pending = self._pending
        pending.extend(frames)
        if not self._scheduled:
            self._scheduled = True
            try:
                self._loop.call_soon_threadsafe(self._drain)
            except RuntimeError:  # loop closed during shutdown
                self._closed = True

    def process(self, data: bytes) -> list[VoiceFrame]:
        """Run one datagram through the pipeline and return the frames now ready."""
        with self._lock:
            self.counters.received += 1
            now = self._clock()
            frames: list[VoiceFrame] = []
            ssrc = peek_ssrc(data)
            if ssrc is not None and ssrc != self._own_ssrc:
                self.last_rtp_at = now
                user_id = self._ssrc_users.get(ssrc)
                if user_id is not None:
                    self._rtp_at[user_id] = now
            held, earlier = self._hold(ssrc, data, now) if self._hold_at_pace else (False, None)
            if earlier is not None:
                self._run(earlier, frames)
            if not held:
                self._run(data, frames)
            if now >= self._next_idle_check:
                self._next_idle_check = now + self._idle_flush
                frames.extend(self._flush_idle(now))
            return frames

    def _hold(self, ssrc: int | None, data: bytes, now: float) -> tuple[bool, bytes | None]:
        """Whether ``data`` waits for its speaker's next packet, and the one that waited for it."""
        speaker = self._speakers.get(ssrc) if ssrc is not None else None
        if speaker is None:
            return False, None
        earlier = speaker.held
        if earlier is not None:
            speaker.held = None
            return False, earlier
        gap = now - speaker.last_packet
        if speaker.talking and _PACE_S[0] <= gap <= _PACE_S[1]:
            speaker.held, speaker.held_at = data, now
            return True, None
        return False, None

    def _run(self, data: bytes, frames: list[VoiceFrame]) -> None:
        try:
            reason = self._process_locked(data, frames)
        except BaseException as error:  # a bug (or a panic) must not kill the socket thread
            if isinstance(error, _FATAL):
                raise
            log.exception("voice receive failed on a %d-byte datagram", len(data))
            reason = DropReason.INTERNAL_ERROR
        if reason is None:
            self.counters.accepted += 1
        else:
            self.counters.dropped[reason] += 1

    def _process_locked(self, data: bytes, frames: list[VoiceFrame]) -> DropReason | None:
        try:
            header = parse_header(data, self._own_ssrc)
        except RtpParseError as error:
            return DropReason(error.reason)
        user_id = self._ssrc_users.get(header.ssrc)
        if user_id is None:
            return DropReason.UNKNOWN_SSRC
        cipher = self._cipher
        if cipher is None:
            return DropReason.NO_KEY
        aad = header.aad_size
        try:
            plaintext = cipher.decrypt(data[:aad], data[aad:-NONCE_SIZE], data[-NONCE_SIZE:])
            opus = strip_padding_and_extension(header, plaintext)
        except TransportDecryptError:
            return DropReason.DECRYPT_FAILED
        except RtpParseError as error:
            return DropReason(error.reason)
        if self.dave is not None:
            try:
                opus = self.dave.decrypt(user_id, opus)
            except DaveNotReady:
                return DropReason.DAVE_NOT_READY
            except DaveDecryptError:
                return DropReason.DAVE_FAILED
        speaker = self._speakers.get(header.ssrc)
        now = self._clock()
        if speaker is None:
            speaker = _Speaker(user_id, self._decoder(depth=self._depth), now)
            self._speakers[header.ssrc] = speaker
        speaker.last_packet = self._arrived[user_id] = now
        decoded = speaker.decoder.push(header.sequence, opus)
        speaker.talking = opus != OPUS_SILENCE
        if not speaker.talking:  # proves neither talking nor hearing
            self.counters.silence += 1
        elif decoded:
            self.last_decoded_at = self._heard[user_id] = now
        frames += self._frames(header.ssrc, user_id, decoded)
        return None

    def _flush_idle(self, now: float, idle: float | None = None) -> list[VoiceFrame]:
        """Held packets whose successor is late, then reorder buffers of quiet speakers."""
        idle = self._idle_flush if idle is None else idle
        frames: list[VoiceFrame] = []
        for ssrc, speaker in list(self._speakers.items()):
            held = speaker.held
            if held is not None and now - speaker.held_at >= min(idle, _HOLD_MAX_S):
                speaker.held = None
                self._run(held, frames)
            if speaker.decoder.buffered and now - speaker.last_packet >= idle:
                frames += self._frames(ssrc, speaker.user_id, speaker.decoder.flush())
        return frames

    @staticmethod
    def _frames(ssrc: int, user_id: int, decoded: list[DecodedFrame]) -> list[VoiceFrame]:
        return [VoiceFrame(user_id, ssrc, f.sequence, f.pcm, f.concealed) for f in decoded]

    def _retire(self, ssrc: int) -> None:
        speaker = self._speakers.pop(ssrc, None)
        if speaker is None:
            return
        self._retired.add_decoding(speaker.decoder.stats)
        self._retired.discarded += speaker.decoder.buffered + (speaker.held is not None)

    # -- event loop thread -------------------------------------------------------------------

    def _drain(self) -> None:
        self._scheduled = False
        pending = self._pending
        batch: list[VoiceFrame] = []
        while pending:
            batch.append(pending.popleft())
        if not batch or self._closed:
            return
        self.counters.delivered += len(batch)
        try:
            self._sink(batch)
        except Exception:
            log.exception("voice frame sink failed; %d frames lost", len(batch))
