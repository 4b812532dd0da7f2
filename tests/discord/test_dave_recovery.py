"""DAVE recovery as discord.js does it, through discord.py's real voice state and real davey.

Failures are counted across all senders and any success resets the count, never while a
transition is pending or our session is re-forming; recovery sends opcode 31 (invalid
commit/welcome) and then a new key package; plain frames pass while the session re-forms, davey's
passthrough mode decrypts a lagging sender after a downgrade, and a frame that is still
end-to-end encrypted is never handed to Opus as if it were plain.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import davey
import discord
from discord.gateway import DiscordVoiceWebSocket

from bot.audio.voice.receive_counters import DropReason
from bot.audio.voice.transport_crypto import make_cipher
from bot.bench.doubles.voice_loopback import LocalDaveGroup, LoopbackSpeaker

from .conftest import Rig, reference_decode, tone
from .voice_rig import KEY, MODE, SPEAKER, SPEAKER_SSRC, VOICE_CHANNEL, VoiceRig

STRANGER, STRANGER_SSRC = 444, 9292
NEWCOMER, NEWCOMER_SSRC = 555, 9393
OP_INVALID_COMMIT_WELCOME = 31
OP_KEY_PACKAGE = DiscordVoiceWebSocket.MLS_KEY_PACKAGE


def _stranger() -> davey.DaveSession:
    """A sender whose end-to-end keys we do not have (as good as a stale epoch, at once)."""
    group = LocalDaveGroup(VOICE_CHANNEL)
    session = group.new_session(STRANGER)
    group.join([session, group.new_session(4444)])
    return session


async def _eventually(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    """Wait for state changed by discord.py's socket thread (it exposes no event for it)."""
    async with asyncio.timeout(timeout_s):
        while not condition():  # noqa: ASYNC110
            await asyncio.sleep(0.01)


async def _send(rig: VoiceRig, datagrams: list[bytes], batch: int = 40) -> None:
    """Send in batches the socket reader catches up with: a UDP receive buffer holds only
    ~160 datagrams by default, and a burst beyond that is lost on any machine."""
    start = rig.vc.receiver.snapshot().received
    for offset in range(0, len(datagrams), batch):
        for datagram in datagrams[offset : offset + batch]:
            rig.server.send(datagram)
        done = start + min(offset + batch, len(datagrams))
        await _eventually(lambda done=done: rig.vc.receiver.snapshot().received >= done)  # type: ignore[misc]


def _heard(rig: VoiceRig, user_id: int) -> list[bytes]:
    return [f.pcm for f in rig.heard if f.user_id == user_id]


async def _listening(rig: VoiceRig, *speakers: tuple[int, int]) -> None:
    """Connected, each (user, SSRC) announced as speaking, the receiver listening."""
    await rig.connect()
    for user, ssrc in speakers:
        await rig.speaking(user, ssrc)
    rig.vc.start_listening()


def _stranger_noise() -> tuple[LoopbackSpeaker, bytes]:
    """A sender on a DAVE group we are not in, and one Opus frame it encrypts."""
    stranger = LoopbackSpeaker(STRANGER_SSRC, make_cipher(MODE, KEY), _stranger())
    return stranger, stranger.encode(tone(1)[0])


async def _settled(rig: VoiceRig, sent: int) -> None:
    """Every datagram read, and every decoded frame delivered to the sink."""
    receiver = rig.vc.receiver
    await _eventually(lambda: receiver.snapshot().received == sent)

    def delivered() -> bool:
        counters = receiver.snapshot()
        return receiver.buffered() == 0 and counters.delivered == counters.decoded + (
            counters.concealed
        )

    await _eventually(delivered)


