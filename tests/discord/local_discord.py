"""A minimal local Discord for one guild's voice (the sharded tests' per-guild voice server).

``bot.local_discord`` is the full one (REST, players joining and leaving, disruptions); this
one keeps the small surface ``sharded_discord.py`` builds on.

Each speaks the real wire protocol discord.py implements, with just enough state for one guild:
the main gateway answers IDENTIFY with READY + GUILD_CREATE and voice-state requests (op 4) with
VOICE_STATE_UPDATE + VOICE_SERVER_UPDATE; the voice gateway runs HELLO/READY/SESSION_DESCRIPTION
and the DAVE handshake (external sender, welcome, transition) as the voice server does, using
:class:`LocalDaveGroup` for the MLS part; the UDP server answers IP discovery and relays RTP.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import struct
from typing import Any

import davey
from aiohttp import WSMsgType, web

from bot.local_discord.tls import self_signed_tls
from bot.local_discord.voice_server import ip_discovery_reply
from bot.voice.loopback import LocalDaveGroup


class UdpVoice(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.transport: asyncio.DatagramTransport | None = None
        self.client: tuple[str, int] | None = None
        self.from_bot: list[bytes] = []
        self.got_audio = asyncio.Event()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        reply = ip_discovery_reply(data, addr)
        if reply is not None:
            self.client = addr
            assert self.transport is not None
            self.transport.sendto(reply, addr)
            return
        self.from_bot.append(data)
        self.got_audio.set()

    def send(self, datagram: bytes) -> None:
        assert self.transport is not None and self.client is not None
        self.transport.sendto(datagram, self.client)


class LocalDiscord:
    """One guild, one bot, one remote voice member who can speak."""

    def __init__(
        self, *, guild: dict[str, Any], bot_user: dict[str, Any], app_id: int, tls_dir: str
    ) -> None:
        self.guild = guild
        self.bot_user = bot_user
        self.app_id = app_id
        self._tls_dir = tls_dir
        self.gateway_url = ""
        self.voice_endpoint = ""
        self.mode = "aead_xchacha20_poly1305_rtpsize"
        self.secret_key = bytes(range(64, 96))
        self.bot_ssrc = 5150
        self.udp = UdpVoice()
        self.group: LocalDaveGroup | None = None
        self.remote: davey.DaveSession | None = None
        self.remote_user = 0
        self.remote_ssrc = 6160
        self.dave_ready = asyncio.Event()
        self.speaking_sent = asyncio.Event()
        self.voice_states: list[dict[str, Any]] = []
        self._main: web.WebSocketResponse | None = None
        self._voice: web.WebSocketResponse | None = None
        self._seq = 0
        self._voice_seq = 0
        self._runners: list[web.AppRunner] = []
        self._udp_transport: asyncio.DatagramTransport | None = None

    async def start(self, remote_user: int) -> None:
        self.remote_user = remote_user
        loop = asyncio.get_running_loop()
        self._udp_transport, _ = await loop.create_datagram_endpoint(
            lambda: self.udp, local_addr=("127.0.0.1", 0)
        )
        main = web.Application()
        main.router.add_get("/", self._main_gateway)
        port = await self._serve(main, None)
        self.gateway_url = f"ws://127.0.0.1:{port}/"
        voice = web.Application()
        voice.router.add_get("/", self._voice_gateway)
        port = await self._serve(voice, self_signed_tls(self._tls_dir))
        self.voice_endpoint = f"127.0.0.1:{port}"

    async def close(self) -> None:
        for ws in (self._main, self._voice):
            if ws is not None and not ws.closed:
                await ws.close()
        for runner in self._runners:
            await runner.cleanup()
        if self._udp_transport is not None:
            self._udp_transport.close()

    async def dispatch(self, event: str, data: dict[str, Any]) -> None:
        assert self._main is not None
        self._seq += 1
        await self._main.send_str(json.dumps({"op": 0, "t": event, "s": self._seq, "d": data}))

    async def _serve(self, app: web.Application, tls: ssl.SSLContext | None) -> int:
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls)
        await site.start()
        self._runners.append(runner)
        return site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    # -- main gateway ------------------------------------------------------------------------

    async def _main_gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._main = ws
        await ws.send_str(json.dumps({"op": 10, "d": {"heartbeat_interval": 41250}}))
        async for msg in ws:
            if msg.type is not WSMsgType.TEXT:
                continue
            payload = json.loads(msg.data)
            op, data = payload["op"], payload.get("d")
            if op == 1:
                await ws.send_str(json.dumps({"op": 11}))
            elif op == 2:
                await self.dispatch(
                    "READY",
                    {
                        "v": 10,
                        "user": self.bot_user,
                        "guilds": [{"id": self.guild["id"], "unavailable": True}],
                        "session_id": "main-session",
                        "resume_gateway_url": self.gateway_url,
                        "application": {"id": str(self.app_id), "flags": 0},
                    },
                )
                await self.dispatch("GUILD_CREATE", self.guild)
            elif op == 4:
                await self._voice_state_request(data)
        return ws

    async def _voice_state_request(self, data: dict[str, Any]) -> None:
        state = {
            "guild_id": self.guild["id"],
            "channel_id": data["channel_id"],
            "user_id": self.bot_user["id"],
            "session_id": "voice-session",
            "deaf": False,
            "mute": False,
            "self_deaf": data.get("self_deaf", False),
            "self_mute": data.get("self_mute", False),
            "self_video": False,
            "suppress": False,
            "request_to_speak_timestamp": None,
        }
        self.voice_states.append(state)
        await self.dispatch("VOICE_STATE_UPDATE", state)
        if data["channel_id"] is not None:
            server = {"token": "voice-token", "guild_id": self.guild["id"]}
            await self.dispatch("VOICE_SERVER_UPDATE", {**server, "endpoint": self.voice_endpoint})

    # -- voice gateway -----------------------------------------------------------------------

    async def _voice_json(self, op: int, data: dict[str, Any]) -> None:
        assert self._voice is not None
        await self._voice.send_str(json.dumps({"op": op, "d": data}))

    async def _voice_binary(self, op: int, payload: bytes) -> None:
        assert self._voice is not None
        self._voice_seq += 1
        await self._voice.send_bytes(struct.pack(">HB", self._voice_seq, op) + payload)

    async def _voice_gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._voice = ws
        host, port = self._udp_transport.get_extra_info("sockname")  # type: ignore[union-attr]
        async for msg in ws:
            if msg.type is WSMsgType.BINARY:
                await self._voice_binary_in(msg.data)
                continue
            if msg.type is not WSMsgType.TEXT:
                continue
            payload = json.loads(msg.data)
            op, data = payload["op"], payload.get("d")
            if op == 0:  # IDENTIFY
                await self._voice_json(8, {"heartbeat_interval": 13750})
                modes = [self.mode, "aead_aes256_gcm_rtpsize"]
                ready = {"ssrc": self.bot_ssrc, "ip": host, "port": port, "modes": modes}
                await self._voice_json(2, ready)
            elif op == 1:  # SELECT_PROTOCOL
                description = {
                    "mode": data["data"]["mode"],
                    "secret_key": list(self.secret_key),
                    "dave_protocol_version": 1,
                }
                await self._voice_json(4, description)
            elif op == 3:  # heartbeat
                await self._voice_json(6, {"t": data.get("t") if isinstance(data, dict) else data})
            elif op == 23:  # DAVE transition ready -> execute
                await self._voice_json(22, {"transition_id": data["transition_id"]})
                self.dave_ready.set()
                await self._voice_json(
                    5, {"user_id": str(self.remote_user), "ssrc": self.remote_ssrc, "speaking": 1}
                )
                self.speaking_sent.set()
        return ws

    async def _voice_binary_in(self, data: bytes) -> None:
        if data[0] != 26:  # only the key package matters here
            return
        self.group = LocalDaveGroup(int(self.voice_states[-1]["channel_id"]))
        self.remote = self.group.new_session(self.remote_user)
        self.group.join([self.remote])
        await self._voice_binary(25, self.group.external_sender)
        proposals = self.group.add_proposals([bytes(data[1:])], self.remote.epoch or 0)
        result = self.remote.process_proposals(davey.ProposalsOperationType.append, proposals)
        assert result is not None and result.welcome is not None
        self.remote.process_commit(result.commit)
        await self._voice_binary(30, struct.pack(">H", 1) + result.welcome)
