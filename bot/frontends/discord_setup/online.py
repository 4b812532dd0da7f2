"""Ask Discord's REST API what the offline checks cannot know (``glyphoxa doctor --online``).

With discord.py's own HTTP client and the bot token: Discord accepts the token
(``GET /users/@me``), the application does not demand an OAuth2 code grant and has the
privileged intents the bot asks for (``GET /oauth2/applications/@me``), the bot is a member of
every configured server with the permissions
:data:`~bot.frontends.discord_setup.needs.REQUIRED_PERMISSIONS` names (``GET
/guilds/{id}/members/{bot}`` and ``/roles``), and it can see the transcript channel. The API
address is discord.py's (``discord.http.Route.BASE``). Permissions are the server-wide ones of
the bot's roles; a channel's own overrides are not read.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import aiohttp
import discord
from discord.http import HTTPClient, Route

from bot.frontends.discord_setup.needs import lacking, missing_intents
from bot.frontends.discord_setup.token import TOKEN_FIX, BotToken

__all__ = ["OnlineProblem", "ask_discord"]

log = logging.getLogger(__name__)

_INVITE_FIX = "open the invite link from glyphoxa discord setup and add the bot to that server"
_TEXT_CHANNEL_TYPES = (0, 5)  # text, announcement


class OnlineProblem(Exception):
    """What Discord's answers show is wrong, and the fix."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.fix = fix


async def ask_discord(
    token: BotToken,
    guild_ids: Sequence[int],
    transcript_channel_id: int | None = None,
    *,
    timeout_s: float = 20.0,
) -> str:
    """What Discord confirmed, in one line.

    Raises:
        OnlineProblem: the first thing Discord's answers show is wrong (or Discord unreachable).
    """
    http = HTTPClient(asyncio.get_running_loop())
    try:
        async with asyncio.timeout(timeout_s):
            return await _ask(http, token, guild_ids, transcript_channel_id)
    except TimeoutError:
        raise OnlineProblem(
            f"Discord ({Route.BASE}) did not answer within {timeout_s:g} s",
            "check this machine's network; glyphoxa run needs Discord",
        ) from None
    except (aiohttp.ClientError, OSError) as error:
        raise OnlineProblem(
            f"cannot reach Discord ({Route.BASE}): {error}",
            "check this machine's network; glyphoxa run needs Discord",
        ) from None
    finally:
        await http.close()


async def _ask(
    http: HTTPClient, token: BotToken, guild_ids: Sequence[int], channel_id: int | None
) -> str:
    try:
        me: Any = await http.static_login(token.value)
    except discord.LoginFailure:
        raise OnlineProblem(
            "Discord rejected the token (401 Unauthorized): it was reset since, or it is not "
            "this bot's",
            TOKEN_FIX,
        ) from None
    if not me.get("bot"):
        raise OnlineProblem("the token is a user account's, not a bot's", TOKEN_FIX)
    app: Any = await http.application_info()
    if app.get("bot_require_code_grant"):
        raise OnlineProblem(
            "the application has Requires OAuth2 Code Grant on, so the invite link fails",
            "Developer Portal > your application > Bot: turn Requires OAuth2 Code Grant off",
        )
    missing = missing_intents(int(app.get("flags") or 0))
    if missing:
        raise OnlineProblem(
            f"the bot asks for {', '.join(missing)}, which the application has off "
            "(Discord would close the connection)",
            "Developer Portal > your application > Bot > Privileged Gateway Intents: turn on "
            + ", ".join(missing),
        )
    for guild_id in guild_ids:
        await _check_guild(http, guild_id, str(me["id"]))
    if channel_id is not None:
        await _check_channel(http, channel_id)
    name = me.get("username") or me["id"]
    where = "no discord.guild_ids to look in"
    if guild_ids:
        servers = ", ".join(map(str, guild_ids))
        where = f"in server{'s' if len(guild_ids) > 1 else ''} {servers} with the permissions"
    app_id = str(app.get("id"))
    other = "" if app_id == token.user_id else f" (not the bot user id {token.user_id})"
    return f"Discord accepts the token: bot {name}, application {app_id}{other}; {where}"


async def _check_guild(http: HTTPClient, guild_id: int, bot_id: str) -> None:
    try:
        member: Any = await http.get_member(guild_id, bot_id)
        roles: Any = await http.get_roles(guild_id)
    except (discord.Forbidden, discord.NotFound):
        raise OnlineProblem(
            f"the bot is not in server {guild_id} (discord.guild_ids)", _INVITE_FIX
        ) from None
    mine = {str(r) for r in member.get("roles", [])} | {str(guild_id)}  # @everyone's id
    granted = discord.Permissions.none()
    for role in roles:
        if str(role["id"]) in mine:
            granted.value |= int(role.get("permissions") or 0)
    missing = lacking(granted)
    if missing:
        labels = ", ".join(p.label for p in missing)
        raise OnlineProblem(
            f"in server {guild_id} the bot's roles lack {labels}",
            f"Server Settings > Roles > the bot's role: allow {labels} (or remove the bot and "
            "invite it again with glyphoxa discord setup's link)",
        )


async def _check_channel(http: HTTPClient, channel_id: int) -> None:
    key = "discord.transcript_channel_id"
    try:
        channel: Any = await http.get_channel(channel_id)
    except (discord.Forbidden, discord.NotFound):
        raise OnlineProblem(
            f"the bot cannot see the transcript channel {channel_id} ({key})",
            "copy the id again (right-click the text channel > Copy Channel ID) and let the "
            "bot's role view it",
        ) from None
    if channel.get("type") not in _TEXT_CHANNEL_TYPES:
        raise OnlineProblem(
            f"the transcript channel {channel_id} ({key}) is not a text channel",
            "right-click a text channel > Copy Channel ID",
        )
