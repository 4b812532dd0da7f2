"""Gateway payloads for test guilds: a text and a voice channel, a DM role, the DM and one
player in voice, and slash-command interactions from the DM (as Discord sends them)."""

from __future__ import annotations

import itertools
from typing import Any

from bot.bench.doubles.local_discord.world import EVERYONE_PERMISSIONS

from .discord_api import APP_ID, user

DM_USER = 601
_numbers = itertools.count(990_100)


def ids(guild: int) -> dict[str, int]:
    """The guild's channel and role ids (derived from its id, so guilds never share one)."""
    return {"text": guild + 10, "voice": guild + 20, "role": guild + 30}


def member(user_id: int, name: str, roles: list[int]) -> dict[str, Any]:
    return {
        "user": user(user_id, name),
        "roles": [str(r) for r in roles],
        "joined_at": "2026-01-01T00:00:00+00:00",
        "deaf": False,
        "mute": False,
        "flags": 0,
    }


def guild(guild_id: int, player: tuple[int, str]) -> dict[str, Any]:
    """GUILD_CREATE data: the DM (role ``DM``) and ``player`` sit in its voice channel."""
    channel = ids(guild_id)
    roles = [
        {
            "id": str(guild_id),
            "name": "@everyone",
            "permissions": str(EVERYONE_PERMISSIONS),
            "position": 0,
        },
        {"id": str(channel["role"]), "name": "DM", "permissions": "0", "position": 1},
    ]
    for r in roles:
        r.update(color=0, hoist=False, managed=False, mentionable=False, flags=0)
    voice = {"id": str(channel["voice"]), "type": 2, "name": "Tavern", "position": 1,
             "bitrate": 64000, "user_limit": 0}  # fmt: skip
    in_voice = [
        {"user_id": str(u), "channel_id": str(channel["voice"]), "session_id": f"s{u}",
         "deaf": False, "mute": False, "self_deaf": False, "self_mute": False,
         "self_video": False, "suppress": False, "request_to_speak_timestamp": None}
        for u in (DM_USER, player[0])
    ]  # fmt: skip
    text = {"id": str(channel["text"]), "type": 0, "name": "table", "position": 0}
    return {
        "id": str(guild_id), "name": f"Table {guild_id}", "owner_id": "1", "unavailable": False,
        "large": False, "member_count": 3, "roles": roles, "emojis": [], "features": [],
        "channels": [text, voice],
        "members": [member(DM_USER, "dm", [channel["role"]]), member(player[0], player[1], [])],
        "voice_states": in_voice, "threads": [], "stage_instances": [],
        "guild_scheduled_events": [],
    }  # fmt: skip


def interaction(guild_id: int, name: str, options: list[dict[str, Any]]) -> dict[str, Any]:
    """INTERACTION_CREATE data: the DM runs ``/name`` in the guild's text channel."""
    channel = ids(guild_id)
    number = next(_numbers)
    return {
        "id": str(number), "application_id": str(APP_ID), "type": 2, "token": f"tok-{number}",
        "version": 1, "guild_id": str(guild_id), "channel_id": str(channel["text"]),
        "channel": {"id": str(channel["text"]), "type": 0, "name": "table",
                    "guild_id": str(guild_id)},
        "member": {**member(DM_USER, "dm", [channel["role"]]), "permissions": "0"},
        "app_permissions": "0", "attachment_size_limit": 10_485_760, "locale": "en-US",
        "guild_locale": "en-US", "entitlements": [], "authorizing_integration_owners": {},
        "context": 0, "data": {"id": "1", "name": name, "type": 1, "options": options},
    }  # fmt: skip


def sub(command: str, /, **values: str) -> list[dict[str, Any]]:
    """Options of a subcommand (``/session start``, ``/npc mute name:...``)."""
    options = [{"name": k, "type": 3, "value": v} for k, v in values.items()]
    return [{"name": command, "type": 1, "options": options}]
