"""Slash commands through real ``discord.Interaction`` objects built from gateway payloads.

The bot is the real GlyphoxaBot (real HTTPClient, command tree and cog); only discord.com is
replaced by a local server. Commands that need a table get a real TableSession on the example
campaign (no voice connection: the cog's table is created without joining a channel).
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import discord
import discord.http
import pytest

from bot.frontends.discord_bot import GlyphoxaBot, TableParts, TableRuntime
from bot.settings.config import GlyphoxaConfig
from bot.table.session.builder import build_session

from .discord_api import APP_ID, BOT_ID, FakeDiscordApi, user

GUILD = 7000
CHANNEL = 7001
DM_ROLE = 7002
DM_USER = 501
PLAYER = 502
OWNER = 1  # the guild's owner_id; has no DM role
MANAGER = 503  # has the Moderators role, which grants Manage Server
MODERATORS = 7003
MANAGE_GUILD = 1 << 5
VOICE = 7004
REFUSAL = (
    'Sorry, only the Dungeon Master can do that: you need the role "Dungeon Master" (set by '
    "discord.dm_role in glyphoxa.yaml) or Manage Server."
)
EXAMPLE = Path(__file__).resolve().parents[2] / "campaigns" / "example"
_ids = itertools.count(80_000)
WELL_SHAPED = "MTIzNDU2Nzg5MDEyMzQ1Njc4.GhXyZa." + "s" * 38  # user id 123456789012345678


def guild_payload() -> dict[str, Any]:
    role = {"id": str(GUILD), "name": "@everyone", "permissions": "0", "position": 0}
    dm = {"id": str(DM_ROLE), "name": "Dungeon Master", "permissions": "0", "position": 1}
    mods = {"id": str(MODERATORS), "name": "Moderators", "permissions": str(MANAGE_GUILD),
            "position": 2}  # fmt: skip
    for r in (role, dm, mods):
        r.update(color=0, hoist=False, managed=False, mentionable=False, flags=0)
    return {
        "id": str(GUILD),
        "name": "Table",
        "owner_id": str(OWNER),
        "roles": [role, dm, mods],
        "emojis": [],
        "features": [],
        "channels": [
            {"id": str(CHANNEL), "type": 0, "name": "table-talk", "position": 0},
            {
                "id": str(VOICE),
                "type": 2,
                "name": "Tavern",
                "position": 1,
                "bitrate": 64000,
                "user_limit": 0,
            },
        ],
        "members": [
            _member(OWNER, ()),
            _member(MANAGER, (MODERATORS,)),
            _member(DM_USER, (DM_ROLE,)),
            _member(PLAYER, ()),
            _member(BOT_ID, ()),  # the bot itself: guild.me
        ],
        "voice_states": [],
        "member_count": 2,
    }


def _member(user_id: int, roles: tuple[int, ...]) -> dict[str, Any]:
    return {"user": user(user_id, f"user{user_id}"), "roles": [str(r) for r in roles],
            "joined_at": "2026-01-01T00:00:00+00:00", "deaf": False, "mute": False,
            "flags": 0}  # fmt: skip


def join_voice(harness: Harness, who: int, roles: tuple[int, ...]) -> None:
    """What the gateway sends when a member joins the voice channel (how members are known
    without the members intent)."""
    harness.bot._connection.parse_voice_state_update(
        {"guild_id": str(GUILD), "channel_id": str(VOICE), "user_id": str(who),
         "session_id": f"s{who}", "deaf": False, "mute": False, "self_deaf": False,
         "self_mute": False, "self_video": False, "suppress": False,
         "request_to_speak_timestamp": None, "member": _member(who, roles)}
    )  # fmt: skip


def interaction(
    name: str,
    options: list[dict[str, Any]] | None = None,
    *,
    member: int = DM_USER,
    roles: tuple[int, ...] = (),
    permissions: int = 0,
    kind: int = 2,
) -> dict[str, Any]:
    return {
        "id": str(next(_ids)),
        "application_id": str(APP_ID),
        "type": kind,
        "token": f"token-{next(_ids)}",
        "version": 1,
        "guild_id": str(GUILD),
        "channel_id": str(CHANNEL),
        "channel": {"id": str(CHANNEL), "type": 0, "name": "table-talk", "guild_id": str(GUILD)},
        "member": {
            "user": user(member, "dm" if member == DM_USER else "player"),
            "roles": [str(r) for r in roles],
            "joined_at": "2026-01-01T00:00:00+00:00",
            "deaf": False,
            "mute": False,
            "permissions": str(permissions),
            "flags": 0,
        },
        "app_permissions": "0",
        "attachment_size_limit": 10_485_760,
        "locale": "en-US",
        "guild_locale": "en-US",
        "entitlements": [],
        "authorizing_integration_owners": {},
        "context": 0,
        "data": {"id": "1", "name": name, "type": 1, "options": options or []},
    }


def sub(name: str, *options: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"name": name, "type": 1, "options": list(options)}]


def opt(name: str, value: Any, kind: int = 3, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": kind, "value": value, **extra}


class Harness:
    def __init__(self, bot: GlyphoxaBot, api: FakeDiscordApi) -> None:
        self.bot = bot
        self.api = api

    async def run(self, payload: dict[str, Any]) -> dict[str, Any]:
        before = len(self.api.responses())
        await self.bot.tree._call(discord.Interaction(data=payload, state=self.bot._connection))
        replies = self.api.responses()[before:]
        assert replies, "the command sent no response"
        return replies[-1]

    @property
    def cog(self) -> Any:
        return self.bot.get_cog("TableCog")


@pytest.fixture
async def harness(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Harness]:
    api = FakeDiscordApi()
    await api.start()
    # The REST edge only: discord.py's own HTTPClient now talks to the local server.
    monkeypatch.setattr(discord.http.Route, "BASE", api.base)
    config = GlyphoxaConfig.model_validate(
        {
            "discord": {"guild_ids": [GUILD], "dm_role": "Dungeon Master"},
            "campaign": {"path": str(EXAMPLE)},
            "memory": {"url": "sqlite+aiosqlite:///:memory:"},
        }
    )

    async def no_voice_factory(campaign: str | None) -> TableParts:
        raise AssertionError("not used: these tests do not join voice")

    bot = GlyphoxaBot(config, no_voice_factory)
    await bot.login("test-token")
    bot._connection._add_guild_from_data(guild_payload())  # what GUILD_CREATE would do
    yield Harness(bot, api)
    await bot.close()
    await api.close()


@pytest.fixture(scope="session")
def table_session(whisper_stt: Any) -> Any:
    """A real TableSession on the example campaign (no voice: frames are never pushed)."""
    from bot.audio.speech import EspeakTts
    from npcs.campaign import load_campaign

    return build_session(
        config=GlyphoxaConfig(),
        campaign=load_campaign(EXAMPLE),
        stt=whisper_stt,
        tts=EspeakTts(),
        engines=lambda npc: None,
    )


async def test_setup_synced_commands_to_the_guild(harness: Harness) -> None:
    puts = [c for c in harness.api.calls if c[0] == "PUT"]
    assert puts and puts[0][1] == f"applications/{APP_ID}/guilds/{GUILD}/commands"
    names = {c["name"] for c in puts[0][2]}
    assert {"session", "npc", "tier", "tools", "recap", "roll"} <= names


async def test_roll_is_for_everyone(harness: Harness) -> None:
    reply = await harness.run(interaction("roll", [opt("expr", "2d6+3")], member=PLAYER))
    assert reply["type"] == 4  # CHANNEL_MESSAGE_WITH_SOURCE
    assert "rolls `2d6+3`" in reply["content"]
    assert not reply.get("flags")  # public


async def test_bad_dice_expression_is_a_private_error(harness: Harness) -> None:
    reply = await harness.run(interaction("roll", [opt("expr", "2d")], member=PLAYER))
    assert reply["flags"] & 64  # EPHEMERAL
    assert "2d" in reply["content"]


async def test_player_is_refused_politely_and_nothing_changes(
    harness: Harness, table_session: Any
) -> None:
    harness.cog.tables[GUILD] = TableRuntime(TableParts(table_session), None)
    try:
        reply = await harness.run(
            interaction("tier", [opt("level", "deep")], member=PLAYER, permissions=0)
        )
        assert reply["flags"] & 64
        assert reply["content"] == REFUSAL
        assert table_session.tiers.override_for("Bartok", 0.0) is None
        reply = await harness.run(
            interaction("npc", sub("mute", opt("name", "Bartok")), member=PLAYER)
        )
        assert reply["content"] == REFUSAL and reply["flags"] & 64
        assert not table_session.controls.is_muted("Bartok")
    finally:
        harness.cog.tables.clear()


async def test_the_owner_and_manage_server_act_as_dm_without_the_role(
    harness: Harness, table_session: Any
) -> None:
    harness.cog.tables[GUILD] = TableRuntime(TableParts(table_session), None)
    try:
        # Discord resolves the owner's permissions to all of them; the owner id alone counts too.
        reply = await harness.run(
            interaction("npc", sub("mute", opt("name", "Bartok")), member=OWNER)
        )
        assert reply["content"] == "Muted Bartok." and table_session.controls.is_muted("Bartok")
        reply = await harness.run(
            interaction("npc", sub("unmute", opt("name", "Bartok")), member=MANAGER,
                        roles=(MODERATORS,), permissions=MANAGE_GUILD)
        )  # fmt: skip
        assert reply["content"] == "Unmuted Bartok." and not table_session.controls.is_muted(
            "Bartok"
        )
        payload = interaction(
            "npc", sub("mute", opt("name", "ba", focused=True)), member=OWNER, kind=4
        )
        assert [c["name"] for c in (await harness.run(payload))["choices"]] == ["Bartok"]
    finally:
        harness.cog.tables.clear()


async def test_dm_admins_false_leaves_only_the_role(harness: Harness) -> None:
    discord_config = harness.bot.config.discord.model_copy(update={"dm_admins": False})
    harness.bot.config = harness.bot.config.model_copy(update={"discord": discord_config})
    refusal = (
        'Sorry, only the Dungeon Master can do that: you need the role "Dungeon Master" (set by '
        "discord.dm_role in glyphoxa.yaml; discord.dm_admins is false, so Manage Server does "
        "not count)."
    )
    for member, permissions in ((OWNER, 0), (MANAGER, MANAGE_GUILD)):
        reply = await harness.run(
            interaction("npc", sub("list"), member=member, permissions=permissions)
        )
        assert reply["content"] == refusal and reply["flags"] & 64
    reply = await harness.run(interaction("npc", sub("list"), roles=(DM_ROLE,)))
    assert "**Bartok**" in reply["content"]


async def test_a_role_given_by_id_is_named_in_the_refusal(harness: Harness) -> None:
    discord_config = harness.bot.config.discord.model_copy(update={"dm_role": str(DM_ROLE)})
    harness.bot.config = harness.bot.config.model_copy(update={"discord": discord_config})
    reply = await harness.run(interaction("npc", sub("list"), member=PLAYER))
    assert reply["content"] == REFUSAL
    reply = await harness.run(interaction("npc", sub("list"), roles=(DM_ROLE,)))
    assert "**Bartok**" in reply["content"]


async def test_dm_voice_commands_follow_the_same_rule(harness: Harness) -> None:
    from bot.frontends.discord_bot.permissions import DmRule, dm_voice_resolver

    guild = harness.bot.get_guild(GUILD)
    assert guild is not None
    for who, roles in ((OWNER, ()), (MANAGER, (MODERATORS,)), (DM_USER, (DM_ROLE,)), (PLAYER, ())):
        join_voice(harness, who, roles)  # the voice lanes' speakers
    by_default = dm_voice_resolver(guild, DmRule("Dungeon Master", admins=True))
    heard = {who: by_default(str(who)) for who in (OWNER, MANAGER, DM_USER, PLAYER, 999)}
    assert heard == {OWNER: True, MANAGER: True, DM_USER: True, PLAYER: False, 999: False}
    role_only = dm_voice_resolver(guild, DmRule("dungeon master", admins=False))
    heard = {who: role_only(str(who)) for who in (OWNER, MANAGER, DM_USER, PLAYER)}
    assert heard == {OWNER: False, MANAGER: False, DM_USER: True, PLAYER: False}
    assert not by_default("Dana")  # a display name is never a speaker id


async def test_dm_steers_the_table(harness: Harness, table_session: Any) -> None:
    harness.cog.tables[GUILD] = TableRuntime(TableParts(table_session), None)
    dm = {"roles": (DM_ROLE,)}
    try:
        reply = await harness.run(
            interaction("tier", [opt("level", "deep"), opt("npc", "Bartok")], **dm)
        )
        assert reply["content"] == "Tier deep for Bartok."
        assert table_session.tiers.override_for("Bartok", 0.0) is not None
        reply = await harness.run(interaction("npc", sub("mute", opt("name", "Bartok")), **dm))
        assert table_session.controls.is_muted("Bartok") and reply["flags"] & 64
        await harness.run(interaction("npc", sub("unmute", opt("name", "all")), **dm))
        assert not table_session.controls.is_muted("Bartok")
        reply = await harness.run(interaction("npc", sub("mute", opt("name", "Nobody")), **dm))
        assert "no NPC named 'Nobody'" in reply["content"]
        reply = await harness.run(interaction("session", sub("status"), **dm))
        assert "Bartok" in reply["content"] and "Greymantle" in reply["content"]
        reply = await harness.run(interaction("npc", sub("list"), **dm))
        assert "**Bartok**" in reply["content"]
    finally:
        harness.cog.tables.clear()


async def test_commands_without_a_session_explain_how_to_start(harness: Harness) -> None:
    reply = await harness.run(interaction("session", sub("status"), roles=(DM_ROLE,)))
    assert reply["flags"] & 64 and "/session start" in reply["content"]


async def test_session_start_requires_a_voice_channel(harness: Harness) -> None:
    reply = await harness.run(interaction("session", sub("start"), roles=(DM_ROLE,)))
    assert "Join a voice channel first" in reply["content"]
    assert not harness.cog.tables


async def test_session_start_names_the_permissions_the_bot_lacks_there(harness: Harness) -> None:
    join_voice(harness, DM_USER, (DM_ROLE,))
    reply = await harness.run(interaction("session", sub("start"), roles=(DM_ROLE,)))
    assert reply["content"] == (
        f"I can't join <#{VOICE}>: I need View Channels, Connect and Speak there. Allow them for "
        "my role (Edit Channel > Permissions), or invite me again with the link from "
        "`glyphoxa discord setup`."
    )
    assert reply["flags"] & 64 and not harness.cog.tables
    # The server lets everyone in, but not speak (what the gateway sends on that change).
    muted = discord.Permissions(view_channel=True, connect=True, send_messages=True)
    everyone = {**guild_payload()["roles"][0], "permissions": str(muted.value)}
    harness.bot._connection.parse_guild_role_update({"guild_id": str(GUILD), "role": everyone})
    reply = await harness.run(interaction("session", sub("start"), roles=(DM_ROLE,)))
    assert reply["content"].startswith(f"I can't join <#{VOICE}>: I need Speak there. Allow")
    assert not harness.cog.tables


async def test_npc_name_autocomplete(harness: Harness) -> None:
    payload = interaction(
        "npc", sub("mute", opt("name", "ba", focused=True)), roles=(DM_ROLE,), kind=4
    )
    reply = await harness.run(payload)
    assert reply["type"] == 8  # APPLICATION_COMMAND_AUTOCOMPLETE_RESULT
    assert [c["name"] for c in reply["choices"]] == ["Bartok"]


async def test_recap_reads_campaign_memory(harness: Harness) -> None:
    reply = await harness.run(interaction("recap", [opt("sessions", 1, kind=4)], roles=(DM_ROLE,)))
    assert reply["type"] == "followup"
    assert reply["flags"] & 64


async def test_live_transcript_is_posted_to_the_channel(
    harness: Harness, table_session: Any
) -> None:
    from bot.table.session.events import DmAction, PlayerSpoke

    channel = harness.bot.get_channel(CHANNEL)
    runtime = TableRuntime(TableParts(table_session), channel)  # type: ignore[arg-type]
    runtime.start_transcript()
    try:
        for listener in table_session.listeners:
            listener(PlayerSpoke("Aria", "Bartok, what's on tap?", None, None, 0.0))
        _, _, body = await harness.api.wait_for_call(
            lambda c: c[1] == f"channels/{CHANNEL}/messages"
        )
        assert body["content"] == "**Aria:** Bartok, what's on tap?"
        for listener in table_session.listeners:
            listener(DmAction("tier", "deep for Greymantle for 300s", 0.0, "Dana: Grey, no rush"))
        _, _, body = await harness.api.wait_for_call(
            lambda c: c[1] == f"channels/{CHANNEL}/messages" and "by voice" in c[2]["content"]
        )
        heard = "(heard \u201cDana: Grey, no rush\u201d)"
        assert body["content"] == f"*DM by voice: tier deep for Greymantle for 300s {heard}*"
    finally:
        table_session.listeners.remove(runtime._on_event)
        if runtime._poster is not None:
            runtime._poster.cancel()


async def test_glyphoxa_run_reports_a_malformed_or_rejected_token_cleanly(
    harness: Harness, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bot.cli import main

    config = tmp_path / "glyphoxa.yaml"
    memory = f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}"  # glyphoxa run opens it first
    config.write_text(f"discord:\n  token: Bot {WELL_SHAPED}\nmemory:\n  url: {memory}\n")
    before = len(harness.api.calls)
    code = await asyncio.to_thread(main, ["--config", str(config), "run"])
    assert code == 2
    assert capsys.readouterr().err == (
        'error: discord.token: the token starts with "Bot "; fix: set the bare token without the '
        "prefix; Glyphoxa adds it when talking to Discord (glyphoxa discord setup shows every "
        "step)\n"
    )
    assert len(harness.api.calls) == before  # refused before Discord was asked
    config.write_text(f"discord:\n  token: {WELL_SHAPED}\nmemory:\n  url: {memory}\n")
    harness.api.reject_token = True
    code = await asyncio.to_thread(main, ["--config", str(config), "run"])
    assert code == 2
    assert "Discord rejected the bot token (discord.token / $DISCORD_TOKEN): it was reset" in (
        capsys.readouterr().err
    )


async def test_without_a_dm_role_manage_server_decides(harness: Harness) -> None:
    discord_config = harness.bot.config.discord.model_copy(update={"dm_role": None})
    harness.bot.config = harness.bot.config.model_copy(update={"discord": discord_config})
    reply = await harness.run(interaction("npc", sub("list"), member=PLAYER, permissions=0))
    assert reply["content"] == (
        "Sorry, only the Dungeon Master can do that: you need Manage Server (or a DM role, set "
        "by discord.dm_role in glyphoxa.yaml)."
    )
    reply = await harness.run(
        interaction("npc", sub("list"), member=PLAYER, permissions=MANAGE_GUILD)
    )
    assert "**Bartok**" in reply["content"]


async def test_console_gives_the_dm_a_private_one_time_link(
    harness: Harness, tmp_path: Path
) -> None:
    from bot.frontends.console import ConsoleHub, PrepContext

    reply = await harness.run(interaction("console", [], roles=(DM_ROLE,)))
    assert reply["flags"] & 64 and "The console is not running" in reply["content"]
    prep = PrepContext(harness.bot.config, None, tmp_path, "sqlite+aiosqlite://")
    hub = ConsoleHub(prep, base_url="http://127.0.0.1:8470")
    harness.bot.console = hub
    try:
        reply = await harness.run(interaction("console", [], roles=(DM_ROLE,)))
        assert reply["flags"] & 64  # ephemeral
        found = re.search(r"<http://127\.0\.0\.1:8470/login/([^>]+)>", reply["content"])
        assert found is not None  # <...>: Discord does not fetch it for a preview
        assert hub.links.redeem(found.group(1))
        assert not hub.links.redeem(found.group(1))
        reply = await harness.run(interaction("console", [], member=PLAYER))
        assert reply["content"] == REFUSAL
    finally:
        harness.bot.console = None


async def test_direct_steers_an_npc_privately_for_the_dm_only(
    harness: Harness, table_session: Any
) -> None:
    """``/direct NPC text [turns]``: an ephemeral answer, the direction in the session for its
    turns (or until cleared), nothing in the channel's live transcript; ``clear`` drops it; a
    player is refused and nothing changes."""
    channel = harness.bot.get_channel(CHANNEL)
    runtime = TableRuntime(TableParts(table_session), channel)  # type: ignore[arg-type]
    harness.cog.tables[GUILD] = runtime
    runtime.start_transcript()
    secret = "You saw the thief at the mill; deny it."
    dm = {"roles": (DM_ROLE,)}
    try:
        reply = await harness.run(
            interaction("direct", [opt("npc", "bartok"), opt("text", secret),
                                   opt("turns", 2, kind=4)], **dm)
        )  # fmt: skip
        assert reply["flags"] & 64
        assert reply["content"].startswith("Bartok follows your direction privately, 2 turns.")
        assert table_session.seats.seat("Bartok").direction.text == secret
        assert table_session.status().npcs["Bartok"].direction == "2 turns"
        reply = await harness.run(interaction("session", sub("status"), **dm))
        (bartok,) = [line for line in reply["content"].splitlines() if "- Bartok:" in line]
        assert bartok.endswith("directed, 2 turns left")
        assert "thief" not in reply["content"]
        assert [table_session.controls.take_direction("Bartok") for _ in range(3)] == [
            secret,
            secret,
            None,
        ]

        gruff = [opt("npc", "Greymantle"), opt("text", "Be gruff.")]
        reply = await harness.run(interaction("direct", gruff, **dm))
        assert "until cleared" in reply["content"]
        reply = await harness.run(
            interaction("direct", [opt("npc", "Greymantle"), opt("text", "Clear")], **dm)
        )
        assert reply["content"] == "Greymantle's direction cleared." and reply["flags"] & 64
        assert not table_session.seats.has_direction("Greymantle")

        reply = await harness.run(
            interaction("direct", [opt("npc", "Bartok"), opt("text", "Lie.")], member=PLAYER)
        )
        assert reply["content"] == REFUSAL and reply["flags"] & 64
        assert not table_session.seats.has_direction("Bartok")
        reply = await harness.run(
            interaction("direct", [opt("npc", "Nobody"), opt("text", "x")], **dm)
        )
        assert "no NPC named 'Nobody'" in reply["content"]
        payload = interaction("direct", [opt("npc", "gr", focused=True)], kind=4, **dm)
        assert [c["name"] for c in (await harness.run(payload))["choices"]] == ["Greymantle"]

        await asyncio.sleep(0.3)  # the transcript poster had its chance to post
        posted = [c[2]["content"] for c in harness.api.calls
                  if c[1] == f"channels/{CHANNEL}/messages"]  # fmt: skip
        assert not any("thief" in text or "gruff" in text.lower() for text in posted)
    finally:
        harness.cog.tables.clear()
        table_session.listeners.remove(runtime._on_event)
        if runtime._poster is not None:
            runtime._poster.cancel()


async def test_npc_mood_sets_what_every_answer_of_the_npc_is_told(
    harness: Harness, table_session: Any
) -> None:
    """``/npc mood NAME MOOD``: the DM's private answer, the mood on the NPC's seat and in
    ``/session status``, in the prompt of its next answers; ``clear`` drops it; ``all`` sets
    every NPC's; a player is refused and nothing changes."""
    harness.cog.tables[GUILD] = TableRuntime(TableParts(table_session), None)
    dm = {"roles": (DM_ROLE,)}
    try:
        mood = [opt("name", "bart"), opt("mood", "  grumpy,  short   with strangers. ")]
        reply = await harness.run(interaction("npc", sub("mood", *mood), **dm))
        assert reply["flags"] & 64
        assert reply["content"] == (
            "Bartok: grumpy, short with strangers, until `/npc mood bart clear`."
        )
        assert table_session.seats.seat("Bartok").mood == "grumpy, short with strangers"
        assert "Your mood right now: grumpy, short with strangers" in (
            table_session.seats.brief("Bartok", take=False)
        )
        reply = await harness.run(interaction("session", sub("status"), **dm))
        (bartok,) = [line for line in reply["content"].splitlines() if "- Bartok:" in line]
        assert "mood: grumpy, short with strangers" in bartok

        reply = await harness.run(
            interaction("npc", sub("mood", opt("name", "Bartok"), opt("mood", "sly")),
                        member=PLAYER)
        )  # fmt: skip
        assert reply["content"] == REFUSAL and reply["flags"] & 64
        assert table_session.seats.seat("Bartok").mood == "grumpy, short with strangers"

        everyone = [opt("name", "all"), opt("mood", "festive")]
        reply = await harness.run(interaction("npc", sub("mood", *everyone), **dm))
        assert reply["content"].startswith("Every NPC: festive")
        assert {seat.mood for seat in table_session.seats} == {"festive"}
        clear = [opt("name", "Bartok"), opt("mood", "clear")]
        reply = await harness.run(interaction("npc", sub("mood", *clear), **dm))
        assert reply["content"] == "Bartok: back to their usual self."
        assert table_session.seats.seat("Bartok").mood is None
        assert table_session.seats.brief("Bartok", take=False) is None
        reply = await harness.run(
            interaction("npc", sub("mood", opt("name", "Nobody"), opt("mood", "x")), **dm)
        )
        assert "no NPC named 'Nobody'" in reply["content"]
    finally:
        table_session.controls.set_mood(None, "")
        harness.cog.tables.clear()


