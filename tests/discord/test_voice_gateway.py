"""discord.py's own voice connection code, driven until our bot's DAVE session is ready.

Discord's side is played locally: a fake websocket object under discord.py's real
``DiscordVoiceWebSocket`` (JSON and binary opcodes), a real UDP "voice server" socket that
answers IP discovery and sends RTP, and a :class:`LocalDaveGroup` acting as the MLS external
sender with one remote member. Everything on the bot side is production code: discord.py's
``VoiceConnectionState`` (handshake, DAVE session), our hook, socket listener and receiver.
"""

from __future__ import annotations

import asyncio
import json
import struct
from collections.abc import AsyncIterator
from typing import Any

import davey
import discord
import discord.http
import pytest
from discord.gateway import DiscordVoiceWebSocket
from discord.voice_state import ConnectionFlowState

from bot.voice.client import ListeningVoiceClient
from bot.voice.dave import DaveReceiver
from bot.voice.loopback import LocalDaveGroup, LoopbackSpeaker
from bot.voice.playback import MixerSource, PlaybackKeeper
from bot.voice.receiver import VoiceFrame, VoiceReceiver
from bot.voice.transport_crypto import make_cipher

from .conftest import reference_decode, tone
from .discord_api import BOT_ID, FakeDiscordApi

GUILD, VOICE_CHANNEL = 8000, 8001
SPEAKER, SPEAKER_SSRC, BOT_SSRC = 333, 9191, 7777
KEY = bytes(range(100, 132))
MODE = "aead_xchacha20_poly1305_rtpsize"


class FakeVoiceSocket:
    """Stands in for aiohttp's websocket: records what discord.py sends."""

    def __init__(self) -> None:
        self.json: list[dict[str, Any]] = []
        self.binary: list[bytes] = []
        self.changed = asyncio.Event()

    async def send_str(self, data: str) -> None:
        self.json.append(json.loads(data))
        self.changed.set()

    async def send_bytes(self, data: bytes) -> None:
        self.binary.append(bytes(data))
        self.changed.set()

    async def close(self, *, code: int = 1000, message: bytes = b"") -> bool:
        return True


class UdpVoiceServer(asyncio.DatagramProtocol):
    """Discord's UDP endpoint: answers IP discovery, then sends what we tell it to."""

    def __init__(self) -> None:
        self.transport: asyncio.DatagramTransport | None = None
        self.client: tuple[str, int] | None = None
        self.on_datagram: Any = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        if len(data) != 74 or data[1] != 1:
            if self.on_datagram is not None:  # RTP from the bot
                self.on_datagram(data)
            return
        if True:  # IP discovery request
            self.client = addr
            reply = bytearray(74)
            struct.pack_into(">HHI", reply, 0, 2, 70, struct.unpack_from(">I", data, 4)[0])
            reply[8 : 8 + len(addr[0])] = addr[0].encode()
            struct.pack_into(">H", reply, 72, addr[1])
            assert self.transport is not None
            self.transport.sendto(bytes(reply), addr)

    def send(self, datagram: bytes) -> None:
        assert self.transport is not None and self.client is not None
        self.transport.sendto(datagram, self.client)


