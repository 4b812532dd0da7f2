"""A local Discord for sharded bots: many gateway connections, several guilds, voice per guild.

The main gateway accepts any number of connections. Each IDENTIFY names its shard (``shard:
[id, count]``); READY (with ``shard``) lists the guilds Discord's formula puts on that shard
(``(guild_id >> 22) % count``) and a GUILD_CREATE follows for each. Events of a guild go to
every live connection of its shard, as Discord does when two sessions identify as the same
shard. A voice state request (op 4) is answered on the connection that sent it; each guild has
its own voice server (``bot.bench.doubles.local_discord``'s TLS voice gateway, UDP relay and DAVE
group), which also serves a bot that comes back after its process was killed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import WSMsgType, web

from bot.bench.doubles.local_discord.tls import self_signed_tls
from bot.bench.doubles.local_discord.voice_server import LocalVoiceServer, RemotePlayer


@dataclass(eq=False)
class Connection:
    """One main-gateway websocket (one shard of one bot process)."""

    ws: web.WebSocketResponse
    number: int
    shard: tuple[int, int] | None = None
    seq: int = 0
    voice_requests: list[dict[str, Any]] = field(default_factory=list)
    """Every op 4 this connection sent, in order (``channel_id`` None: leave)."""
    open: bool = True
    peer_port: int = 0
    """The client's TCP port (tells which bot process holds this connection)."""


