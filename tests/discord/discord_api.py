"""A local HTTP server standing in for discord.com's REST API (only the routes the bot uses).

discord.py's real ``HTTPClient`` talks to it after ``discord.http.Route.BASE`` is pointed here,
so interaction responses, follow-ups and messages go through the library's own code and arrive
as the JSON Discord would receive.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from aiohttp import web

APP_ID = 4000
CHANNEL_FOR_CALLBACKS = 7001
BOT_ID = 4001


def user(user_id: int, name: str, *, bot: bool = False) -> dict[str, Any]:
    return {
        "id": str(user_id),
        "username": name,
        "global_name": name,
        "discriminator": "0",
        "avatar": None,
        "bot": bot,
    }


def message(channel_id: str, content: str, message_id: int = 9000) -> dict[str, Any]:
    return {
        "id": str(message_id),
        "channel_id": channel_id,
        "author": user(BOT_ID, "Glyphoxa", bot=True),
        "content": content,
        "timestamp": "2026-01-01T00:00:00+00:00",
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": [],
        "mention_roles": [],
        "attachments": [],
        "embeds": [],
        "pinned": False,
        "type": 0,
    }


def _json(data: Any, status: int = 200) -> web.Response:
    # discord.py parses a body as JSON only for exactly ``application/json`` (no charset).
    return web.Response(
        body=json.dumps(data).encode(), status=status, headers={"Content-Type": "application/json"}
    )


class FakeDiscordApi:
    def __init__(self, *, bot_id: int = BOT_ID, app_id: int = APP_ID) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self.bot_id, self.app_id = bot_id, app_id
        self.app_flags = 0
        """``flags`` of the application (privileged intent bits)."""
        self.code_grant = False
        self.bot_roles: dict[int, list[int]] = {}
        """Servers the bot is in -> its role ids there (``GET guilds/{id}/members/{bot}``)."""
        self.roles: dict[int, list[dict[str, Any]]] = {}
        """Server id -> its roles (``GET guilds/{id}/roles``), @everyone's id is the server's."""
        self.channels: dict[int, dict[str, Any]] = {}
        """Channels the bot can see (``GET channels/{id}``)."""
        app = web.Application()
        app.router.add_route("*", "/api/v10/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app)
        self.base = ""
        self.reject_token = False
        self._called = asyncio.Event()

    async def start(self) -> None:
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base = f"http://127.0.0.1:{port}/api/v10"

    async def close(self) -> None:
        await self._runner.cleanup()

    async def wait_for_call(
        self, predicate: Callable[[tuple[str, str, Any]], bool], timeout_s: float = 10.0
    ) -> tuple[str, str, Any]:
        """The first recorded call matching ``predicate``, waiting for it if needed."""
        async with asyncio.timeout(timeout_s):
            while True:
                self._called.clear()
                for call in self.calls:
                    if predicate(call):
                        return call
                await self._called.wait()

    def responses(self) -> list[dict[str, Any]]:
        """Interaction callbacks and follow-ups, in order: ``{"type", "content", "flags"}``
        (plus ``_files``, name -> bytes, when files were attached)."""
        out = []
        for method, path, body in self.calls:
            if path.startswith("interactions/") and path.endswith("/callback"):
                data = body.get("data") or {}
                files = {"_files": body["_files"]} if "_files" in body else {}
                out.append({"type": body["type"], **data, **files})
            elif path.startswith(f"webhooks/{APP_ID}/") and method == "POST":
                out.append({"type": "followup", **body})
        return out

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = request.match_info["tail"]
        body: Any = None
        if request.can_read_body:
            if request.content_type == "application/json":
                body = await request.json()
            else:  # multipart: discord.py sends JSON in the payload_json part, files after it
                reader = await request.multipart()
                files: dict[str, bytes] = {}
                async for part in reader:
                    if part.name == "payload_json":  # type: ignore[union-attr]
                        body = await part.json()  # type: ignore[union-attr]
                    elif part.filename:  # type: ignore[union-attr]
                        files[part.filename] = await part.read()  # type: ignore[union-attr]
                if files and isinstance(body, dict):
                    body["_files"] = files
        self.calls.append((request.method, path, body))
        self._called.set()
        content = ((body or {}).get("data") or body or {}) if isinstance(body, dict) else {}
        if len(str(content.get("content") or "")) > 2000:  # as discord.com: the message is lost
            return _json(
                {
                    "message": "Invalid Form Body",
                    "code": 50035,
                    "errors": {"content": {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH"}]}},
                },
                status=400,
            )
        if path == "users/@me" and self.reject_token:
            return _json({"message": "401: Unauthorized", "code": 0}, status=401)
        if path == "users/@me":
            return _json(user(self.bot_id, "Glyphoxa", bot=True))
        if path == "oauth2/applications/@me":
            return _json(
                {
                    "id": str(self.app_id),
                    "name": "Glyphoxa",
                    "icon": None,
                    "description": "",
                    "bot_public": False,
                    "bot_require_code_grant": self.code_grant,
                    "owner": user(1, "owner"),
                    "verify_key": "00",
                    "flags": self.app_flags,
                    "summary": "",
                }
            )
        found = self._server(request.method, path)
        if found is not None:
            return found
        if path == "users/@me/channels":  # open a DM channel with a user
            recipient = (body or {}).get("recipient_id", "0")
            return _json(
                {"id": f"88{recipient}", "type": 1, "recipients": [user(int(recipient), "dm")]}
            )
        if path.startswith(f"applications/{APP_ID}/") and path.endswith("/commands"):
            return _json([])
        if path.endswith("/callback"):
            interaction_id = path.split("/")[1]
            data = (body or {}).get("data") or {}
            resource: dict[str, Any] = {"type": (body or {}).get("type")}
            if "content" in data:
                resource["message"] = message(str(CHANNEL_FOR_CALLBACKS), data["content"])
            return _json(
                {
                    "interaction": {
                        "id": interaction_id,
                        "type": 2,
                        "response_message_ephemeral": bool(data.get("flags", 0) & 64),
                        "response_message_loading": (body or {}).get("type") == 5,
                    },
                    "resource": resource,
                }
            )
        if path.startswith("webhooks/") or path.startswith("channels/"):
            channel = path.split("/")[1]
            return _json(message(channel, (body or {}).get("content") or ""))
        return _json({"message": f"unhandled {path}", "code": 0}, status=404)

    def _server(self, method: str, path: str) -> web.Response | None:
        """What the bot may read of servers and channels, answered as discord.com does."""
        parts = path.split("/")
        if method != "GET" or parts[0] not in ("guilds", "channels") or not parts[1].isdigit():
            return None
        target = int(parts[1])
        missing_access = _json({"message": "Missing Access", "code": 50001}, status=403)
        if parts[0] == "channels" and len(parts) == 2:
            channel = self.channels.get(target)
            if channel is None:
                return _json({"message": "Unknown Channel", "code": 10003}, status=404)
            return _json(channel)
        if parts[0] != "guilds" or target not in self.bot_roles:
            return missing_access if parts[0] == "guilds" else None
        if len(parts) == 4 and parts[2] == "members":
            if parts[3] != str(self.bot_id):
                return _json({"message": "Unknown Member", "code": 10007}, status=404)
            return _json(
                {
                    "user": user(self.bot_id, "Glyphoxa", bot=True),
                    "roles": [str(r) for r in self.bot_roles[target]],
                    "joined_at": "2026-01-01T00:00:00+00:00",
                    "deaf": False,
                    "mute": False,
                    "flags": 0,
                }
            )
        if len(parts) == 3 and parts[2] == "roles":
            return _json(self.roles.get(target, []))
        return None
