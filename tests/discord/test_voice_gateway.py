"""discord.py's own voice connection code, driven until our bot's DAVE session is ready.

See :mod:`tests.discord.voice_rig` for the local stand-ins; everything on the bot side is
production code.
"""

from __future__ import annotations

import asyncio
from typing import Any

import discord
import numpy as np
from discord.voice_state import ConnectionFlowState

from bot.audio.speech import Mixer
from bot.audio.voice.dave import DaveReceiver
from bot.audio.voice.playback import DiscordOut, Playback
from bot.audio.voice.receiver import VoiceFrame, VoiceReceiver
from bot.audio.voice.transport_crypto import make_cipher
from bot.bench.doubles.voice_loopback import LoopbackSpeaker
from bot.settings.config import GlyphoxaConfig
from campaigns.basics import AudioChunk

from .conftest import reference_decode, tone
from .discord_api import BOT_ID
from .voice_rig import BOT_SSRC, KEY, MODE, SPEAKER, SPEAKER_SSRC, VoiceRig


async def test_dave_handshake_then_speech_is_heard(client: discord.Client) -> None:
    rig = VoiceRig(client)
    try:
        await rig.connect()
        # Our hook sees SPEAKING; the socket listener hears the remote speaker over UDP.
        await rig.ws.received_message(
            {"op": 5, "d": {"user_id": str(SPEAKER), "ssrc": SPEAKER_SSRC, "speaking": 1}}
        )
        rig.vc.start_listening()
        speaker = LoopbackSpeaker(SPEAKER_SSRC, make_cipher(MODE, KEY), rig.remote)
        opus = [speaker.encode(pcm) for pcm in tone(25)]
        for frame in opus:
            rig.server.send(speaker.packet(frame))
        await asyncio.wait_for(rig.enough.wait(), timeout=10)
        assert {f.user_id for f in rig.heard} == {SPEAKER}
        expected = reference_decode(opus, stt=True)  # players are decoded for the lanes
        assert [f.pcm for f in rig.heard] == expected[: len(rig.heard)]
        assert {len(f.pcm) for f in rig.heard} == {640}  # 20 ms of 16 kHz mono
        counters = rig.vc.receiver.snapshot()
        assert counters.dropped["dave_failed"] == 0 and counters.decoded >= 20
        assert rig.vc.receiver.dave is not None and rig.vc.receiver.dave.stats.decrypted >= 20

        # op 13: the speaker leaves; their packets are no longer attributed to anyone.
        await rig.ws.received_message({"op": 13, "d": {"user_id": str(SPEAKER)}})
        assert rig.vc.receiver.user_for(SPEAKER_SSRC) is None
    finally:
        rig.close()


async def test_playback_is_heard_by_the_remote_member_and_survives_a_reconnect(
    client: discord.Client,
) -> None:
    """The mixer's frames go out through discord.py (Opus, DAVE, transport) and come back
    through our receive path on the remote member's side, with the speaking flag set while
    they do; a reconnect holds the audio and flags speaking again; then nothing but
    keepalives."""
    rig = VoiceRig(client)
    try:
        await rig.connect()
        loop = asyncio.get_running_loop()
        remote_heard: list[VoiceFrame] = []
        keepalives: list[bytes] = []
        got = asyncio.Event()
        target = [10]

        def remote_sink(frames: Any) -> None:
            remote_heard.extend(frames)
            if len(remote_heard) >= target[0]:
                got.set()

        # The remote member's ears: our receiver with the remote's DAVE session.
        remote_ears = VoiceReceiver(loop, remote_sink, dave=DaveReceiver(lambda: (rig.remote, 1)))
        remote_ears.set_transport(MODE, KEY)
        remote_ears.map_ssrc(BOT_SSRC, BOT_ID)

        def on_datagram(data: bytes) -> None:
            if len(data) == 8:
                keepalives.append(data)
            else:
                remote_ears.on_datagram(data)

        rig.server.on_datagram = on_datagram
        flags_before = len([m for m in rig.fake.json if m["op"] == 5])  # discord.py's own
        mixer = Mixer(GlyphoxaConfig().speech)
        playback = Playback(mixer, DiscordOut(rig.vc))
        playback.start()
        await asyncio.sleep(0.2)
        assert remote_ears.counters.received == 0  # an idle mixer: nothing sent
        handle = mixer.speak("Bartok")
        mono = np.frombuffer(b"".join(tone(150, freq=330.0)), "<i2")[::2]  # left channel
        handle.feed(AudioChunk(mono.tobytes(), 48_000), text="Hello.")
        await asyncio.wait_for(got.wait(), timeout=10)
        assert {f.user_id for f in remote_heard} == {BOT_ID}
        assert remote_ears.snapshot().dropped["dave_failed"] == 0
        assert any(any(f.pcm) for f in remote_heard)  # real audio, not just silence
        speaking = [m["d"]["speaking"] for m in rig.fake.json if m["op"] == 5][flags_before:]
        assert speaking == [1]

        # A voice reconnect: the audio waits, then goes on with the speaking flag set again.
        rig.state.state = ConnectionFlowState.disconnected
        await asyncio.sleep(0.2)
        received = remote_ears.counters.received
        await asyncio.sleep(0.2)
        assert remote_ears.counters.received <= received + 1
        got.clear()
        target[0] = len(remote_heard) + 10
        rig.state.state = ConnectionFlowState.connected
        await asyncio.wait_for(got.wait(), timeout=10)
        handle.finish()
        await asyncio.wait_for(handle.wait(), timeout=10)
        async with asyncio.timeout(5):
            while playback.talking:  # noqa: ASYNC110 - the playback thread has no loop event
                await asyncio.sleep(0.02)
        speaking = [m["d"]["speaking"] for m in rig.fake.json if m["op"] == 5][flags_before:]
        assert speaking == [1, 1, 0]
        assert remote_ears.counters.silence == 5  # the utterance ended as a client's does
        await playback.stop()
        assert keepalives  # sent since IP discovery, playing or not
        assert keepalives[0] == bytes(8) and keepalives[-1][:4] == (len(keepalives) - 1).to_bytes(
            4, "little"
        )
    finally:
        rig.close()
