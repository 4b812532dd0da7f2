"""``glyphoxa discord setup`` and ``glyphoxa doctor --discord`` from one set of facts.

The invite link's permission integer is decoded back with discord.py and compared with what the
bot does in a server; each way a token is pasted wrong has its exact message, and the doctor's
line carries the same words as the setup report. ``--online`` asks a local server speaking
Discord's REST protocol (``discord_api.py``) through discord.py's own HTTP client.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import discord
import discord.http
import pytest
import yaml

from bot.cli import main
from bot.frontends.discord_setup.needs import bot_intents, missing_intents
from bot.frontends.discord_setup.token import TokenProblem, parse_bot_token
from bot.settings.config import GlyphoxaConfig

from .discord_api import FakeDiscordApi

BOT = 123456789012345678
SERVER = 223456789012345678
TRANSCRIPT = 323456789012345678
MISSING = "DISCORD_TOKEN is not set"
TOKEN_FIX = "Developer Portal > your application > Bot > Reset Token, then export DISCORD_TOKEN=..."


def token_for(user_id: int | str) -> str:
    """A synthetic token shaped as Discord's: base64url(user id).timestamp.signature."""
    head = base64.urlsafe_b64encode(str(user_id).encode()).decode().rstrip("=")
    return f"{head}.GhXyZa.{'s' * 38}"


GOOD = token_for(BOT)


def write_config(tmp_path: Path, **discord_settings: Any) -> Path:
    path = tmp_path / "glyphoxa.yaml"
    settings = {"token": "${DISCORD_TOKEN:-}", **discord_settings}
    path.write_text(yaml.safe_dump({"discord": settings}))
    return path


def setup_report(capsys: pytest.CaptureFixture[str], config: Path, *args: str) -> tuple[int, Any]:
    code = main(["--config", str(config), "discord", "setup", "--json", *args])
    return code, json.loads(capsys.readouterr().out)


def doctor_lines(capsys: pytest.CaptureFixture[str], config: Path, *args: str) -> dict[str, str]:
    main(["--config", str(config), "doctor", "--only", "discord-token", *args])
    lines = capsys.readouterr().out.strip().splitlines()
    return {line.split()[1]: line for line in lines[:-1]}


# -- the invite link ---------------------------------------------------------------------------


def test_the_invite_link_asks_for_exactly_what_the_bot_uses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DISCORD_TOKEN", GOOD)
    code, report = setup_report(capsys, write_config(tmp_path))
    assert code == 0 and report["ok"] is True
    url = urlsplit(report["invite_urls"]["any"])
    assert (url.scheme, url.netloc, url.path) == ("https", "discord.com", "/oauth2/authorize")
    query = parse_qs(url.query)
    assert query["client_id"] == [str(BOT)]
    assert query["scope"] == ["bot applications.commands"]
    assert "scope=bot+applications.commands" in url.query
    assert "guild_id" not in query
    granted = discord.Permissions(int(query["permissions"][0]))
    # discord.py names View Channels "read_messages" when it iterates flags.
    assert {name for name, on in granted if on} == {
        "read_messages",
        "send_messages",
        "connect",
        "speak",
    }
    assert granted.value == 3148800 == report["permissions"]["value"]
    names = [(p["name"], p["flag"]) for p in report["permissions"]["needed"]]
    assert names == [
        ("View Channels", "view_channel"),
        ("Send Messages", "send_messages"),
        ("Connect", "connect"),
        ("Speak", "speak"),
    ]
    assert all(p["why"] for p in report["permissions"]["needed"])


def test_a_configured_server_is_preselected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DISCORD_TOKEN", GOOD)
    code, report = setup_report(capsys, write_config(tmp_path, guild_ids=[SERVER]))
    assert code == 0
    query = parse_qs(urlsplit(report["invite_urls"][str(SERVER)]).query)
    assert query["guild_id"] == [str(SERVER)]
    assert query["permissions"] == ["3148800"]
    assert report["guild_note"] == f"slash commands sync at once to server {SERVER}"