async def test_a_failing_sender_never_silences_a_healthy_one(client: discord.Client) -> None:
    rig = VoiceRig(client)
    try:
        await _listening(rig, (SPEAKER, SPEAKER_SSRC), (STRANGER, STRANGER_SSRC))
        key_packages = rig.fake.sent.count(OP_KEY_PACKAGE)
        healthy = LoopbackSpeaker(SPEAKER_SSRC, make_cipher(MODE, KEY), rig.remote)
        stranger, noise = _stranger_noise()
        opus = [healthy.encode(pcm) for pcm in tone(60)]
        datagrams = []
        for frame in opus:  # two undecryptable frames for every good one
            datagrams += [stranger.packet(noise), stranger.packet(noise), healthy.packet(frame)]
        await _send(rig, datagrams)
        await _settled(rig, 180)
        assert _heard(rig, SPEAKER) == reference_decode(opus, stt=True)
        assert _heard(rig, STRANGER) == []
        dave = rig.vc.receiver.dave
        assert dave is not None and dave.stats.recoveries_requested == 0
        assert rig.fake.sent.count(OP_KEY_PACKAGE) == key_packages  # no reinitialisation
        assert rig.vc.receiver.snapshot().dropped[DropReason.DAVE_FAILED] == 120
    finally:
        rig.close()


async def test_recovery_sends_op31_then_a_key_package_once_and_hearing_resumes(
    client: discord.Client,
) -> None:
    rig = VoiceRig(client)
    try:
        await _listening(rig, (SPEAKER, SPEAKER_SSRC), (STRANGER, STRANGER_SSRC))
        stranger, noise = _stranger_noise()
        rig.fake.changed.clear()
        for _ in range(40):  # only failures: it is our group state that is broken
            rig.server.send(stranger.packet(noise))
        await _eventually(lambda: rig.fake.sent[-1:] == [OP_KEY_PACKAGE])
        assert rig.fake.sent[-2:] == [OP_INVALID_COMMIT_WELCOME, OP_KEY_PACKAGE]
        invalid = next(m for m in rig.fake.json if m["op"] == OP_INVALID_COMMIT_WELCOME)
        assert invalid["d"] == {"transition_id": 7}  # the last transition we executed
        assert rig.state.dave_session is not None and not rig.state.dave_session.ready

        # While our session re-forms, further failures are not counted: no second recovery.
        await _send(rig, [stranger.packet(noise) for _ in range(100)])
        await _settled(rig, 140)
        assert rig.fake.sent.count(OP_INVALID_COMMIT_WELCOME) == 1
        dave = rig.vc.receiver.dave
        assert dave is not None and dave.stats.recoveries_requested == 1

        # The voice server re-adds us with the new key package; the healthy player is heard.
        await rig.welcome_bot(rig.fake.binary[-1][1:], transition=8)
        healthy = LoopbackSpeaker(SPEAKER_SSRC, make_cipher(MODE, KEY), rig.remote)
        opus = [healthy.encode(pcm) for pcm in tone(20)]
        for frame in opus:
            rig.server.send(healthy.packet(frame))
        await _settled(rig, 160)
        assert _heard(rig, SPEAKER) == reference_decode(opus, stt=True)
        assert not dave.recovering
    finally:
        rig.close()


async def test_failures_are_not_counted_while_a_transition_is_pending(
    client: discord.Client,
) -> None:
    rig = VoiceRig(client)
    try:
        await _listening(rig, (STRANGER, STRANGER_SSRC))
        await rig.add_member(NEWCOMER, transition=8)  # commit processed, execute not yet
        stranger, noise = _stranger_noise()
        await _send(rig, [stranger.packet(noise) for _ in range(60)])
        await _settled(rig, 60)
        assert OP_INVALID_COMMIT_WELCOME not in rig.fake.sent
        dave = rig.vc.receiver.dave
        assert dave is not None and dave.stats.recoveries_requested == 0

        await rig.execute(8)
        for _ in range(40):
            rig.server.send(stranger.packet(noise))
        await _eventually(lambda: OP_INVALID_COMMIT_WELCOME in rig.fake.sent)
        invalid = next(m for m in rig.fake.json if m["op"] == OP_INVALID_COMMIT_WELCOME)
        assert invalid["d"] == {"transition_id": 8}
    finally:
        rig.close()


