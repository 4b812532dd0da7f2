"""Small receive-path defects, each through the real receiver (and discord.py's socket thread).

Malformed SESSION_DESCRIPTION (op 4) payloads must neither escape nor leave a stale or zero key
installed; READY (op 2) starts a new voice session; a Rust panic inside davey (a PyO3
``PanicException``, which is a BaseException) must not kill discord.py's socket reader; Opus
packets shorter than 20 ms still come out as 3,840-byte frames.
"""

from __future__ import annotations

import asyncio
import logging

import davey
import discord
import discord.opus
import pytest

from bot.audio.voice.receive_counters import DropReason
from bot.audio.voice.transport_crypto import make_cipher
from bot.bench.doubles.voice_loopback import LoopbackSpeaker

from .conftest import KEY, SPEAKER_SSRC, SPEAKER_USER, Rig, reference_decode, tone
from .voice_rig import KEY as RIG_KEY
from .voice_rig import MODE, SPEAKER, VoiceRig
from .voice_rig import SPEAKER_SSRC as RIG_SSRC

XCHACHA = "aead_xchacha20_poly1305_rtpsize"


def _op4(mode: str, secret_key: object) -> dict[str, object]:
    return {"op": 4, "d": {"mode": mode, "secret_key": secret_key, "dave_protocol_version": 1}}


async def test_op4_with_a_huge_integer_key_is_ignored_loudly(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="bot.audio.voice.receiver"):
        rig.receiver.handle_gateway(_op4(XCHACHA, 2**70))  # OverflowError inside bytes()
    assert "malformed voice gateway op 4" in caplog.text
    packet = rig.speaker.packet(rig.speaker.encode(tone(1)[0]))
    assert rig.feed([packet]) == []
    assert rig.receiver.counters.dropped[DropReason.NO_KEY] == 1


async def test_op4_with_an_integer_key_does_not_install_a_zero_key(rig: Rig) -> None:
    """``bytes(32)`` is 32 zero bytes: a payload with an integer must not become that key."""
    rig.receiver.handle_gateway(_op4(XCHACHA, 32))
    zero_key_sender = LoopbackSpeaker(SPEAKER_SSRC, make_cipher(XCHACHA, bytes(32)))
    zero_key_sender.sequence = 100
    packet = zero_key_sender.packet(zero_key_sender.encode(tone(1)[0]), encrypt_dave=False)
    assert rig.feed([packet]) == []
    assert rig.receiver.counters.dropped[DropReason.NO_KEY] == 1


async def test_op4_with_an_unsupported_mode_removes_the_old_key(rig: Rig) -> None:
    new_key = bytes(range(200, 232))
    rig.receiver.handle_gateway(_op4("xsalsa20_poly1305_lite", list(new_key)))
    # Packets under the previous session's key are no longer accepted.
    packet = rig.speaker.packet(rig.speaker.encode(tone(1)[0]))
    assert rig.feed([packet]) == []
    assert rig.receiver.counters.dropped[DropReason.NO_KEY] == 1
    # A supported mode afterwards works again.
    rig.receiver.handle_gateway(_op4(XCHACHA, list(KEY)))
    opus = [rig.speaker.encode(pcm) for pcm in tone(4)]
    assert len(rig.feed([rig.speaker.packet(p) for p in opus])) == 4


async def test_ready_starts_a_new_voice_session(rig: Rig) -> None:
    opus = [rig.speaker.encode(pcm) for pcm in tone(8)]
    packets = [rig.speaker.packet(p) for p in opus]
    rig.feed(packets[:2] + packets[3:6], flush=False)  # a gap keeps packets in the buffer
    assert rig.receiver.buffered() > 0
    rig.receiver.handle_gateway({"op": 2, "d": {"ssrc": 77, "ip": "1.2.3.4", "port": 1}})
    assert rig.receiver.user_for(SPEAKER_SSRC) is None
    assert rig.receiver.buffered() == 0
    assert rig.receiver.snapshot().discarded > 0
    # The old SSRC is unknown until op 5 announces it again, and op 4 brings the new key.
    assert rig.feed(packets[6:7]) == []
    assert rig.receiver.counters.dropped[DropReason.UNKNOWN_SSRC] == 1
    rig.receiver.handle_gateway(
        {"op": 5, "d": {"user_id": str(SPEAKER_USER), "ssrc": SPEAKER_SSRC, "speaking": 1}}
    )
    rig.receiver.handle_gateway(_op4(XCHACHA, list(KEY)))
    fresh = LoopbackSpeaker(SPEAKER_SSRC, make_cipher(XCHACHA, KEY), rig.remote_session)
    more = [fresh.encode(pcm) for pcm in tone(5)]
    out = rig.feed([fresh.packet(p) for p in more])
    assert [f.pcm for f in out] == reference_decode(more)  # a fresh decoder, from sequence 0


async def test_opus_frames_shorter_than_20_ms_come_out_as_whole_frames() -> None:
    rig = Rig(dave=False)
    pcm = b"".join(tone(6))
    for n, samples in enumerate((480, 240, 120)):  # 10 ms, 5 ms and 2.5 ms packets
        encoder = discord.opus.Encoder(application="voip")
        step = samples * 4
        packets = [encoder.encode(pcm[i : i + step], samples) for i in range(0, len(pcm), step)]
        sender = LoopbackSpeaker(SPEAKER_SSRC + 1 + n, make_cipher(XCHACHA, KEY))
        rig.receiver.map_ssrc(sender.ssrc, 700 + n)  # a fresh stream and decoder each
        out = rig.feed([sender.packet(p, encrypt_dave=False) for p in packets])
        assert all(len(f.pcm) == 3840 for f in out), {len(f.pcm) for f in out}
        assert b"".join(f.pcm for f in out) == b"".join(reference_decode(packets))


class _PanickingSession:
    """discord.py's davey session, except that decrypting hits a real Rust panic in davey."""

    def __init__(self, real: davey.DaveSession) -> None:
        self._real = real

    def __getattr__(self, name: str) -> object:
        return getattr(self._real, name)

    def decrypt(self, user_id: int, media_type: davey.MediaType, frame: bytes) -> bytes:
        davey.generate_displayable_code(b"\0" * 8, 0, 0)  # step_by(0): PanicException
        raise AssertionError("davey did not panic")


async def test_a_davey_panic_does_not_kill_the_socket_thread(client: discord.Client) -> None:
    rig = VoiceRig(client)
    try:
        await rig.connect()
        await rig.speaking(SPEAKER, RIG_SSRC)
        rig.vc.start_listening()
        real = rig.state.dave_session
        assert real is not None
        speaker = LoopbackSpeaker(RIG_SSRC, make_cipher(MODE, RIG_KEY), rig.remote)
        opus = [speaker.encode(pcm) for pcm in tone(30)]
        rig.state.dave_session = _PanickingSession(real)  # type: ignore[assignment]
        for frame in opus[:5]:
            rig.server.send(speaker.packet(frame))
        receiver = rig.vc.receiver
        async with asyncio.timeout(10):
            while receiver.snapshot().received < 5:  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        assert receiver.dave is not None and receiver.dave.stats.panics == 5
        rig.state.dave_session = real
        rig.want = 20
        for frame in opus[5:]:
            rig.server.send(speaker.packet(frame))
        await asyncio.wait_for(rig.enough.wait(), timeout=10)
        assert rig.state._socket_reader.is_alive()
    finally:
        rig.close()
