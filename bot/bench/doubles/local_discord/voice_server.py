"""A local Discord voice server: the voice gateway (TLS websocket), the UDP relay and DAVE.

It speaks the protocol discord.py implements (voice gateway v8): IDENTIFY -> HELLO + READY,
SELECT_PROTOCOL -> SESSION_DESCRIPTION, RESUME -> RESUMED, and the DAVE handshake (external
sender, proposals, commits, welcomes, transitions) with :class:`LocalDaveGroup` playing the
server's MLS role. Remote players are in-process davey sessions whose packets the UDP side
relays to the bot, with optional loss. Group changes are serialized and each waits for the
bot's transition-ready (op 23) before executing it (op 22), as the real server does.

The UDP side (IP discovery, the relay to the bot, which may forget a silent endpoint, and
what the bot sends) is :mod:`bot.bench.doubles.local_discord.udp_relay`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import ssl
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import davey
from aiohttp import WSMsgType, web

from bot.audio.voice.transport_crypto import make_cipher
from bot.bench.doubles.local_dave import LocalDaveGroup
from bot.bench.doubles.local_discord.udp_relay import ServerStats, UdpRelay, ip_discovery_reply
from bot.bench.doubles.voice_loopback import LoopbackSpeaker

__all__ = ["LocalVoiceServer", "RemotePlayer", "ServerStats", "ip_discovery_reply"]

log = logging.getLogger(__name__)

XCHACHA = "aead_xchacha20_poly1305_rtpsize"
_TRANSITION_WAIT_S = 2.0
_OP_READY, _OP_HEARTBEAT, _OP_DESCRIPTION, _OP_SPEAKING, _OP_ACK = 2, 3, 4, 5, 6
_OP_HELLO, _OP_RESUMED, _OP_DISCONNECT = 8, 9, 13
_OP_EXECUTE, _OP_TRANSITION_READY = 22, 23
_OP_EXTERNAL_SENDER, _OP_KEY_PACKAGE, _OP_PROPOSALS = 25, 26, 27
_OP_COMMIT, _OP_WELCOME, _OP_INVALID = 29, 30, 31


@dataclass(slots=True)
class RemotePlayer:
    """A player's Discord client on this server."""

    user_id: int
    ssrc: int
    session: davey.DaveSession | None = None
    speaker: LoopbackSpeaker | None = None
    speaking: bool = False
    stale: bool = False
    """Left on an old epoch on purpose: later commits skip this client."""