@pytest.fixture
async def client(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[discord.Client]:
    api = FakeDiscordApi()
    await api.start()
    monkeypatch.setattr(discord.http.Route, "BASE", api.base)
    bot = discord.Client(intents=discord.Intents.default())
    await bot.login("test-token")
    bot._connection._add_guild_from_data(
        {
            "id": str(GUILD),
            "name": "Table",
            "owner_id": "1",
            "roles": [],
            "emojis": [],
            "features": [],
            "members": [],
            "voice_states": [],
            "channels": [
                {
                    "id": str(VOICE_CHANNEL),
                    "type": 2,
                    "name": "Tavern",
                    "position": 0,
                    "bitrate": 64000,
                    "user_limit": 0,
                }
            ],
        }
    )
    yield bot
    await bot.close()
    await api.close()


async def _binary(ws: DiscordVoiceWebSocket, op: int, payload: bytes, seq: int) -> None:
    await ws.received_binary_message(struct.pack(">HB", seq, op) + payload)


class VoiceRig:
    """The bot's ListeningVoiceClient after discord.py's handshake with our local Discord."""

    def __init__(self, client: discord.Client) -> None:
        self.client = client
        self.heard: list[VoiceFrame] = []
        self.enough = asyncio.Event()
        self.want = 20

    def _sink(self, frames: Any) -> None:
        self.heard.extend(frames)
        if len(self.heard) >= self.want:
            self.enough.set()

    async def connect(self) -> None:
        loop = asyncio.get_running_loop()
        channel = self.client.get_channel(VOICE_CHANNEL)
        self.vc = vc = ListeningVoiceClient(self.client, channel)  # type: ignore[arg-type]
        self.state = state = vc._connection
        vc.listen(self._sink)
        self.transport, self.server = await loop.create_datagram_endpoint(
            UdpVoiceServer, local_addr=("127.0.0.1", 0)
        )
        host, port = self.transport.get_extra_info("sockname")
        # Main-gateway events as discord.py receives them: the bot's UDP socket is created.
        state.state = ConnectionFlowState.set_guild_voice_state
        await state.voice_server_update(
            {"token": "voice-token", "guild_id": str(GUILD), "endpoint": f"{host}:{port}"}
        )
        await state.voice_state_update(
            {"channel_id": str(VOICE_CHANNEL), "session_id": "s1", "user_id": str(BOT_ID)}  # type: ignore[typeddict-item]
        )
        self.fake = fake = FakeVoiceSocket()
        self.ws = ws = DiscordVoiceWebSocket(fake, loop, hook=state.hook)  # type: ignore[arg-type]
        ws._connection = state
        state.ws = ws

        # op 2 READY: discord.py does real UDP IP discovery against our server.
        modes = [MODE, "aead_aes256_gcm_rtpsize"]
        await ws.received_message(
            {"op": 2, "d": {"ssrc": BOT_SSRC, "ip": host, "port": port, "modes": modes}}
        )
        select = next(m for m in fake.json if m["op"] == 1)
        assert select["d"]["data"]["mode"] == MODE
        # op 4 SESSION_DESCRIPTION with DAVE: discord.py creates the session, sends a key package.
        secret = {"mode": MODE, "secret_key": list(KEY), "dave_protocol_version": 1}
        await ws.received_message({"op": 4, "d": secret})
        assert fake.binary and fake.binary[-1][0] == DiscordVoiceWebSocket.MLS_KEY_PACKAGE
        bot_key_package = fake.binary[-1][1:]
        assert state.dave_session is not None and not state.dave_session.ready

        # The voice server's MLS role: external sender, a remote member, Add + Welcome.
        self.group = group = LocalDaveGroup(VOICE_CHANNEL)
        self.remote = remote = group.new_session(SPEAKER)
        group.join([remote])
        await _binary(ws, DiscordVoiceWebSocket.MLS_EXTERNAL_SENDER, group.external_sender, 1)
        proposals = group.add_proposals([bot_key_package], remote.epoch or 0)
        result = remote.process_proposals(davey.ProposalsOperationType.append, proposals)
        assert result is not None and result.welcome is not None
        remote.process_commit(result.commit)
        transition = 7
        welcome = struct.pack(">H", transition) + result.welcome
        await _binary(ws, DiscordVoiceWebSocket.MLS_WELCOME, welcome, 2)
        ready = [m for m in fake.json if m["op"] == DiscordVoiceWebSocket.DAVE_TRANSITION_READY]
        assert ready and ready[-1]["d"]["transition_id"] == transition
        await ws.received_message({"op": 22, "d": {"transition_id": transition}})
        assert state.dave_session.ready and state.can_encrypt
        assert vc.voice_privacy_code  # both sides agree on a group
        state.state = ConnectionFlowState.connected  # what discord.py's handshake ends with

    def close(self) -> None:
        self.vc.receiver.close()
        self.vc.stop()
        self.state._socket_reader.stop()
        if self.state.socket:
            self.state.socket.close()
        self.transport.close()


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
    through our receive path on the remote member's side; a reconnect restarts playback."""
    rig = VoiceRig(client)
    try:
        await rig.connect()
        loop = asyncio.get_running_loop()
        remote_heard: list[VoiceFrame] = []
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
        rig.server.on_datagram = remote_ears.on_datagram
        frames = iter(tone(2_000, freq=330.0))
        source = MixerSource(lambda: next(frames))
        keeper = PlaybackKeeper(rig.vc, source, retry_s=0.02)
        keeper.start()
        await asyncio.wait_for(got.wait(), timeout=10)
        assert {f.user_id for f in remote_heard} == {BOT_ID}
        assert remote_ears.snapshot().dropped["dave_failed"] == 0
        assert any(any(f.pcm) for f in remote_heard)  # real audio, not just silence

        # A voice reconnect longer than discord.py waits: the player gives up, we restart it.
        rig.state.timeout = 0.05
        player = rig.vc._player
        assert player is not None
        rig.state.state = ConnectionFlowState.disconnected
        await asyncio.to_thread(player.join, 10)
        assert not player.is_alive() and keeper.restarts == 1
        got.clear()
        target[0] = len(remote_heard) + 10
        rig.state.state = ConnectionFlowState.connected
        await asyncio.wait_for(got.wait(), timeout=10)
        assert rig.vc.is_playing() and rig.vc._player is not player
        await keeper.stop()
        assert not rig.vc.is_playing()
    finally:
        rig.close()


async def test_persistent_dave_failures_make_discordpy_rejoin_the_group(
    client: discord.Client,
) -> None:
    """Frames we cannot decrypt (e.g. we missed a commit) -> our key package is sent again."""
    rig = VoiceRig(client)
    try:
        await rig.connect()
        await rig.ws.received_message(
            {"op": 5, "d": {"user_id": str(SPEAKER), "ssrc": SPEAKER_SSRC, "speaking": 1}}
        )
        rig.vc.start_listening()
        key_packages = len(rig.fake.binary)
        rig.fake.changed.clear()
        # A sender whose E2EE key we do not have: a member of a different group.
        stranger_group = LocalDaveGroup(VOICE_CHANNEL)
        stranger = stranger_group.new_session(SPEAKER)
        stranger_group.join([stranger, stranger_group.new_session(444)])
        speaker = LoopbackSpeaker(SPEAKER_SSRC, make_cipher(MODE, KEY), stranger)
        opus = speaker.encode(tone(1)[0])
        for _ in range(60):
            rig.server.send(speaker.packet(opus))
        await asyncio.wait_for(rig.fake.changed.wait(), timeout=10)
        assert len(rig.fake.binary) == key_packages + 1
        assert rig.fake.binary[-1][0] == DiscordVoiceWebSocket.MLS_KEY_PACKAGE
        dave = rig.vc.receiver.dave
        assert dave is not None and dave.stats.recoveries_requested == 1
        assert rig.vc.receiver.snapshot().dropped["dave_failed"] >= 50
    finally:
        rig.close()
