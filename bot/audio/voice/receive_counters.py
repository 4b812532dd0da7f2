"""What a voice receiver counts: every datagram once, accepted or dropped with a reason."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Protocol

__all__ = ["DropReason", "ReceiveCounters"]


class DropReason(StrEnum):
    SHORT = "short"
    NOT_RTP = "not_rtp"
    PAYLOAD_TYPE = "payload_type"
    OWN_SSRC = "own_ssrc"
    BAD_EXTENSION = "bad_extension"
    BAD_PADDING = "bad_padding"
    UNKNOWN_SSRC = "unknown_ssrc"
    NO_KEY = "no_key"
    DECRYPT_FAILED = "decrypt_failed"
    DAVE_NOT_READY = "dave_not_ready"
    DAVE_FAILED = "dave_failed"
    INTERNAL_ERROR = "internal_error"


class DecodingCounts(Protocol):
    """What a speaker's decoder counts (``DecoderStats``)."""

    decoded: int
    concealed: int
    late: int
    duplicate: int
    decode_errors: int


@dataclass(slots=True)
class ReceiveCounters:
    received: int = 0
    accepted: int = 0
    """Datagrams handed to a speaker's decoder."""
    silence: int = 0
    """Of those, Opus silence frames (a client that stopped talking sends a few)."""
    dropped: dict[DropReason, int] = field(default_factory=lambda: dict.fromkeys(DropReason, 0))
    decoded: int = 0
    concealed: int = 0
    late: int = 0
    duplicate: int = 0
    decode_errors: int = 0
    discarded: int = 0
    """Packets still held (in a reorder buffer, or waiting for the next) when their speaker left."""
    delivered: int = 0
    """Frames handed to the sink on the event loop."""
    heard: int = 0
    """Frames a ``FrameHearer`` took on the socket thread."""

    def copy(self) -> ReceiveCounters:
        return replace(self, dropped=dict(self.dropped))

    def add_decoding(self, counts: DecodingCounts) -> None:
        """Add a decoder's counts (the receiver's own are those of speakers who left)."""
        self.decoded += counts.decoded
        self.concealed += counts.concealed
        self.late += counts.late
        self.duplicate += counts.duplicate
        self.decode_errors += counts.decode_errors

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            k: getattr(self, k)
            for k in ("received", "accepted", "silence", "decoded", "concealed", "late")
        }
        out["duplicate"] = self.duplicate
        out["decode_errors"] = self.decode_errors
        out["discarded"] = self.discarded
        out["delivered"] = self.delivered
        out["heard"] = self.heard
        out["dropped"] = {str(k): v for k, v in self.dropped.items() if v}
        return out