class LocalVoiceServer:
    """One voice server endpoint for one channel; start, then hand out :attr:`endpoint`."""

    def __init__(
        self, *, channel_id: int, bot_id: int, tls: ssl.SSLContext, ssrc_base: int = 1000
    ) -> None:
        self.channel_id = channel_id
        self.bot_id = bot_id
        self._tls = tls
        self.mode = XCHACHA
        self.secret_key = os.urandom(32)
        self.bot_ssrc = ssrc_base
        self._ssrcs = itertools.count(ssrc_base + 1)
        self._transitions = itertools.count(1)
        self.group = LocalDaveGroup(channel_id)
        self.players: dict[int, RemotePlayer] = {}
        self.endpoint = ""
        self.stats = ServerStats()
        self.down = False
        self.welcome_bot = True
        """False: ignore the bot's key packages (a voice server that never re-adds it)."""
        self.bot_welcomed = asyncio.Event()
        self.on_welcome: Callable[[], None] | None = None
        """Called after each welcome (a test Discord that waits on its own state changes)."""
        self.bot_speaking: list[tuple[float, int]] = []
        """The bot's SPEAKING (op 5) messages: (``time.monotonic()``, speaking flags)."""
        self._ws: web.WebSocketResponse | None = None
        self._request: web.Request | None = None
        self._seq = 0
        self._changes = asyncio.Lock()
        self._ready: dict[int, asyncio.Future[None]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._runner: web.AppRunner | None = None
        self.udp = UdpRelay(self.stats, lambda: self.down, seed=channel_id)

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.create_datagram_endpoint(lambda: self.udp, local_addr=("127.0.0.1", 0))
        app = web.Application()
        app.router.add_get("/", self._voice_gateway)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self._tls)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.endpoint = f"127.0.0.1:{port}"

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.close_bot(1001)
        if self._runner is not None:
            await self._runner.cleanup()
        self.udp.close()

    @property
    def bot_connected(self) -> bool:
        return self._ws is not None and not self._ws.closed

    async def close_bot(self, code: int) -> None:
        """Close the bot's voice websocket with ``code`` (4014 kicked, 4015 crash, ...)."""
        ws = self._ws
        if ws is not None and not ws.closed:
            await ws.close(code=code, message=b"local voice server")

    def cut(self) -> None:
        """Network loss: the TCP connection dies without a close frame."""
        if self._request is not None and self._request.transport is not None:
            self._request.transport.abort()

    # -- players -----------------------------------------------------------------------------

    async def join(self, user_id: int, *, tell_bot: bool = True) -> RemotePlayer:
        """A player's client connects and is added to the group (a commit: new epoch).

        ``tell_bot=False`` keeps the commit from the bot: its group state goes stale.
        """
        async with self._changes:
            player = RemotePlayer(user_id, next(self._ssrcs))
            self.players[user_id] = player
            await self._add_session(player, tell_bot=tell_bot)
            return player

    async def leave(self, user_id: int) -> None:
        """A player disconnects: op 13, then a Remove commit (new epoch)."""
        async with self._changes:
            player = self.players.pop(user_id, None)
            if player is None:
                return
            await self._json(_OP_DISCONNECT, {"user_id": str(user_id)})
            if self.group.leaf(user_id) is not None:
                proposals = self.group.proposals(remove=[user_id])
                await self._binary(_OP_PROPOSALS, b"\0" + proposals)
                result = self.group.commit(proposals, remove=[user_id], skip=self._stale())
                await self._announce(result.commit)

    async def resync(self, user_id: int) -> None:
        """A stale client notices and re-joins the group with a fresh session."""
        async with self._changes:
            player = self.players[user_id]
            player.stale = False
            await self._add_session(player, replace=True)

    def mark_stale(self, user_id: int) -> None:
        """This client will miss every commit until :meth:`resync` (a lagging client)."""
        self.players[user_id].stale = True

    @property
    def loss(self) -> float:
        """Share of players' packets lost on the way to the bot."""
        return self.udp.loss

    @loss.setter
    def loss(self, share: float) -> None:
        self.udp.loss = share

    @property
    def forget_after_s(self) -> float | None:
        """Forget a bot endpoint silent this long (``UdpRelay.forget_after_s``)."""
        return self.udp.forget_after_s

    @forget_after_s.setter
    def forget_after_s(self, seconds: float | None) -> None:
        self.udp.forget_after_s = seconds

    def lose_bot_endpoint(self) -> None:
        """See :meth:`UdpRelay.lose_bot_endpoint` (a stall only a rejoin ends)."""
        self.udp.lose_bot_endpoint()

    def bot_forgotten(self) -> bool:
        return self.udp.bot_forgotten()

    def bot_datagrams_between(self, start: float, end: float) -> int:
        return self.udp.bot_datagrams_between(start, end)

    def send(self, user_id: int, opus: bytes) -> bool:
        """One Opus frame from a player, as their client sends it; False if not relayed."""
        player = self.players.get(user_id)
        if player is None or player.speaker is None:
            return False
        return self.udp.relay(player.speaker.packet(opus))

    async def set_speaking(self, user_id: int, speaking: bool) -> None:
        player = self.players.get(user_id)
        if player is None or player.speaking == speaking:
            return
        player.speaking = speaking
        if self.bot_welcomed.is_set():
            await self._speaking(player)

    # -- group changes (hold self._changes) --------------------------------------------------

    def _stale(self) -> list[int]:
        return [p.user_id for p in self.players.values() if p.stale]

    async def _add_session(
        self, player: RemotePlayer, *, replace: bool = False, tell_bot: bool = True
    ) -> None:
        group = self.group
        session = group.new_session(player.user_id)
        if not group.members:
            group.join([session])
        else:
            remove = [player.user_id] if replace and group.leaf(player.user_id) is not None else []
            if remove:
                group.members.pop(player.user_id, None)
            add = [(player.user_id, session.get_serialized_key_package())]
            proposals = group.proposals(add=add, remove=remove)
            if tell_bot:
                await self._binary(_OP_PROPOSALS, b"\0" + proposals)
            skip = self._stale()
            result = group.commit(proposals, add=[player.user_id], remove=remove, skip=skip)
            assert result.welcome is not None
            session.process_welcome(result.welcome)
            group.members[player.user_id] = session
            if tell_bot:
                await self._announce(result.commit)
        player.session = session
        cipher = make_cipher(self.mode, self.secret_key)
        old = player.speaker
        player.speaker = LoopbackSpeaker(player.ssrc, cipher, session)
        if old is not None:  # the same client keeps its stream going
            player.speaker.sequence, player.speaker.timestamp = old.sequence, old.timestamp

    async def _announce(self, commit: bytes) -> None:
        """op 29 to the bot (if it is a member), then op 22 once it is ready (or after 2 s)."""
        if not self.bot_connected or self.group.leaf(self.bot_id) is None:
            return
        transition = next(self._transitions)
        await self._binary(_OP_COMMIT, struct.pack(">H", transition) + commit)
        await self._execute(transition)

    async def _execute(self, transition: int) -> None:
        ready = self._ready.setdefault(transition, asyncio.get_running_loop().create_future())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(ready), _TRANSITION_WAIT_S)
        self._ready.pop(transition, None)
        self.stats.transitions += 1
        await self._json(_OP_EXECUTE, {"transition_id": transition})

    async def _welcome_bot(self, key_package: bytes) -> None:
        async with self._changes:
            group = self.group
            if not group.members:
                log.warning("no player in the channel to welcome the bot into the DAVE group")
                return
            remove = [self.bot_id] if group.leaf(self.bot_id) is not None else []
            proposals = group.proposals(add=[(self.bot_id, key_package)], remove=remove)
            result = group.commit(proposals, add=[self.bot_id], remove=remove, skip=self._stale())
            assert result.welcome is not None
            transition = next(self._transitions)
            await self._binary(_OP_WELCOME, struct.pack(">H", transition) + result.welcome)
            await self._execute(transition)
            self.stats.welcomes += 1
            self.bot_welcomed.set()
            if self.on_welcome is not None:
                self.on_welcome()
            for player in self.players.values():
                if player.speaking:
                    await self._speaking(player)

    # -- voice gateway -----------------------------------------------------------------------

    async def _voice_gateway(self, request: web.Request) -> web.StreamResponse:
        if self.down:
            return web.Response(status=503)
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        if self._ws is not None and not self._ws.closed:
            await self._ws.close(code=4000)
        self._ws, self._request = ws, request
        self.bot_welcomed.clear()
        self._seq = 0
        try:
            async for message in ws:
                if message.type is WSMsgType.BINARY:
                    self._on_binary(bytes(message.data))
                elif message.type is WSMsgType.TEXT:
                    payload = json.loads(message.data)
                    await self._on_json(payload["op"], payload.get("d"))
        finally:
            if self._ws is ws:
                self.bot_welcomed.clear()
        return ws

    async def _on_json(self, op: int, data: Any) -> None:
        if op == 0:  # IDENTIFY
            self.stats.identifies += 1
            await self._json(_OP_HELLO, {"heartbeat_interval": 13750})
            host, port = self.udp.address
            modes = [self.mode, "aead_aes256_gcm_rtpsize"]
            ready = {"ssrc": self.bot_ssrc, "ip": host, "port": port, "modes": modes}
            await self._json(_OP_READY, ready)
        elif op == 1:  # SELECT_PROTOCOL
            self.mode = data["data"]["mode"]
            description = {"mode": self.mode, "secret_key": list(self.secret_key),
                           "dave_protocol_version": davey.DAVE_PROTOCOL_VERSION}  # fmt: skip
            await self._json(_OP_DESCRIPTION, description)
        elif op == 7:  # RESUME: same session, keys and group
            self.stats.resumes += 1
            await self._json(_OP_HELLO, {"heartbeat_interval": 13750})
            await self._json(_OP_RESUMED, None)
            self.bot_welcomed.set()
        elif op == _OP_SPEAKING and isinstance(data, dict):
            self.bot_speaking.append((time.monotonic(), int(data.get("speaking", 0))))
        elif op == _OP_HEARTBEAT:
            await self._json(_OP_ACK, {"t": data.get("t") if isinstance(data, dict) else data})
        elif op == _OP_TRANSITION_READY:
            future = self._ready.get(data["transition_id"])
            if future is not None and not future.done():
                future.set_result(None)
        elif op == _OP_INVALID:
            self.stats.invalid_commits += 1

    def _on_binary(self, data: bytes) -> None:
        if data[0] != _OP_KEY_PACKAGE:
            return  # op 28 (the bot's own commit offer): the server picks a player's
        self.stats.key_packages += 1
        task = asyncio.get_running_loop().create_task(self._key_package(data[1:]))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _key_package(self, key_package: bytes) -> None:
        if not self.welcome_bot:
            return
        await self._binary(_OP_EXTERNAL_SENDER, self.group.external_sender)
        await self._welcome_bot(key_package)

    async def _speaking(self, player: RemotePlayer) -> None:
        speaking = {"user_id": str(player.user_id), "ssrc": player.ssrc,
                    "speaking": int(player.speaking)}  # fmt: skip
        await self._json(_OP_SPEAKING, speaking)

    async def _json(self, op: int, data: Any) -> None:
        ws = self._ws
        if ws is not None and not ws.closed:
            with contextlib.suppress(ConnectionError):
                await ws.send_str(json.dumps({"op": op, "d": data}))

    async def _binary(self, op: int, payload: bytes) -> None:
        ws = self._ws
        if ws is not None and not ws.closed:
            self._seq += 1
            with contextlib.suppress(ConnectionError):
                await ws.send_bytes(struct.pack(">HB", self._seq, op) + payload)
