"""Per-speaker Opus decoding with a small reorder buffer and loss concealment.

UDP reorders and drops packets. Each SSRC gets its own libopus decoder (decoder state is per
stream) and a reorder buffer of a few packets keyed by RTP sequence number: in-order packets
are decoded at once; a gap is waited out for at most ``depth`` packets, then concealed with the
next packet's in-band FEC (for the frame right before it) or libopus packet-loss concealment.
Whatever the packet duration (2.5 to 120 ms), the output is whole 20 ms frames: shorter packets
are joined, longer ones split, and only :meth:`SpeakerDecoder.flush` pads a remainder.
"""

from __future__ import annotations

import ctypes.util
import glob
import importlib.util
import logging
import os
from dataclasses import dataclass

import discord.opus

from campaigns.basics import GlyphoxaError

__all__ = [
    "FRAME_BYTES",
    "DecodedFrame",
    "DecoderStats",
    "SpeakerDecoder",
    "ensure_opus_loaded",
]

log = logging.getLogger(__name__)

#: 20 ms of 48 kHz stereo s16le.
FRAME_BYTES = 3840
_RESYNC = 1000
"""A sequence jump larger than this (20 s) restarts the stream instead of concealing it."""


def _bundled_opus_candidates() -> list[str]:
    spec = importlib.util.find_spec("av")
    if spec is None or not spec.submodule_search_locations:
        return []
    site = os.path.dirname(next(iter(spec.submodule_search_locations)))
    return sorted(glob.glob(os.path.join(site, "av.libs", "libopus*.so*")))


def ensure_opus_loaded() -> str:
    """Load libopus into discord.py once: the system ``libopus0``, else PyAV's bundled copy.

    Returns:
        The library that is loaded (``"already loaded"`` if discord.py had one).

    Raises:
        GlyphoxaError: no libopus anywhere (install Debian ``libopus0``).
    """
    if discord.opus.is_loaded():
        return "already loaded"
    candidates = [name for name in (ctypes.util.find_library("opus"), "libopus.so.0") if name]
    candidates += _bundled_opus_candidates()
    for name in candidates:
        try:
            discord.opus.load_opus(name)
        except OSError:
            continue
        log.debug("loaded libopus from %s", name)
        return name
    raise GlyphoxaError(
        "libopus not found: install it (Debian: apt-get install libopus0) or `pip install av`"
    )


class _PcmDecoder:
    """libopus decoding into one reused buffer.

    discord.py's ``Decoder.decode`` converts every sample through a Python list, which costs
    more than the decoding itself; this calls the same library (loaded by discord.py) with a
    preallocated buffer and copies the result out once. ``owner`` sets the output format (its
    ``SAMPLING_RATE`` and ``CHANNELS``; default 48 kHz stereo).
    """

    def __init__(self, owner: discord.opus.Decoder | None = None) -> None:
        self._owner = owner or discord.opus.Decoder()  # type: ignore[no-untyped-call]  # owns (and on GC frees) the libopus state
        self._state = self._owner._state
        self._lib = discord.opus._lib
        self._channels = self._owner.CHANNELS
        self._max_samples = self._owner.SAMPLING_RATE * 120 // 1000  # the longest Opus packet
        self._plc_samples = self._owner.SAMPLING_RATE * 20 // 1000
        self._buffer = (ctypes.c_int16 * (self._max_samples * self._channels))()
        self._ptr = ctypes.cast(self._buffer, ctypes.POINTER(ctypes.c_int16))

    def decode(self, data: bytes | None, *, fec: bool = False) -> bytes:
        """Decode one packet (``None``: conceal a lost 20 ms frame). Raises OpusError."""
        if data is None:
            samples = self._lib.opus_decode(self._state, None, 0, self._ptr, self._plc_samples, 0)
        elif fec:
            samples = self._lib.opus_decode(
                self._state, data, len(data), self._ptr, self._plc_samples, 1
            )
        else:
            samples = self._lib.opus_decode(
                self._state, data, len(data), self._ptr, self._max_samples, 0
            )
        return ctypes.string_at(self._buffer, samples * 2 * self._channels)


@dataclass(frozen=True, slots=True)
class DecodedFrame:
    sequence: int
    pcm: bytes
    """s16le in the decoder's format: 3840 bytes of 48 kHz stereo per 20 ms (or 640 bytes of
    16 kHz mono from :class:`~bot.audio.voice.stt_decode.SttSpeakerDecoder`)."""
    concealed: bool


@dataclass(slots=True)
class DecoderStats:
    pushed: int = 0
    decoded: int = 0
    concealed: int = 0
    late: int = 0
    duplicate: int = 0
    decode_errors: int = 0
    resyncs: int = 0