async def test_plain_frames_pass_while_the_session_reforms_encrypted_ones_do_not(
    client: discord.Client,
) -> None:
    """A v0 -> v1 upgrade (op 24, epoch 1): our session is re-created and not ready yet."""
    rig = VoiceRig(client)
    try:
        await _listening(rig, (SPEAKER, SPEAKER_SSRC), (STRANGER, STRANGER_SSRC))
        await rig.ws.received_message({"op": 24, "d": {"epoch": 1, "protocol_version": 1}})
        assert rig.state.dave_session is not None and not rig.state.dave_session.ready
        plain = LoopbackSpeaker(SPEAKER_SSRC, make_cipher(MODE, KEY))  # not yet upgraded
        encrypted = LoopbackSpeaker(STRANGER_SSRC, make_cipher(MODE, KEY), _stranger())
        opus = [plain.encode(pcm) for pcm in tone(25)]
        for frame in opus:
            rig.server.send(plain.packet(frame))
            rig.server.send(encrypted.packet(frame))
        await _settled(rig, 50)
        assert _heard(rig, SPEAKER) == reference_decode(opus, stt=True)
        assert _heard(rig, STRANGER) == []
        assert rig.vc.receiver.snapshot().dropped[DropReason.DAVE_NOT_READY] == 25
    finally:
        rig.close()


async def test_after_a_downgrade_a_lagging_encrypted_sender_is_decrypted_not_noise(
    client: discord.Client,
) -> None:
    """op 21 to protocol 0 turns davey's passthrough mode on (discord.py); after op 22 the
    channel is plain, but a sender that has not switched yet still encrypts."""
    rig = VoiceRig(client)
    try:
        await rig.connect()
        newcomer = await rig.add_member(NEWCOMER, transition=8)
        await rig.execute(8)
        await rig.speaking(SPEAKER, SPEAKER_SSRC)
        await rig.speaking(NEWCOMER, NEWCOMER_SSRC)
        rig.vc.start_listening()
        await rig.ws.received_message({"op": 21, "d": {"transition_id": 9, "protocol_version": 0}})
        await rig.execute(9)
        assert rig.state.dave_protocol_version == 0
        lagging = LoopbackSpeaker(SPEAKER_SSRC, make_cipher(MODE, KEY), rig.remote)
        switched = LoopbackSpeaker(NEWCOMER_SSRC, make_cipher(MODE, KEY), newcomer)
        opus = [lagging.encode(pcm) for pcm in tone(25)]
        for frame in opus:
            rig.server.send(lagging.packet(frame))
            rig.server.send(switched.packet(frame, encrypt_dave=False))
        await _settled(rig, 50)
        assert _heard(rig, SPEAKER) == reference_decode(opus, stt=True)
        assert _heard(rig, NEWCOMER) == reference_decode(opus, stt=True)
        assert rig.vc.receiver.snapshot().decode_errors == 0
    finally:
        rig.close()


async def test_without_dave_an_encrypted_frame_is_dropped_not_decoded_as_noise() -> None:
    """A channel without end-to-end encryption (version 0, no session), one sender still
    encrypting: its frames must not reach Opus (they would decode to noise)."""
    rig = Rig(dave=False)
    rig.speaker.dave_session = _stranger()
    opus = [rig.speaker.encode(pcm) for pcm in tone(10)]
    assert rig.feed([rig.speaker.packet(p) for p in opus]) == []
    counters = rig.receiver.snapshot()
    assert counters.decoded == 0 and counters.decode_errors == 0
    assert counters.dropped[DropReason.DAVE_FAILED] == 10
    # Plain frames from the same sender are heard.
    plain = [rig.speaker.packet(p, encrypt_dave=False) for p in opus]
    assert [f.pcm for f in rig.feed(plain)] == reference_decode(opus)
