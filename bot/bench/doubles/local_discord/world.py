"""A local Discord with one guild: main gateway, REST API and the voice channel's server.

Every byte is produced and parsed by discord.py: only its addresses change
(:meth:`LocalDiscord.pointed_at`). The guild has a text channel and a voice channel; players join
and leave voice (their clients are
:class:`~bot.bench.doubles.local_discord.voice_server.RemotePlayer` on the current voice server) and
speak real Opus. The scripted disruptions are the ways a voice connection really ends or moves: a
voice server move, a kick, a deleted channel, close codes (4015 crash and resume, 4021 rate limit,
4022 call terminated) and network loss.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import Iterator, Sequence
from typing import Any

import discord.http
import yarl
from aiohttp import WSMsgType, web
from discord.gateway import DiscordWebSocket

from bot.audio.voice.dave import OPUS_SILENCE
from bot.bench.doubles.local_discord.tls import self_signed_tls
from bot.bench.doubles.local_discord.voice_server import LocalVoiceServer

__all__ = ["EVERYONE_PERMISSIONS", "LocalDiscord"]

_FRAME_S = 0.02
#: @everyone's permissions as in a new Discord server: the everyday ones (see and write in
#: channels, join and talk in voice, use slash commands).
EVERYONE_PERMISSIONS = discord.Permissions(
    view_channel=True, send_messages=True, read_message_history=True, add_reactions=True,
    connect=True, speak=True, use_voice_activation=True, use_application_commands=True,
).value  # fmt: skip
_TRAILING_SILENCE = 5  # a Discord client sends five silence frames when it stops talking


def _user(user_id: int, name: str, *, bot: bool = False) -> dict[str, Any]:
    return {"id": str(user_id), "username": name, "global_name": name, "discriminator": "0",
            "avatar": None, "bot": bot}  # fmt: skip


class LocalDiscord:
    """One guild, its text and voice channel, a bot and players (user id -> name); players
    named in ``bots`` are other bots (a music bot in the channel)."""

    def __init__(
        self,
        *,
        players: dict[int, str],
        guild_id: int = 9100,
        text_id: int = 9101,
        voice_id: int = 9102,
        bot_id: int = 4001,
        app_id: int = 4000,
        roles: dict[int, str] | None = None,
        member_roles: dict[int, list[int]] | None = None,
        bots: Sequence[int] = (),
        forget_after_s: float | None = None,
    ) -> None:
        self.players = players
        self.forget_after_s = forget_after_s
        """Every voice server (a move starts a new one) forgets a bot endpoint silent this
        long (``LocalVoiceServer.forget_after_s``)."""
        self.bots = set(bots)
        self.roles = roles or {}
        """Roles besides @everyone (id -> name), e.g. the DM role."""
        self.member_roles = member_roles or {}
        self.guild_id, self.text_id, self.voice_id = guild_id, text_id, voice_id
        self.bot_id, self.app_id = bot_id, app_id
        self.in_voice: set[int] = set()
        self.messages: list[dict[str, Any]] = []
        """Messages the bot posted (REST ``channels/{id}/messages``)."""
        self.message_posted = asyncio.Event()
        self.voice_states: list[dict[str, Any]] = []
        """The bot's voice state changes (op 4 requests), in order."""
        self.gateway_url = ""
        self.rest_base = ""
        self._tls = self_signed_tls()
        self._servers = itertools.count(1)
        self.voice = self._new_voice_server()
        self._main: web.WebSocketResponse | None = None
        self._seq = 0
        self._runners: list[web.AppRunner] = []
        self._message_ids = itertools.count(70_000)

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        await self.voice.start()
        main = web.Application()
        main.router.add_get("/", self._main_gateway)
        self.gateway_url = f"ws://127.0.0.1:{await self._serve(main)}/"
        rest = web.Application()
        rest.router.add_route("*", "/api/v10/{tail:.*}", self._rest)
        self.rest_base = f"http://127.0.0.1:{await self._serve(rest)}/api/v10"

    async def close(self) -> None:
        if self._main is not None and not self._main.closed:
            await self._main.close()
        await self.voice.close()
        for runner in self._runners:
            await runner.cleanup()

    @contextlib.contextmanager
    def pointed_at(self) -> Iterator[None]:
        """discord.py's REST and gateway addresses point here for the duration (one process
        talks to one Discord; tests use ``monkeypatch`` instead)."""
        saved = discord.http.Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY
        discord.http.Route.BASE = self.rest_base
        DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(self.gateway_url)
        try:
            yield
        finally:
            discord.http.Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY = saved

    async def dispatch(self, event: str, data: dict[str, Any]) -> None:
        if self._main is None or self._main.closed:
            return
        self._seq += 1
        payload = {"op": 0, "t": event, "s": self._seq, "d": data}
        with contextlib.suppress(ConnectionError):
            await self._main.send_str(json.dumps(payload))

    # -- players -----------------------------------------------------------------------------

    async def player_joins(self, user_id: int) -> None:
        """A player joins the voice channel (a new DAVE epoch)."""
        self.in_voice.add(user_id)
        await self.dispatch("VOICE_STATE_UPDATE", self._voice_state(user_id, self.voice_id))
        await self.voice.join(user_id)

    async def player_leaves(self, user_id: int) -> None:
        self.in_voice.discard(user_id)
        await self.dispatch("VOICE_STATE_UPDATE", self._voice_state(user_id, None))
        await self.voice.leave(user_id)

    async def speak(self, user_id: int, opus: Sequence[bytes], *, speed: float = 1.0) -> int:
        """The player talks: SPEAKING on, one frame every 20 ms / ``speed``, five silence
        frames, SPEAKING off. Returns how many frames the voice server relayed."""
        voice = self.voice
        await voice.set_speaking(user_id, True)
        interval = _FRAME_S / speed
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        relayed = 0
        for frame in [*opus, *[OPUS_SILENCE] * _TRAILING_SILENCE]:
            relayed += self.voice.send(user_id, frame)  # the current server, even after a move
            next_at += interval
            await asyncio.sleep(max(0.0, next_at - loop.time()))
        await self.voice.set_speaking(user_id, False)
        return relayed

    # -- disruptions -------------------------------------------------------------------------

    async def move_voice_server(self) -> LocalVoiceServer:
        """Discord moves the call to another voice server: players re-join there, then the bot
        gets VOICE_SERVER_UPDATE with the new endpoint (discord.py reconnects itself)."""
        old, new = self.voice, self._new_voice_server()
        await new.start()
        for user_id in sorted(old.players):
            await new.join(user_id)
        self.voice = new
        server = {"token": f"voice-token-{new.channel_id}", "guild_id": str(self.guild_id)}
        await self.dispatch("VOICE_SERVER_UPDATE", {**server, "endpoint": new.endpoint})
        await old.close()
        return new

    async def kick_bot(self) -> None:
        """A moderator disconnects the bot from voice."""
        await self.dispatch("VOICE_STATE_UPDATE", self._voice_state(self.bot_id, None))
        await self.voice.close_bot(4014)

    async def delete_voice_channel(self) -> None:
        channel = {"id": str(self.voice_id), "type": 2, "name": "Tavern", "position": 1,
                   "guild_id": str(self.guild_id)}  # fmt: skip
        await self.dispatch("CHANNEL_DELETE", channel)
        await self.dispatch("VOICE_STATE_UPDATE", self._voice_state(self.bot_id, None))
        await self.voice.close_bot(4014)

    async def outage(self, seconds: float) -> None:
        """Network loss: the voice connection dies mid-stream, nothing gets through for a while."""
        self.voice.down = True
        self.voice.cut()
        await asyncio.sleep(seconds)
        self.voice.down = False

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
                # A real gateway is a network hop away; an instant ack races discord.py's
                # keep-alive thread, which then reports the whole interval as latency.
                await asyncio.sleep(0.02)
                await ws.send_str(json.dumps({"op": 11}))
            elif op == 2:
                ready = {"v": 10, "user": _user(self.bot_id, "Glyphoxa", bot=True),
                         "guilds": [{"id": str(self.guild_id), "unavailable": True}],
                         "session_id": "main-session", "resume_gateway_url": self.gateway_url,
                         "application": {"id": str(self.app_id), "flags": 0}}  # fmt: skip
                await self.dispatch("READY", ready)
                await self.dispatch("GUILD_CREATE", self._guild())
            elif op == 4:
                await self._bot_voice_state(data)
        return ws

    async def _bot_voice_state(self, data: dict[str, Any]) -> None:
        channel = data["channel_id"]
        state = self._voice_state(self.bot_id, int(channel) if channel else None)
        state.update(self_deaf=data.get("self_deaf", False), self_mute=data.get("self_mute", False))
        self.voice_states.append(state)
        await self.dispatch("VOICE_STATE_UPDATE", state)
        if channel is not None:
            server = {"token": "voice-token", "guild_id": str(self.guild_id)}
            await self.dispatch("VOICE_SERVER_UPDATE", {**server, "endpoint": self.voice.endpoint})

    def _voice_state(self, user_id: int, channel_id: int | None) -> dict[str, Any]:
        # Discord sends the member with every guild voice state (how discord.py caches
        # members that join voice later without the members intent).
        return {"guild_id": str(self.guild_id), "user_id": str(user_id),
                "channel_id": str(channel_id) if channel_id else None,
                "session_id": f"voice-{user_id}", "deaf": False, "mute": False,
                "self_deaf": False, "self_mute": False, "self_video": False, "suppress": False,
                "request_to_speak_timestamp": None, "member": self._member(user_id)}  # fmt: skip

    def _member(self, user_id: int) -> dict[str, Any]:
        name = "Glyphoxa" if user_id == self.bot_id else self.players.get(user_id, str(user_id))
        roles = [str(role) for role in self.member_roles.get(user_id, [])]
        bot = user_id == self.bot_id or user_id in self.bots
        return {"user": _user(user_id, name, bot=bot), "roles": roles,
                "joined_at": "2026-01-01T00:00:00+00:00", "deaf": False, "mute": False,
                "flags": 0}  # fmt: skip

    def _guild(self) -> dict[str, Any]:
        roles = [
            {"id": str(role_id), "name": name, "position": position,
             "permissions": str(EVERYONE_PERMISSIONS if role_id == self.guild_id else 0),
             "color": 0, "hoist": False, "managed": False, "mentionable": False, "flags": 0}
            for position, (role_id, name) in enumerate(
                [(self.guild_id, "@everyone"), *self.roles.items()]
            )
        ]  # fmt: skip
        members = [self._member(uid) for uid in [*self.players, self.bot_id]]
        channels = [
            {"id": str(self.text_id), "type": 0, "name": "table", "position": 0},
            {"id": str(self.voice_id), "type": 2, "name": "Tavern", "position": 1,
             "bitrate": 64000, "user_limit": 0},
        ]  # fmt: skip
        in_voice = [self._voice_state(uid, self.voice_id) for uid in sorted(self.in_voice)]
        return {"id": str(self.guild_id), "name": "Table", "owner_id": "1", "unavailable": False,
                "large": False, "member_count": len(members) + 1, "roles": roles, "emojis": [],
                "features": [], "channels": channels, "members": members,
                "voice_states": in_voice, "threads": [], "stage_instances": [],
                "guild_scheduled_events": []}  # fmt: skip

    # -- REST --------------------------------------------------------------------------------

    async def _rest(self, request: web.Request) -> web.Response:
        path = request.match_info["tail"]
        if path == "users/@me":
            return _json(_user(self.bot_id, "Glyphoxa", bot=True))
        if path == "oauth2/applications/@me":
            return _json({"id": str(self.app_id), "name": "Glyphoxa", "icon": None,
                          "description": "", "bot_public": False,
                          "bot_require_code_grant": False, "owner": _user(1, "owner"),
                          "verify_key": "00", "flags": 0, "summary": ""})  # fmt: skip
        if path.startswith("channels/") and path.endswith("/messages") and request.method == "POST":
            body = await request.json() if request.content_type == "application/json" else {}
            message: dict[str, Any] = {"id": str(next(self._message_ids)),
                       "channel_id": path.split("/")[1],
                       "author": _user(self.bot_id, "Glyphoxa", bot=True),
                       "content": body.get("content") or "",
                       "timestamp": "2026-01-01T00:00:00+00:00",
                       "edited_timestamp": None, "tts": False, "mention_everyone": False,
                       "mentions": [], "mention_roles": [], "attachments": [], "embeds": [],
                       "pinned": False, "type": 0}  # fmt: skip
            self.messages.append(message)
            self.message_posted.set()
            return _json(message)
        return _json({"message": f"unhandled {path}", "code": 0}, status=404)

    async def _serve(self, app: web.Application) -> int:
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self._runners.append(runner)
        return int(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]

    def _new_voice_server(self) -> LocalVoiceServer:
        number = next(self._servers)
        server = LocalVoiceServer(
            channel_id=self.voice_id, bot_id=self.bot_id, tls=self._tls, ssrc_base=number * 1000
        )
        server.forget_after_s = self.forget_after_s
        return server


def _json(data: Any, status: int = 200) -> web.Response:
    # discord.py parses a body as JSON only for exactly ``application/json`` (no charset).
    return web.Response(
        body=json.dumps(data).encode(), status=status, headers={"Content-Type": "application/json"}
    )