class SpeakerDecoder:
    """One SSRC's decoder. Not thread-safe: the receiver calls it from the socket thread only.

    Every pushed packet ends up exactly once in ``stats.decoded``, ``late``, ``duplicate`` or
    ``decode_errors``, or is still held in the buffer (``buffered``). Output: 20 ms frames of
    48 kHz stereo; a subclass may decode to another format (:mod:`bot.audio.voice.stt_decode`).
    """

    frame_bytes = FRAME_BYTES
    """Bytes in one 20 ms output frame."""

    def __init__(self, *, depth: int = 3, max_conceal: int = 5) -> None:
        ensure_opus_loaded()
        self._decoder = self._new_pcm_decoder()
        self._depth = depth
        self._max_conceal = max_conceal
        self._next: int | None = None
        self._buffer: dict[int, bytes] = {}
        self._carry = b""
        """Decoded audio short of a whole 20 ms frame (from packets shorter than 20 ms)."""
        self._carry_concealed = False
        self._last_sequence = 0
        self.stats = DecoderStats()

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    def _new_pcm_decoder(self) -> _PcmDecoder:
        return _PcmDecoder()

    def push(self, sequence: int, opus: bytes) -> list[DecodedFrame]:
        """Accept one packet; return the frames that are now ready, in order."""
        stats = self.stats
        stats.pushed += 1
        out: list[DecodedFrame] = []
        if self._next is None:
            return self._start(sequence, opus, out)
        delta = (sequence - self._next) & 0xFFFF
        signed = delta - 0x10000 if delta >= 0x8000 else delta
        if signed > _RESYNC or signed < -_RESYNC:
            stats.resyncs += 1
            self._drain(out, force=True)
            self._next = sequence
        elif signed < 0:
            stats.late += 1
            return out
        if sequence in self._buffer:
            stats.duplicate += 1
            return out
        self._buffer[sequence] = opus
        self._drain(out, force=False)
        return out

    def flush(self) -> list[DecodedFrame]:
        """Decode everything still held (the speaker went quiet), concealing inner gaps."""
        out: list[DecodedFrame] = []
        if self._next is None and self._buffer:
            self._next = self._earliest()
        self._drain(out, force=True)
        if self._carry:
            pcm = self._carry.ljust(self.frame_bytes, b"\0")
            out.append(DecodedFrame(self._last_sequence, pcm, self._carry_concealed))
            self._carry, self._carry_concealed = b"", False
        return out

    def _start(self, sequence: int, opus: bytes, out: list[DecodedFrame]) -> list[DecodedFrame]:
        """Stream start: the first packet to arrive need not be the first sent, so hold a few."""
        if sequence in self._buffer:
            self.stats.duplicate += 1
            return out
        self._buffer[sequence] = opus
        if len(self._buffer) > self._depth:
            self._next = self._earliest()
            self._drain(out, force=False)
        return out

    def _earliest(self) -> int:
        anchor = next(iter(self._buffer))
        return min(self._buffer, key=lambda s: (s - anchor + 0x8000) & 0xFFFF)

    def _drain(self, out: list[DecodedFrame], *, force: bool) -> None:
        buffer = self._buffer
        while buffer:
            expected = self._next
            assert expected is not None
            payload = buffer.pop(expected, None)
            if payload is not None:
                self._decode(expected, payload, out)
                self._next = (expected + 1) & 0xFFFF
                continue
            if not force and len(buffer) <= self._depth:
                return
            self._conceal_gap(out)

    def _conceal_gap(self, out: list[DecodedFrame]) -> None:
        """Skip to the earliest held packet, concealing up to ``max_conceal`` lost frames."""
        expected = self._next
        assert expected is not None
        gap = min((seq - expected) & 0xFFFF for seq in self._buffer)
        following = (expected + gap) & 0xFFFF
        concealed = min(gap, self._max_conceal)
        for index in range(concealed):
            lost = (following - concealed + index) & 0xFFFF
            # The packet right after a loss may carry it as in-band FEC; older ones need PLC.
            fec_source = self._buffer[following] if index == concealed - 1 else None
            try:
                if fec_source is not None:
                    pcm = self._decoder.decode(fec_source, fec=True)
                else:
                    pcm = self._decoder.decode(None, fec=False)
            except discord.opus.OpusError:
                continue
            self.stats.concealed += 1
            self._emit(lost, pcm, True, out)
        self._next = following

    def _decode(self, sequence: int, payload: bytes, out: list[DecodedFrame]) -> None:
        try:
            if not payload:
                raise discord.opus.OpusError(-4)
            pcm = self._decoder.decode(payload, fec=False)
        except discord.opus.OpusError:
            self.stats.decode_errors += 1
            return
        self.stats.decoded += 1
        self._emit(sequence, pcm, False, out)

    def _emit(self, sequence: int, pcm: bytes, concealed: bool, out: list[DecodedFrame]) -> None:
        """Hand on ``pcm`` as whole 20 ms frames; keep the rest for the next packet."""
        self._last_sequence = sequence
        size = self.frame_bytes
        if not self._carry and len(pcm) == size:  # Discord's usual 20 ms packet
            out.append(DecodedFrame(sequence, pcm, concealed))
            return
        pcm = self._carry + pcm
        concealed = concealed or self._carry_concealed
        whole = len(pcm) - len(pcm) % size
        for start in range(0, whole, size):
            out.append(DecodedFrame(sequence, pcm[start : start + size], concealed))
        self._carry = pcm[whole:]
        self._carry_concealed = concealed and bool(self._carry)
