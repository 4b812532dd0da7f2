"""The whole receive path with a real DAVE group: a remote davey session encrypts, we decode.

The remote speaker does what a Discord client does (Opus encode, DAVE encrypt, RTP, XChaCha20
transport); the bot side is the production VoiceReceiver + DaveReceiver + SpeakerDecoder.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

from bot.audio.voice.receive_counters import DropReason
from bot.audio.voice.receiver import VoiceFrame

from .conftest import SPEAKER_SSRC, SPEAKER_USER, Rig, reference_decode, tone


def _opus(rig: Rig, frames: int) -> list[bytes]:
    return [rig.speaker.encode(pcm) for pcm in tone(frames)]


async def test_dave_encrypted_speech_decodes_to_the_reference_pcm(rig: Rig) -> None:
    opus = _opus(rig, 25)
    out = rig.feed([rig.speaker.packet(p) for p in opus])
    assert [f.pcm for f in out] == reference_decode(opus)
    assert {(f.user_id, f.ssrc) for f in out} == {(SPEAKER_USER, SPEAKER_SSRC)}
    assert rig.dave.stats.decrypted == 25
    counters = rig.receiver.snapshot()
    assert (counters.received, counters.accepted, counters.decoded) == (25, 25, 25)
    # The payload on the wire really was end-to-end encrypted, not plain Opus.
    assert rig.dave.stats.plain == 0


async def test_padding_extensions_and_csrcs(rig: Rig) -> None:
    opus = _opus(rig, 6)
    packets = [
        rig.speaker.packet(opus[0], padding=1),
        rig.speaker.packet(opus[1], padding=7),
        rig.speaker.packet(opus[2], extension=b"\x10\xff\x90\x00"),
        rig.speaker.packet(opus[3], extension=bytes(8)),
        rig.speaker.packet(opus[4], extension=bytes(8), padding=3, csrcs=(1, 2)),
        rig.speaker.packet(opus[5], extension=b""),  # X bit with a zero-length extension
    ]
    out = rig.feed(packets)
    assert [f.pcm for f in out] == reference_decode(opus)


async def test_bad_padding_is_dropped(rig: Rig) -> None:
    opus = _opus(rig, 1)[0]
    packet = bytearray(rig.speaker.packet(opus, padding=4))
    # Re-encrypt the same body with an impossible padding count (larger than the payload).
    from bot.audio.voice.rtp import build_header
    from bot.audio.voice.transport_crypto import XChaCha20Cipher

    from .conftest import KEY

    header = build_header(100, 0, SPEAKER_SSRC, padded=True)
    body = rig.remote_session.encrypt_opus(opus) + b"\xff"
    nonce = b"\0\0\0\x09"
    bad = header + XChaCha20Cipher(KEY).encrypt(header, body, nonce) + nonce
    assert rig.feed([bytes(packet), bad]) != []
    assert rig.receiver.counters.dropped[DropReason.BAD_PADDING] == 1


async def test_silence_frames_pass_through_dave_untouched(rig: Rig) -> None:
    silence = b"\xf8\xff\xfe"
    out = rig.feed([rig.speaker.packet(silence) for _ in range(5)])
    assert len(out) == 5 and rig.dave.stats.silence == 5
    assert rig.dave.stats.decrypted == 0


async def test_unknown_ssrc_is_dropped_until_speaking_maps_it(rig: Rig) -> None:
    rig.receiver.handle_gateway({"op": 13, "d": {"user_id": str(SPEAKER_USER)}})
    opus = _opus(rig, 4)
    assert rig.feed([rig.speaker.packet(p) for p in opus[:2]]) == []
    assert rig.receiver.counters.dropped[DropReason.UNKNOWN_SSRC] == 2
    rig.receiver.handle_gateway(
        {"op": 5, "d": {"user_id": str(SPEAKER_USER), "ssrc": SPEAKER_SSRC, "speaking": 1}}
    )
    assert len(rig.feed([rig.speaker.packet(p) for p in opus[2:]])) == 2


async def test_reordered_packets_come_out_in_order_and_identical(rig: Rig) -> None:
    opus = _opus(rig, 12)
    packets = [rig.speaker.packet(p) for p in opus]
    shuffled = packets[:]
    # Swap within a jitter of up to 2 packets. The very first packet stays first: davey (like
    # libdave) rejects frames encrypted before the first one it saw from a sender.
    for i in range(1, 10, 3):
        shuffled[i], shuffled[i + 2] = shuffled[i + 2], shuffled[i]
    out = rig.feed(shuffled)
    assert [f.sequence for f in out] == list(range(12))
    assert [f.pcm for f in out] == reference_decode(opus)
    assert not any(f.concealed for f in out)


async def test_lost_packets_are_concealed_once_the_gap_is_stale(rig: Rig) -> None:
    opus = _opus(rig, 12)
    packets = [rig.speaker.packet(p) for p in opus]
    kept = packets[:4] + packets[5:7] + packets[8:]  # lose seq 4 and 7
    out = rig.feed(kept)
    assert [f.sequence for f in out] == list(range(12))
    assert [f.sequence for f in out if f.concealed] == [4, 7]
    assert all(len(f.pcm) == 3840 for f in out)
    assert rig.receiver.snapshot().concealed == 2


async def test_late_and_duplicate_packets_are_counted_not_played(rig: Rig) -> None:
    opus = _opus(rig, 8)
    packets = [rig.speaker.packet(p) for p in opus]
    out = rig.feed([*packets[:6], packets[1]])  # a replay of an already-played packet
    assert len(out) == 6
    counters = rig.receiver.snapshot()
    assert counters.late + counters.dropped[DropReason.DAVE_FAILED] == 1


async def test_dave_epoch_change_mid_stream(rig: Rig) -> None:
    opus = _opus(rig, 20)
    out = rig.feed([rig.speaker.packet(p) for p in opus[:10]])
    epoch = rig.bot_session.epoch
    newcomer = rig.group.new_session(333)
    rig.group.join([newcomer])  # a third member: commit, every member moves to a new epoch
    assert rig.bot_session.epoch == epoch + 1 == newcomer.epoch
    out += rig.feed([rig.speaker.packet(p) for p in opus[10:]])
    assert [f.pcm for f in out] == reference_decode(opus)
    assert sum(rig.receiver.counters.dropped.values()) == 0


async def test_not_ready_then_ready() -> None:
    rig = Rig()
    outsider = rig.group.new_session(900)  # our bot before it is welcomed into the group
    rig.bot_session = outsider
    opus = _opus(rig, 4)
    assert rig.feed([rig.speaker.packet(p) for p in opus[:2]]) == []
    assert rig.receiver.counters.dropped[DropReason.DAVE_NOT_READY] == 2
    rig.group.join([outsider])
    assert len(rig.feed([rig.speaker.packet(p) for p in opus[2:]])) == 2


async def test_persistent_dave_failures_request_recovery_once_then_recover() -> None:
    calls: list[int] = []
    rig = Rig(recovery=lambda: calls.append(1))
    opus = _opus(rig, 20)
    bogus = []
    for p in opus[:12]:
        frame = bytearray(rig.remote_session.encrypt_opus(p))
        frame[1] ^= 0xFF  # corrupt the E2EE ciphertext; transport stays valid
        bogus.append(rig.speaker.packet(bytes(frame), encrypt_dave=False))
    assert rig.feed(bogus) == []
    # threshold 5: the sixth failure asks for recovery; later ones wait for the session to
    # re-form and are not counted toward another one
    assert (rig.dave.stats.failures, rig.dave.stats.uncounted_failures) == (6, 6)
    assert calls == [1] and rig.dave.recovering
    assert len(rig.feed([rig.speaker.packet(p) for p in opus[12:]])) > 0
    assert rig.dave.stats.consecutive_failures == 0


async def test_channel_without_dave_passes_plain_opus() -> None:
    rig = Rig(dave=False)
    opus = _opus(rig, 5)
    out = rig.feed([rig.speaker.packet(p) for p in opus])
    assert [f.pcm for f in out] == reference_decode(opus)
    assert rig.dave.stats.plain == 5


async def test_a_hearer_takes_frames_on_the_socket_thread(rig: Rig) -> None:
    """The speech lanes hear frames where they were decoded; what they do not take (a player
    whose lane is not open yet) still reaches the loop's sink, in order, and none twice."""
    heard: list[tuple[int, str]] = []
    delivered: list[VoiceFrame] = []
    done = asyncio.Event()

    def hear(frames: list[VoiceFrame]) -> list[VoiceFrame]:
        heard.extend((f.sequence, threading.current_thread().name) for f in frames)
        return [f for f in frames if f.sequence < 10]  # "no lane" for the first ten

    def sink(frames: Sequence[VoiceFrame]) -> None:
        delivered.extend(frames)
        if len(delivered) == 10:
            done.set()

    rig.receiver._sink = sink
    rig.receiver.hear = hear
    packets = [rig.speaker.packet(p) for p in _opus(rig, 30)]
    thread = threading.Thread(
        target=lambda: [rig.receiver.on_datagram(p) for p in packets], name="voice-socket"
    )
    thread.start()
    await asyncio.wait_for(done.wait(), timeout=10)
    thread.join(timeout=5)
    assert [seq for seq, _ in heard] == list(range(30))
    assert {name for _, name in heard} == {"voice-socket"}
    assert [f.sequence for f in delivered] == list(range(10))
    counters = rig.receiver.snapshot()
    assert (counters.heard, counters.delivered) == (20, 10)


