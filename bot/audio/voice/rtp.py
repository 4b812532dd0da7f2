"""RTP framing of Discord voice datagrams (RFC 3550 as Discord uses it).

Discord's ``*_rtpsize`` transport modes leave the fixed header, the CSRC list and the 4-byte
header-extension preamble in clear text (they are the AEAD's associated data) and encrypt the
extension body together with the Opus payload. The last 4 bytes of the datagram are the nonce.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = [
    "NONCE_SIZE",
    "OPUS_PAYLOAD_TYPE",
    "RTP_HEADER_SIZE",
    "RtpHeader",
    "RtpParseError",
    "build_header",
    "parse_header",
    "parse_ssrc",
    "parse_user_id",
    "peek_ssrc",
    "strip_padding_and_extension",
]

RTP_HEADER_SIZE = 12
OPUS_PAYLOAD_TYPE = 0x78
NONCE_SIZE = 4
_AEAD_TAG_SIZE = 16
_FIXED = struct.Struct(">BBHII")


class RtpParseError(ValueError):
    """A datagram that is not a usable Discord voice packet; ``reason`` names why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class RtpHeader:
    sequence: int
    timestamp: int
    ssrc: int
    aad_size: int
    """Bytes from the start through the extension preamble: the AEAD associated data."""
    extension_words: int
    """Length of the (encrypted) extension body in 32-bit words; 0 without the X bit."""
    padded: bool
    """P bit: the decrypted payload ends with RTP padding whose last byte is its length."""


def peek_ssrc(data: bytes) -> int | None:
    """The SSRC of what looks like an Opus RTP datagram (``parse_header`` judges it)."""
    if len(data) < RTP_HEADER_SIZE or data[0] >> 6 != 2 or data[1] & 0x7F != OPUS_PAYLOAD_TYPE:
        return None
    return int.from_bytes(data[8:12], "big")


def parse_header(data: bytes, own_ssrc: int | None = None) -> RtpHeader:
    """Validate and parse the clear-text part of a voice datagram.

    Raises:
        RtpParseError: with ``reason`` one of ``short``, ``not_rtp``, ``payload_type``,
            ``own_ssrc``, ``bad_extension``.
    """
    size = len(data)
    if size < RTP_HEADER_SIZE + _AEAD_TAG_SIZE + NONCE_SIZE:
        raise RtpParseError("short")
    first, second, sequence, timestamp, ssrc = _FIXED.unpack_from(data)
    if first >> 6 != 2:
        raise RtpParseError("not_rtp")
    if second & 0x7F != OPUS_PAYLOAD_TYPE:
        raise RtpParseError("payload_type")
    if ssrc == own_ssrc:
        raise RtpParseError("own_ssrc")
    aad_size = RTP_HEADER_SIZE + 4 * (first & 0x0F)
    extension_words = 0
    if first & 0x10:
        if size < aad_size + 4:
            raise RtpParseError("bad_extension")
        extension_words = (data[aad_size + 2] << 8) | data[aad_size + 3]
        aad_size += 4
    if size < aad_size + _AEAD_TAG_SIZE + NONCE_SIZE:
        raise RtpParseError("short")
    return RtpHeader(sequence, timestamp, ssrc, aad_size, extension_words, bool(first & 0x20))


def strip_padding_and_extension(header: RtpHeader, plaintext: bytes) -> bytes:
    """Return the Opus payload of a decrypted packet: padding removed, extension body skipped.

    Raises:
        RtpParseError: ``bad_padding`` or ``bad_extension`` when the lengths do not fit.
    """
    end = len(plaintext)
    if header.padded:
        if end == 0 or plaintext[-1] == 0 or plaintext[-1] > end:
            raise RtpParseError("bad_padding")
        end -= plaintext[-1]
    start = 4 * header.extension_words
    if start > end:
        raise RtpParseError("bad_extension")
    return plaintext[start:end]


def build_header(
    sequence: int,
    timestamp: int,
    ssrc: int,
    *,
    csrcs: tuple[int, ...] = (),
    extension_words: int = 0,
    extension: bool = False,
    padded: bool = False,
    marker: bool = False,
) -> bytes:
    """Build the clear-text header (through the extension preamble) as a sender would.

    Used by tests, the benchmark and the local voice-server stand-in; ``extension`` sets the X
    bit with the one-byte-header profile ``0xBEDE`` and ``extension_words`` as its length.
    """
    if len(csrcs) > 15:
        raise ValueError("at most 15 CSRCs")
    first = 0x80 | len(csrcs) | (0x10 if extension else 0) | (0x20 if padded else 0)
    second = OPUS_PAYLOAD_TYPE | (0x80 if marker else 0)
    out = _FIXED.pack(first, second, sequence & 0xFFFF, timestamp & 0xFFFFFFFF, ssrc)
    out += b"".join(struct.pack(">I", c) for c in csrcs)
    if extension:
        out += struct.pack(">HH", 0xBEDE, extension_words)
    return out


def parse_ssrc(value: object) -> int:
    """An SSRC from a voice gateway payload: an unsigned 32-bit integer.

    Raises:
        ValueError: anything else (the caller ignores the malformed message).
    """
    number: int = int(value)  # type: ignore[call-overload]
    if not 0 <= number <= 0xFFFFFFFF:
        raise ValueError(f"SSRC out of range: {value!r}")
    return number


def parse_user_id(value: object) -> int:
    """A Discord user id (snowflake) from a voice gateway payload.

    Raises:
        ValueError: not a positive 64-bit integer.
    """
    number: int = int(value)  # type: ignore[call-overload]
    if not 0 < number < 1 << 64:
        raise ValueError(f"user id out of range: {value!r}")
    return number