async def test_session_cost_and_the_spend_notices(
    harness: Harness, whisper_stt: Any, tmp_path: Path
) -> None:
    """A real table (``open_table``) whose LLM is the local OpenAI-compatible server priced as
    a cloud model: the soft limit's notice reaches the channel once, ``/session cost`` shows
    the night's cost per provider and per NPC."""
    from bot.audio.speech import EspeakTts
    from bot.bench.doubles.instant_llm import InstantLlm
    from bot.table.assembly.table import open_table
    from campaigns.basics import Tier
    from npcs.engines import TurnRequest

    async with InstantLlm() as llm:
        config = GlyphoxaConfig.model_validate(
            {
                "providers": {"llm": {"name": "openai", "base_url": llm.base_url,
                                      "model": "scripted", "api_key": "scripted"}},
                "campaign": {"path": str(EXAMPLE), "hot_reload": False},
                "tools": {"sandbox_dir": str(tmp_path / "files"),
                          "calibration_path": str(tmp_path / "calibration.json")},
                "pricing": {"llm": {"scripted": {"input_per_million": 1000,
                                                 "output_per_million": 2000}}},
                "session": {"spend": {"soft": 0.1}},
            }
        )  # fmt: skip
        memory = f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}"
        table = open_table(
            config, memory_url=memory, stt=whisper_stt, tts=EspeakTts(), serve_metrics=False
        )
        async with table as session:
            channel = harness.bot.get_channel(CHANNEL)
            runtime = TableRuntime(TableParts(session), channel)  # type: ignore[arg-type]
            runtime.start_transcript()
            harness.cog.tables[GUILD] = runtime
            try:
                npc = session.campaign.npcs["Bartok"]
                engine = session.engine_for(npc)
                assert engine is not None
                for text in ("what's on tap?", "and a room?"):
                    async for _ in engine.respond(TurnRequest(npc, "Arin", text, Tier.FAST)):
                        pass
                _, _, body = await harness.api.wait_for_call(
                    lambda c: c[1] == f"channels/{CHANNEL}/messages" and "soft" in c[2]["content"]
                )
                assert "soft limit (session.spend.soft)" in body["content"]
                reply = await harness.run(interaction("session", sub("cost"), roles=(DM_ROLE,)))
                total = session.spend.total_usd
                assert reply["flags"] & 64  # only the DM sees it
                content = reply["content"]
                assert content.startswith(f"Cost so far: ${total:.4f} (soft limit $0.10)")
                assert "- LLM scripted: $" in content and "- Bartok: $" in content
                refused = await harness.run(interaction("session", sub("cost"), member=PLAYER))
                assert refused["content"] == REFUSAL
            finally:
                harness.cog.tables.clear()
                session.listeners.remove(runtime._on_event)
                if runtime._poster is not None:
                    runtime._poster.cancel()
            notices = [
                c for c in harness.api.calls
                if c[1] == f"channels/{CHANNEL}/messages" and "soft limit" in c[2]["content"]
            ]  # fmt: skip
            assert len(notices) == 1  # said once, though both turns were past the limit