async def test_tick_releases_a_held_tail_without_further_packets(rig: Rig) -> None:
    opus = _opus(rig, 8)
    packets = [rig.speaker.packet(p) for p in opus]
    out = rig.feed(packets[:5] + packets[6:], flush=False)  # seq 5 lost near the end
    assert [f.sequence for f in out] == [0, 1, 2, 3, 4]
    assert rig.receiver.buffered() == 2
    rig.receiver._idle_flush = 0.0  # the speaker counts as quiet at once
    rig.receiver.tick()  # (on the loop thread here; the client calls it every 100 ms)
    await asyncio.sleep(0)  # let the coalesced hand-off run
    assert [f.sequence for f in rig.frames] == [5, 6, 7]
    assert rig.frames[0].concealed


async def test_decoded_straight_to_16_khz_mono_with_the_same_reordering_and_concealment() -> None:
    from bot.audio.voice.stt_decode import SttSpeakerDecoder

    rig = Rig(decoder=SttSpeakerDecoder)
    opus = _opus(rig, 12)
    packets = [rig.speaker.packet(p) for p in opus]
    packets[1], packets[2] = packets[2], packets[1]  # reordered
    out = rig.feed(packets)
    assert [f.sequence for f in out] == list(range(12))
    assert [f.pcm for f in out] == reference_decode(opus, stt=True)
    lost = Rig(decoder=SttSpeakerDecoder)
    opus = _opus(lost, 12)
    packets = [lost.speaker.packet(p) for p in opus]
    out = lost.feed(packets[:4] + packets[5:])  # seq 4 lost: concealed at 16 kHz mono too
    assert [f.sequence for f in out if f.concealed] == [4]
    assert {len(f.pcm) for f in out} == {640}
    assert lost.receiver.snapshot().concealed == 1