class GuildVoice:
    """One guild's voice server (``bot.bench.doubles.local_discord``'s) with the member who
    speaks there; its voice-state answers go to the gateway connection that asked."""

    def __init__(self, gateway: ShardedDiscord, guild: dict[str, Any], tls_dir: Path) -> None:
        self.gateway = gateway
        self.guild_id = str(guild["id"])
        channel = next(int(c["id"]) for c in guild["channels"] if c["type"] == 2)
        self.server = LocalVoiceServer(
            channel_id=channel, bot_id=int(gateway.bot_user["id"]), tls=self_signed_tls(tls_dir)
        )
        self.server.on_welcome = gateway.changed
        self.voice_states: list[dict[str, Any]] = []
        """The bot's voice states (op 4 answers), in order."""
        self.remote_user = 0

    @property
    def ready_count(self) -> int:
        """Voice connections that finished the DAVE handshake (one more per (re)join)."""
        return self.server.stats.welcomes

    @property
    def remote(self) -> RemotePlayer:
        """The member who speaks in this guild's channel."""
        return self.server.players[self.remote_user]

    async def start(self, remote_user: int) -> None:
        self.remote_user = remote_user
        await self.server.start()
        await self.server.join(remote_user)
        await self.server.set_speaking(remote_user, True)  # told to the bot once it is welcomed

    async def close(self) -> None:
        await self.server.close()

    async def answer(self, connection: Connection, data: dict[str, Any]) -> None:
        state = {
            "guild_id": self.guild_id,
            "channel_id": data["channel_id"],
            "user_id": self.gateway.bot_user["id"],
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
        await self.gateway.send(connection, "VOICE_STATE_UPDATE", state)
        if data["channel_id"] is not None:
            server = {"token": "voice-token", "guild_id": self.guild_id}
            await self.gateway.send(
                connection, "VOICE_SERVER_UPDATE", {**server, "endpoint": self.server.endpoint}
            )


class ShardedDiscord:
    """Guilds spread over ``shard_count`` shards; ``voices[guild_id]`` is each guild's voice."""

    def __init__(
        self,
        guilds: list[dict[str, Any]],
        *,
        shard_count: int,
        bot_user: dict[str, Any],
        app_id: int,
        tls_dir: Path,
    ) -> None:
        self.guilds = {int(g["id"]): g for g in guilds}
        self.shard_count = shard_count
        self.bot_user = bot_user
        self.app_id = app_id
        self.connections: list[Connection] = []
        self.voices = {
            guild_id: GuildVoice(self, guild, _folder(tls_dir / str(guild_id)))
            for guild_id, guild in self.guilds.items()
        }
        self.gateway_url = ""
        self._tls_dir = tls_dir
        self._runner: web.AppRunner | None = None
        self._changed = asyncio.Event()

    def shard_of(self, guild_id: int) -> int:
        return (guild_id >> 22) % self.shard_count

    async def start(self, remote_users: dict[int, int]) -> None:
        """Start the gateway and every guild's voice server (``remote_users``: guild -> the
        member who speaks there)."""
        for guild_id, voice in self.voices.items():
            await voice.start(remote_user=remote_users[guild_id])
        app = web.Application()
        app.router.add_get("/", self._gateway)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.gateway_url = f"ws://127.0.0.1:{port}/"

    def certificates(self) -> Path:
        """Every voice server's certificate in one file, for a client's ``SSL_CERT_FILE``."""
        bundle = self._tls_dir / "voice-bundle.pem"
        bundle.write_bytes(
            b"".join(
                (self._tls_dir / str(guild_id) / "voice.crt").read_bytes()
                for guild_id in self.voices
            )
        )
        return bundle

    async def close(self) -> None:
        for connection in self.connections:
            if not connection.ws.closed:
                await connection.ws.close()
        if self._runner is not None:
            await self._runner.cleanup()
        for voice in self.voices.values():
            await voice.close()

    # -- what tests wait for -----------------------------------------------------------------

    def changed(self) -> None:
        self._changed.set()

    async def wait_until(self, condition: Callable[[], bool], timeout_s: float = 60.0) -> None:
        """Until ``condition()`` holds; it is checked whenever the gateway's state changes."""
        async with asyncio.timeout(timeout_s):
            while True:
                self._changed.clear()
                if condition():
                    return
                await self._changed.wait()

    def live(self, shard: int) -> list[Connection]:
        return [c for c in self.connections if c.open and c.shard and c.shard[0] == shard]

    def joins(self, guild_id: int) -> list[Connection]:
        """Live connections that asked to join a voice channel of this guild."""
        return [
            c
            for c in self.connections
            if c.open
            and any(
                int(r["guild_id"]) == guild_id and r["channel_id"] is not None
                for r in c.voice_requests
            )
        ]

    # -- sending -----------------------------------------------------------------------------

    async def send(self, connection: Connection, event: str, data: dict[str, Any]) -> None:
        if connection.ws.closed:
            return
        connection.seq += 1
        payload = {"op": 0, "t": event, "s": connection.seq, "d": data}
        await connection.ws.send_str(json.dumps(payload))

    async def dispatch_guild(self, guild_id: int, event: str, data: dict[str, Any]) -> int:
        """Send a guild's event to every live connection of its shard; returns how many."""
        targets = self.live(self.shard_of(guild_id))
        for connection in targets:
            await self.send(connection, event, data)
        return len(targets)

    # -- the gateway -------------------------------------------------------------------------

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        peer = request.transport.get_extra_info("peername") if request.transport else None
        connection = Connection(ws, len(self.connections), peer_port=peer[1] if peer else 0)
        self.connections.append(connection)
        await ws.send_str(json.dumps({"op": 10, "d": {"heartbeat_interval": 41250}}))
        try:
            async for msg in ws:
                if msg.type is not WSMsgType.TEXT:
                    continue
                payload = json.loads(msg.data)
                op, data = payload["op"], payload.get("d")
                if op == 1:
                    await ws.send_str(json.dumps({"op": 11}))
                elif op == 2:
                    await self._identify(connection, data)
                elif op == 4:
                    connection.voice_requests.append(data)
                    self.changed()
                    await self.voices[int(data["guild_id"])].answer(connection, data)
        finally:
            connection.open = False
            self.changed()
        return ws

    async def _identify(self, connection: Connection, data: dict[str, Any]) -> None:
        shard_id, count = data.get("shard") or (0, 1)
        assert count == self.shard_count, f"a bot identified with {count} shards"
        connection.shard = (shard_id, count)
        mine = [g for g in self.guilds if self.shard_of(g) == shard_id]
        ready = {
            "v": 10,
            "user": self.bot_user,
            "guilds": [{"id": str(g), "unavailable": True} for g in mine],
            "session_id": f"session-{connection.number}",
            "resume_gateway_url": self.gateway_url,
            "application": {"id": str(self.app_id), "flags": 0},
            "shard": [shard_id, count],
        }
        await self.send(connection, "READY", ready)
        for guild_id in mine:
            await self.send(connection, "GUILD_CREATE", self.guilds[guild_id])
        self.changed()


def _folder(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
