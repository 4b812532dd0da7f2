"""discord.py's own voice connection, driven by a local voice server until DAVE is ready.

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

from bot.audio.voice.client import ListeningVoiceClient
from bot.audio.voice.receiver import VoiceFrame
from bot.bench.doubles.local_discord.voice_server import ip_discovery_reply
from bot.bench.doubles.voice_loopback import LocalDaveGroup

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
        self.sent: list[int] = []
        """Every opcode sent, in order (JSON and binary alike)."""
        self.changed = asyncio.Event()

    async def send_str(self, data: str) -> None:
        message = json.loads(data)
        self.json.append(message)
        self.sent.append(message["op"])
        self.changed.set()

    async def send_bytes(self, data: bytes) -> None:
        self.binary.append(bytes(data))
        self.sent.append(data[0])
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
        reply = ip_discovery_reply(data, addr)
        if reply is None:
            if self.on_datagram is not None:  # RTP from the bot
                self.on_datagram(data)
            return
        self.client = addr
        assert self.transport is not None
        self.transport.sendto(reply, addr)

    def send(self, datagram: bytes) -> None:
        assert self.transport is not None and self.client is not None
        self.transport.sendto(datagram, self.client)


async def logged_in_client(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[discord.Client]:
    """A discord.Client logged in to a local REST API, with one guild and its voice channel."""
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
        self._seq = 10

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
        await self.welcome_bot(bot_key_package, transition=7)
        assert state.dave_session.ready and state.can_encrypt
        assert vc.voice_privacy_code  # both sides agree on a group
        state.state = ConnectionFlowState.connected  # what discord.py's handshake ends with

    async def welcome_bot(self, key_package: bytes, *, transition: int) -> None:
        """The voice server adds the bot (again: its old leaf goes) and executes the transition."""
        group = self.group
        remove = [BOT_ID] if group.leaf(BOT_ID) is not None else []
        proposals = group.proposals(add=[(BOT_ID, key_package)], remove=remove)
        result = group.commit(proposals, add=[BOT_ID], remove=remove)
        assert result.welcome is not None
        await self.binary(
            DiscordVoiceWebSocket.MLS_WELCOME, struct.pack(">H", transition) + result.welcome
        )
        ready = [m for m in self.fake.json if m["op"] == 23]  # DAVE_TRANSITION_READY
        assert ready and ready[-1]["d"]["transition_id"] == transition
        await self.ws.received_message({"op": 22, "d": {"transition_id": transition}})

    async def add_member(self, user_id: int, *, transition: int) -> davey.DaveSession:
        """A player joins: proposals (op 27) and the chosen commit (op 29) reach the bot; the
        transition stays pending until :meth:`execute` (op 22)."""
        newcomer = self.group.new_session(user_id)
        key_package = newcomer.get_serialized_key_package()
        proposals = self.group.proposals(add=[(user_id, key_package)])
        await self.binary(DiscordVoiceWebSocket.MLS_PROPOSALS, b"\0" + proposals)
        result = self.group.commit(proposals, add=[user_id])
        assert result.welcome is not None
        newcomer.process_welcome(result.welcome)
        self.group.members[user_id] = newcomer
        commit = struct.pack(">H", transition) + result.commit
        await self.binary(DiscordVoiceWebSocket.MLS_ANNOUNCE_COMMIT_TRANSITION, commit)
        assert transition in self.state.dave_pending_transitions
        return newcomer

    async def execute(self, transition: int) -> None:
        await self.ws.received_message({"op": 22, "d": {"transition_id": transition}})

    async def speaking(self, user_id: int, ssrc: int) -> None:
        await self.ws.received_message(
            {"op": 5, "d": {"user_id": str(user_id), "ssrc": ssrc, "speaking": 1}}
        )

    async def binary(self, op: int, payload: bytes) -> None:
        self._seq += 1
        await _binary(self.ws, op, payload, self._seq)

    def close(self) -> None:
        self.vc.receiver.close()
        self.vc.keepalive.close()
        self.vc.stop()
        self.state._socket_reader.stop()
        if self.state.socket:
            self.state.socket.close()
        self.transport.close()
