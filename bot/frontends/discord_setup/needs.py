"""What the bot needs from Discord: OAuth2 scopes, permissions and gateway intents.

The one source of these facts: ``glyphoxa discord setup`` prints them, ``glyphoxa doctor
--discord`` checks against them and :class:`~bot.frontends.discord_bot.bot.GlyphoxaBot` connects
with :func:`bot_intents`, so the three cannot disagree. The permissions are exactly what the code
does in a server: join a voice channel (View Channels, Connect), play the NPCs' voices (Speak)
and post plain-text notices and the live transcript (Send Messages). Slash-command replies and
the DM's tool-approval messages need no channel permission (interaction responses and direct
messages), and nothing reads message history, adds reactions, embeds links or attaches files
to channel messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

import discord

__all__ = [
    "AUTHORIZE_URL",
    "PRIVILEGED_INTENTS",
    "REQUIRED_PERMISSIONS",
    "SCOPES",
    "VOICE_PERMISSIONS",
    "NeededPermission",
    "Scope",
    "bot_intents",
    "invite_url",
    "lacking",
    "missing_intents",
    "privileged_intents_needed",
    "required_permissions",
]

AUTHORIZE_URL = "https://discord.com/oauth2/authorize"


@dataclass(frozen=True, slots=True)
class Scope:
    name: str
    why: str


@dataclass(frozen=True, slots=True)
class NeededPermission:
    """One permission: discord.py's flag name, Discord's label for it, and why the bot needs it."""

    flag: str
    label: str
    why: str


SCOPES = (
    Scope("bot", "adds the bot user to your server"),
    Scope("applications.commands", "adds its slash commands (/session, /npc, /tier, ...)"),
)

REQUIRED_PERMISSIONS = (
    NeededPermission(
        "view_channel", "View Channels",
        "see the voice channel it joins and the text channels it posts to",
    ),
    NeededPermission(
        "send_messages", "Send Messages",
        "the transcription notice and session alerts where /session start was typed, and the "
        "live transcript (discord.transcript_channel_id)",
    ),
    NeededPermission("connect", "Connect", "join the voice channel of the DM who starts a session"),
    NeededPermission("speak", "Speak", "the NPCs' voices"),
)  # fmt: skip

#: What joining and speaking in a voice channel takes (checked before ``/session start`` joins).
VOICE_PERMISSIONS = tuple(
    p for p in REQUIRED_PERMISSIONS if p.flag in ("view_channel", "connect", "speak")
)

#: discord.py's privileged intent flags -> the switch's name in the Developer Portal.
PRIVILEGED_INTENTS = {
    "presences": "Presence Intent",
    "members": "Server Members Intent",
    "message_content": "Message Content Intent",
}

#: ``flags`` bits of ``GET /oauth2/applications/@me``: a privileged intent is enabled when
#: either its full or its "limited" bit (bots in under 100 servers) is set.
_APPLICATION_INTENT_FLAGS = {
    "presences": (1 << 12) | (1 << 13),
    "members": (1 << 14) | (1 << 15),
    "message_content": (1 << 18) | (1 << 19),
}


def required_permissions() -> discord.Permissions:
    """The permissions of :data:`REQUIRED_PERMISSIONS` as discord.py's flags."""
    return discord.Permissions(**{p.flag: True for p in REQUIRED_PERMISSIONS})


def bot_intents() -> discord.Intents:
    """The gateway intents the bot connects with: Discord's defaults (none privileged) with
    voice states (who is in which voice channel); no member list, no message content."""
    intents = discord.Intents.default()
    intents.voice_states = True
    intents.members = False
    return intents


def privileged_intents_needed(intents: discord.Intents | None = None) -> list[str]:
    """discord.py names of the privileged intents ``intents`` (the bot's) asks for."""
    asked = bot_intents() if intents is None else intents
    return [flag for flag in PRIVILEGED_INTENTS if getattr(asked, flag)]


def missing_intents(application_flags: int, intents: discord.Intents | None = None) -> list[str]:
    """Portal names of the privileged intents the bot asks for that the application (its
    ``flags`` from Discord) has not enabled; connecting would fail with close code 4014."""
    return [
        PRIVILEGED_INTENTS[flag]
        for flag in privileged_intents_needed(intents)
        if not application_flags & _APPLICATION_INTENT_FLAGS[flag]
    ]


def invite_url(application_id: str, guild_id: int | None = None) -> str:
    """The OAuth2 link that adds the bot with :data:`SCOPES` and exactly the needed permissions;
    with ``guild_id`` the server is preselected."""
    query: list[tuple[str, str]] = [
        ("client_id", application_id),
        ("scope", " ".join(scope.name for scope in SCOPES)),
        ("permissions", str(required_permissions().value)),
    ]
    if guild_id is not None:
        query.append(("guild_id", str(guild_id)))
    return f"{AUTHORIZE_URL}?{urlencode(query)}"


def lacking(
    granted: discord.Permissions, needed: Sequence[NeededPermission] = REQUIRED_PERMISSIONS
) -> list[NeededPermission]:
    """The needed permissions ``granted`` does not include (Administrator includes all)."""
    if granted.administrator:
        return []
    return [p for p in needed if not getattr(granted, p.flag)]
