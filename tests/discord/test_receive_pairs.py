"""A talking player's packets run in pairs (``hold_at_pace``): same frames, same order, only
audio after audio waits, and a packet whose successor never comes is released by the tick.

Real packets (libopus, DAVE, XChaCha20) through a real receiver; the clock is the receiver's
argument, so Discord's 20 ms pace is replayed without waiting.
"""

from __future__ import annotations

import asyncio

from bot.audio.voice.dave import OPUS_SILENCE
from bot.audio.voice.frames import VoiceFrame, hear_by_speaker

from .conftest import SPEAKER_USER, Rig, reference_decode, tone


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _paced(rig: Rig, clock: Clock, datagrams: list[bytes], step: float = 0.02) -> list[int]:
    """Feed at ``step`` apart; how many datagrams ran (not held) on each one's arrival."""
    ran = []
    for datagram in datagrams:
        clock.now += step
        before = rig.receiver.snapshot().accepted
        rig.receiver.process(datagram)
        ran.append(rig.receiver.snapshot().accepted - before)
    return ran


async def test_at_pace_a_talking_players_packets_run_in_pairs_with_the_same_frames() -> None:
    clock = Clock()
    rig = Rig(clock=clock, hold_at_pace=True)
    pcm = tone(9)
    opus = [rig.speaker.encode(frame) for frame in pcm]
    said = [*opus, *[OPUS_SILENCE] * 5]
    datagrams = [rig.speaker.packet(o) for o in said]
    # The first packet runs at once; then each waits for the next (silence frames too, until
    # a silence frame has run: a player who stopped is not held).
    assert _paced(rig, clock, datagrams) == [1, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 1, 1, 1]
    rig.receiver.flush()
    assert rig.receiver.buffered() == 0
    counters = rig.receiver.snapshot()
    assert (counters.received, counters.accepted, counters.decoded) == (14, 14, 14)

    assert rig.receiver.flush() == []  # nothing was left waiting
    rig2 = Rig(clock=clock, hold_at_pace=True)
    out: list[VoiceFrame] = []
    for datagram in [rig2.speaker.packet(o) for o in said]:
        clock.now += 0.02
        out += rig2.receiver.process(datagram)
    assert [f.pcm for f in out] == reference_decode(said)
    assert [f.sequence for f in out] == list(range(14))


async def test_a_burst_and_a_players_first_packet_are_never_held() -> None:
    clock = Clock()
    rig = Rig(clock=clock, hold_at_pace=True)
    opus = [rig.speaker.encode(frame) for frame in tone(6)]
    assert _paced(rig, clock, [rig.speaker.packet(o) for o in opus], step=0.001) == [1] * 6
    clock.now += 1.0  # a lull: the next packet starts a new stretch
    assert _paced(rig, clock, [rig.speaker.packet(opus[0])]) == [1]
    rig_off = Rig(clock=clock)
    assert _paced(rig_off, clock, [rig_off.speaker.packet(o) for o in opus]) == [1] * 6


async def test_a_held_packet_whose_successor_never_comes_is_released_by_the_tick() -> None:
    clock = Clock()
    rig = Rig(clock=clock, hold_at_pace=True)
    opus = [rig.speaker.encode(frame) for frame in tone(2)]
    assert _paced(rig, clock, [rig.speaker.packet(o) for o in opus]) == [1, 0]
    clock.now += 0.02  # the next packet is due, not yet late
    rig.receiver.tick()
    assert rig.receiver.snapshot().accepted == 1
    clock.now += 0.03
    rig.receiver.tick()
    assert rig.receiver.snapshot().accepted == 2
    clock.now += 0.2  # the reorder buffer, which holds a stream's first packets, goes too
    rig.receiver.tick()
    await _settle()
    assert [f.sequence for f in rig.frames] == [0, 1]
    assert rig.receiver.buffered() == 0


async def test_flush_releases_a_held_packet_and_a_speaker_who_leaves_discards_it() -> None:
    clock = Clock()
    rig = Rig(clock=clock, hold_at_pace=True)
    opus = [rig.speaker.encode(frame) for frame in tone(5)]
    assert _paced(rig, clock, [rig.speaker.packet(o) for o in opus[:2]]) == [1, 0]
    assert [f.sequence for f in rig.receiver.flush()] == [0, 1]
    assert _paced(rig, clock, [rig.speaker.packet(o) for o in opus[2:]]) == [0, 2, 0]
    assert rig.receiver.buffered() == 1
    rig.receiver.forget_user(SPEAKER_USER)
    counters = rig.receiver.snapshot()
    assert (counters.received, counters.accepted, counters.discarded) == (5, 4, 1)


async def test_hear_by_speaker_hands_each_players_run_of_frames_over_in_one_call() -> None:
    frames = [
        VoiceFrame(1, 10, 0, b"a", False),
        VoiceFrame(1, 10, 1, b"b", False),
        VoiceFrame(2, 20, 0, b"c", False),
        VoiceFrame(1, 10, 2, b"d", False),
    ]
    calls: list[tuple[int, list[bytes]]] = []

    def hear(user_id: int, pcms: list[bytes]) -> bool:
        calls.append((user_id, pcms))
        return user_id == 1  # player 2 has no open lane yet

    assert hear_by_speaker(frames, hear) == [frames[2]]
    assert calls == [(1, [b"a", b"b"]), (2, [b"c"]), (1, [b"d"])]


async def _settle() -> None:
    for _ in range(3):
        await asyncio.sleep(0)