def test_text_report_names_each_permission_and_the_next_steps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DISCORD_TOKEN", GOOD)
    code = main(["--config", str(write_config(tmp_path)), "discord", "setup"])
    text = capsys.readouterr().out
    flat = " ".join(text.split())  # the report wraps at 100 columns
    assert code == 0
    assert GOOD not in text and GOOD.split(".")[2] not in text
    assert f"OK: well-formed (70 characters), bot user and application id {BOT}." in text
    assert "       Connect        join the voice channel of the DM who starts a session" in text
    assert "       Speak          the NPCs' voices" in text
    assert "leave Presence Intent, Server Members Intent and Message Content Intent off" in flat
    assert "right-click your server's icon > Copy Server ID" in flat
    # No dm_role in this config: the owner and Manage Server decide.
    owner = "Now: the server owner and members with Manage Server (discord.dm_admins: true; no"
    assert owner in flat
    for step in ("glyphoxa doctor --discord", "glyphoxa run", "/session start"):
        assert f"\n   {step} " in text
    steps = text.splitlines()[1:]  # after the title, which holds the config path
    assert all(len(line) <= 100 or "https://" in line for line in steps)


def test_application_id_without_a_token(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DISCORD_TOKEN", raising=False)
    config = write_config(tmp_path)
    code, report = setup_report(capsys, config, "--application-id", str(BOT))
    assert code == 1  # the link is there, but glyphoxa run still needs the token
    assert report["application_id_source"] == "--application-id"
    assert parse_qs(urlsplit(report["invite_urls"]["any"]).query)["client_id"] == [str(BOT)]
    assert report["token"]["problem"] == MISSING
    code = main(["--config", str(config), "discord", "setup", "--application-id", "12ab"])
    assert code == 2
    assert capsys.readouterr().err == (
        "error: discord setup --application-id: not a Discord id (17 to 20 digits); copy it "
        "from Developer Portal > your application > General Information > Application ID\n"
    )


def test_an_application_id_other_than_the_tokens_is_used_and_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DISCORD_TOKEN", GOOD)
    code, report = setup_report(capsys, write_config(tmp_path), "--application-id", str(SERVER))
    assert code == 0
    assert parse_qs(urlsplit(report["invite_urls"]["any"]).query)["client_id"] == [str(SERVER)]
    assert report["notes"] == [
        f"--application-id {SERVER} differs from the token's bot user {BOT}: an application from "
        "before 2016 has its own id; otherwise the token belongs to another application"
    ]


def test_the_bot_asks_for_no_privileged_intent() -> None:
    from bot.frontends.discord_bot import GlyphoxaBot

    async def factory(campaign: str | None) -> Any:
        raise AssertionError("not used")

    bot = GlyphoxaBot(GlyphoxaConfig(), factory)
    assert bot.intents == bot_intents()
    assert bot.intents.voice_states and bot.intents.guilds
    assert not (bot.intents.members or bot.intents.presences or bot.intents.message_content)
    assert missing_intents(0) == []
    # The rule for a bot that would ask for one: off in the portal is named, the "limited"
    # bit (bots in under 100 servers) counts as on.
    members = discord.Intents.none()
    members.members = True
    assert missing_intents(0, members) == ["Server Members Intent"]
    assert missing_intents(1 << 15, members) == []


# -- the token's shape -------------------------------------------------------------------------


def test_the_application_id_comes_from_the_tokens_first_part() -> None:
    token = parse_bot_token(f"  {GOOD}\n")  # surrounding whitespace: discord.py strips it too
    assert token.user_id == str(BOT) and token.value == GOOD and token.length == 70
    assert GOOD not in repr(token)


@pytest.mark.parametrize(
    ("raw", "message", "fix"),
    [
        ("Bot " + GOOD, 'the token starts with "Bot "',
         "set the bare token without the prefix; Glyphoxa adds it when talking to Discord"),
        (f'"{GOOD}"', "the token is wrapped in quotes (72 characters with them)",
         "set it without the quotes: export DISCORD_TOKEN=... takes the bare token"),
        (GOOD[:30] + "\n" + GOOD[30:], "the token has a space or line break inside it "
         "(character 31 of 71)", "paste it again as one line: " + TOKEN_FIX),
        ("abc.def", "the token has 2 parts separated by dots; a bot token has three (7 "
         "characters in all)", TOKEN_FIX),
        (GOOD + ".x", "the token has 4 parts separated by dots; a bot token has three (72 "
         "characters in all)", TOKEN_FIX),
        (GOOD.replace(".GhXyZa.", ".."), "part 2 of the token (between the dots) is empty",
         TOKEN_FIX),
        (GOOD[:-1] + "=", "part 3 of the token has a character that is not base64url "
         "(A-Z a-z 0-9 - _) at character 70 of 70", TOKEN_FIX),
        (GOOD[:-30], "part 3 of the token has 8 characters; a bot token's has at least 20 (was "
         "it cut off when copying?)", TOKEN_FIX),
        (token_for("hello-world-12345"), "the token's first part does not encode a bot user "
         "id, so this is not a bot token (an OAuth2 access token or a user token?)", TOKEN_FIX),
        (token_for(4001), "the token's first part does not encode a bot user id, so this is not "
         "a bot token (an OAuth2 access token or a user token?)", TOKEN_FIX),
        (str(BOT), "the token is a number of 18 digits: that is an id (the Application ID?), "
         "not the bot token", TOKEN_FIX),
        ("A" * 32, "the token has no dots and 32 characters: that looks like the OAuth2 Client "
         "Secret, not the bot token", TOKEN_FIX),
        ("ab" * 32, "the token is 64 hex digits: that looks like the Public Key, not the bot "
         "token", TOKEN_FIX),
        ("x" * 50, "the token has no dots (50 characters); a bot token is three parts joined by "
         "dots", TOKEN_FIX),
    ],
)  # fmt: skip
def test_each_malformed_token_has_its_own_message(raw: str, message: str, fix: str) -> None:
    with pytest.raises(TokenProblem) as caught:
        parse_bot_token(raw)
    assert (str(caught.value), caught.value.fix) == (message, fix)
    for part in raw.split("."):
        if len(part) > 8:
            assert part not in str(caught.value) + caught.value.fix  # nothing of it is echoed


# -- setup and doctor agree ------------------------------------------------------------------


@pytest.mark.parametrize(
    "token",
    [None, "Bot " + GOOD, "abc.def", "A" * 32, GOOD[:-30]],
    ids=["missing", "bot-prefix", "two-parts", "client-secret", "cut-short"],
)
def test_doctor_and_setup_say_the_same(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    token: str | None,
) -> None:
    if token is None:
        monkeypatch.delenv("DISCORD_TOKEN", raising=False)
    else:
        monkeypatch.setenv("DISCORD_TOKEN", token)
    config = write_config(tmp_path)
    code, report = setup_report(capsys, config)
    assert code == 1 and report["ok"] is False and report["token"]["ok"] is False
    problem, fix = report["token"]["problem"], report["token"]["fix"]
    text_code = main(["--config", str(config), "discord", "setup"])
    text = capsys.readouterr().out
    assert text_code == 1 and f"PROBLEM: {problem}" in " ".join(text.split())
    line = doctor_lines(capsys, config, "--discord")["discord-token"]
    setup_hint = "; glyphoxa discord setup shows every step"
    assert line.startswith("FAIL  discord-token")
    assert line.endswith(f"  {problem} -> fix: {fix}{setup_hint}")
    if token is not None:
        for part in token.replace("Bot ", "").split("."):
            assert part not in text + line + json.dumps(report)


def test_a_token_the_config_does_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DISCORD_TOKEN", GOOD)
    config = tmp_path / "glyphoxa.yaml"
    config.write_text("discord:\n  guild_ids: []\n")
    _, report = setup_report(capsys, config)
    assert report["token"]["problem"] == (
        "DISCORD_TOKEN is set, but the config does not read it (discord.token is empty)"
    )
    assert (
        report["token"]["fix"] == "add  token: ${DISCORD_TOKEN:-}  under discord: in glyphoxa.yaml"
    )
    line = doctor_lines(capsys, config)["discord-token"]  # a real mistake even without --discord
    assert line.startswith("FAIL") and report["token"]["problem"] in line


def test_doctor_passes_a_good_token_with_the_setup_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DISCORD_TOKEN", GOOD)
    line = doctor_lines(capsys, write_config(tmp_path, guild_ids=[SERVER]), "--discord")
    assert line["discord-token"].startswith("PASS")
    assert line["discord-token"].endswith(
        f"well-formed (70 characters), bot user and application id {BOT}; slash commands sync "
        f"at once to server {SERVER} (Discord not asked: add --online)"
    )


# -- doctor --online against a local Discord -------------------------------------------------


@pytest.fixture
async def api(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeDiscordApi]:
    server = FakeDiscordApi(bot_id=BOT, app_id=BOT)
    await server.start()
    monkeypatch.setattr(discord.http.Route, "BASE", server.base)  # the REST edge only
    everyone = {"id": str(SERVER), "name": "@everyone", "permissions": str(1 << 10 | 1 << 11)}
    voice = {"id": "9", "name": "Glyphoxa", "permissions": str(1 << 20 | 1 << 21)}
    server.roles[SERVER] = [everyone, voice]
    server.bot_roles[SERVER] = [9]
    server.channels[TRANSCRIPT] = {"id": str(TRANSCRIPT), "type": 0, "guild_id": str(SERVER)}
    yield server
    await server.close()


async def online(
    capsys: pytest.CaptureFixture[str], config: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str]:
    monkeypatch.setenv("DISCORD_TOKEN", GOOD)
    args = ["--config", str(config), "doctor", "--only", "discord-api", "--online"]
    code = await asyncio.to_thread(main, args)
    lines = capsys.readouterr().out.strip().splitlines()
    return code, next(line for line in lines if " discord-api " in line)


async def test_online_all_good(
    api: FakeDiscordApi,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = write_config(tmp_path, guild_ids=[SERVER], transcript_channel_id=TRANSCRIPT)
    code, line = await online(capsys, config, monkeypatch)
    assert code == 0, line
    assert line.startswith("PASS  discord-api")
    assert line.endswith(
        f"Discord accepts the token: bot Glyphoxa, application {BOT}; in server {SERVER} with "
        "the permissions"
    )
    paths = [path for method, path, _ in api.calls if method == "GET"]
    assert paths == ["users/@me", "oauth2/applications/@me", f"guilds/{SERVER}/members/{BOT}",
                     f"guilds/{SERVER}/roles", f"channels/{TRANSCRIPT}"]  # fmt: skip


@pytest.mark.parametrize(
    ("breakage", "expected"),
    [
        ("reject", "Discord rejected the token (401 Unauthorized): it was reset since, or it is "
         "not this bot's -> fix: " + TOKEN_FIX),
        ("grant", "the application has Requires OAuth2 Code Grant on, so the invite link fails "
         "-> fix: Developer Portal > your application > Bot: turn Requires OAuth2 Code Grant off"),
        ("absent", f"the bot is not in server {SERVER} (discord.guild_ids) -> fix: open the "
         "invite link from glyphoxa discord setup and add the bot to that server"),
        ("no-speak", f"in server {SERVER} the bot's roles lack Connect, Speak -> fix: Server "
         "Settings > Roles > the bot's role: allow Connect, Speak (or remove the bot and invite "
         "it again with glyphoxa discord setup's link)"),
        ("channel", f"the bot cannot see the transcript channel {TRANSCRIPT} "
         "(discord.transcript_channel_id) -> fix: copy the id again (right-click the text "
         "channel > Copy Channel ID) and let the bot's role view it"),
    ],
)  # fmt: skip
async def test_online_names_what_discord_says_is_wrong(
    api: FakeDiscordApi,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    breakage: str,
    expected: str,
) -> None:
    if breakage == "reject":
        api.reject_token = True
    elif breakage == "grant":
        api.code_grant = True
    elif breakage == "absent":
        del api.bot_roles[SERVER]
    elif breakage == "no-speak":
        api.bot_roles[SERVER] = []
    elif breakage == "channel":
        api.channels.clear()
    config = write_config(tmp_path, guild_ids=[SERVER], transcript_channel_id=TRANSCRIPT)
    code, line = await online(capsys, config, monkeypatch)
    assert code == 1
    assert line.startswith("FAIL  discord-api") and line.endswith(f"  {expected}")


async def test_administrator_covers_every_permission(
    api: FakeDiscordApi,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api.roles[SERVER] = [{"id": str(SERVER), "name": "@everyone", "permissions": "0"},
                         {"id": "9", "name": "Admin", "permissions": str(1 << 3)}]  # fmt: skip
    code, line = await online(capsys, write_config(tmp_path, guild_ids=[SERVER]), monkeypatch)
    assert code == 0 and line.startswith("PASS"), line
