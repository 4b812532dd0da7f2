"""Notice when the bot stops hearing: players' packets keep arriving, nothing decodes.

A deaf connection is silent, so it goes unnoticed unless something looks: a sender whose DAVE
state we lost, a transport key that no longer matches, SSRCs nobody announced. Every tick the
detector compares the receive counters with those of ``after_s`` ago; packets from players
(speaking: op 5 mapped their SSRC, or RTP from an SSRC nobody announced) with no frame decoded
for ``after_s`` is a deaf spell, reported once per ``after_s`` it lasts, with its likely cause.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from enum import StrEnum

from bot.audio.voice.receive_counters import DropReason, ReceiveCounters

__all__ = ["DeafCause", "DeafDetector", "DeafSpell"]


class DeafCause(StrEnum):
    DAVE = "dave"
    """End-to-end decryption fails or our session is not ready: re-join the MLS group."""
    TRANSPORT = "transport"
    """No key, or the transport key does not match: only a new voice session helps."""
    UNMAPPED = "unmapped"
    """Packets from SSRCs no SPEAKING (op 5) announced."""
    DECODER = "decoder"
    """Packets are accepted but Opus decodes nothing."""


_CAUSES: dict[DeafCause, tuple[DropReason, ...]] = {
    DeafCause.DAVE: (DropReason.DAVE_FAILED, DropReason.DAVE_NOT_READY),
    DeafCause.TRANSPORT: (DropReason.DECRYPT_FAILED, DropReason.NO_KEY),
    DeafCause.UNMAPPED: (DropReason.UNKNOWN_SSRC,),
}


@dataclass(frozen=True, slots=True)
class DeafSpell:
    since: float
    """When the last frame was decoded (or watching began)."""
    cause: DeafCause
    packets: int
    """Players' packets that arrived in the last ``after_s`` without a frame decoded."""
    count: int
    """1 the first time this spell is reported, 2 after another ``after_s``, ..."""

    def describe(self, now: float) -> str:
        return (
            f"deaf for {now - self.since:.1f} s: {self.packets} packets from players but no "
            f"frame decoded (cause: {self.cause.value})"
        )


@dataclass(frozen=True, slots=True)
class _Sample:
    at: float
    players: int
    by_cause: tuple[int, ...]


def _tally(counters: ReceiveCounters) -> tuple[int, tuple[int, ...]]:
    """Players' packets (Opus silence frames prove neither talking nor hearing), by cause."""
    by_cause = tuple(sum(counters.dropped[r] for r in _CAUSES[c]) for c in _CAUSES)
    audio = counters.accepted - counters.silence
    return audio + sum(by_cause), (*by_cause, audio)


class DeafDetector:
    """Feed :meth:`check` the receiver's counters every tick (~100 ms).

    Args:
        after_s: a spell is reported after this long without a decoded frame.
        min_packets: at least this many players' packets in that window (25 = 0.5 s of one
            speaker) make it a spell rather than a lull.
    """

    def __init__(self, *, after_s: float = 2.0, min_packets: int = 25) -> None:
        if after_s <= 0:
            raise ValueError("after_s must be positive")
        self.after_s = after_s
        self.min_packets = min_packets
        self._samples: deque[_Sample] = deque()
        self._started: float | None = None
        self._reported = 0
        self.spells = 0
        """Spells seen (each counted once, however long it lasts)."""

    def check(
        self, now: float, counters: ReceiveCounters, last_decoded_at: float
    ) -> DeafSpell | None:
        players, by_cause = _tally(counters)
        samples = self._samples
        samples.append(_Sample(now, players, by_cause))
        if self._started is None:
            self._started = now
        while len(samples) > 1 and samples[1].at <= now - self.after_s:
            samples.popleft()
        since = max(last_decoded_at, self._started)
        quiet_s = now - since
        if quiet_s < self.after_s or samples[0].at > now - self.after_s:
            if quiet_s < self.after_s:
                self._reported = 0
            return None
        oldest = samples[0]
        packets = players - oldest.players
        if packets < self.min_packets:
            return None
        due = int(quiet_s // self.after_s)
        if due <= self._reported:
            return None
        if self._reported == 0:
            self.spells += 1
        self._reported = due
        deltas = [now_c - then_c for now_c, then_c in zip(by_cause, oldest.by_cause, strict=True)]
        causes = [*_CAUSES, DeafCause.DECODER]
        cause = causes[max(range(len(deltas)), key=deltas.__getitem__)]
        return DeafSpell(since, cause, packets, due)
