"""The deaf detector over real receiver counters: players' packets with nothing decoded.

The clock is the detector's argument (the client passes ``time.monotonic()`` every tick), so a
whole spell is replayed without waiting; the counters come from a real receiver fed real
packets (a real DAVE group; the sender on a group we are not in).
"""

from __future__ import annotations

import davey

from bot.audio.voice.deaf import DeafCause, DeafDetector
from bot.bench.doubles.voice_loopback import LocalDaveGroup

from .conftest import CHANNEL, SPEAKER_USER, Rig, tone


def _stranger() -> davey.DaveSession:
    """The speaker's client on a group we are not in: frames we cannot decrypt."""
    group = LocalDaveGroup(CHANNEL)
    stranger = group.new_session(SPEAKER_USER)
    group.join([stranger, group.new_session(4444)])
    return stranger


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_a_spell_is_reported_once_per_period_with_its_cause() -> None:
    clock = Clock()
    rig = Rig(clock=clock)
    rig.speaker.dave_session = _stranger()
    detector = DeafDetector(after_s=2.0)
    opus = rig.speaker.encode(tone(1)[0])
    spells = []
    for tick in range(61):  # 6 s of ticks, 5 packets per 100 ms tick (one speaker)
        clock.now = tick * 0.1
        rig.feed([rig.speaker.packet(opus) for _ in range(5)], flush=False)
        spell = detector.check(clock.now, rig.receiver.snapshot(), rig.receiver.last_decoded_at)
        if spell is not None:
            spells.append((round(tick * 0.1, 1), spell.count, spell.cause))
    assert spells == [(2.0, 1, DeafCause.DAVE), (4.0, 2, DeafCause.DAVE), (6.0, 3, DeafCause.DAVE)]
    assert detector.spells == 1


async def test_silence_frames_and_lulls_are_not_deafness() -> None:
    clock = Clock()
    rig = Rig(clock=clock)
    detector = DeafDetector(after_s=2.0)
    for tick in range(61):  # a player who stopped talking: only silence frames, then nothing
        clock.now = tick * 0.1
        if tick < 30:
            rig.feed([rig.speaker.packet(b"\xf8\xff\xfe") for _ in range(5)], flush=False)
        snapshot = rig.receiver.snapshot()
        assert detector.check(clock.now, snapshot, rig.receiver.last_decoded_at) is None
    assert rig.receiver.snapshot().silence == 150


async def test_hearing_again_ends_the_spell_and_a_new_one_counts_again() -> None:
    clock = Clock()
    rig = Rig(clock=clock)
    stranger = _stranger()
    detector = DeafDetector(after_s=2.0)
    opus = rig.speaker.encode(tone(1)[0])
    reported = []
    for tick in range(100):
        clock.now = tick * 0.1
        rig.speaker.dave_session = rig.remote_session if 30 <= tick < 50 else stranger
        rig.feed([rig.speaker.packet(opus) for _ in range(5)], flush=False)
        spell = detector.check(clock.now, rig.receiver.snapshot(), rig.receiver.last_decoded_at)
        if spell is not None:
            reported.append((round(clock.now, 1), spell.count))
    # deaf 0-3 s (reported at 2 s), heard 3-5 s, deaf again from 5 s: reported at 7 and 9 s
    assert reported == [(2.0, 1), (6.9, 1), (8.9, 2)]
    assert detector.spells == 2
