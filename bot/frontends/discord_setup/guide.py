"""``glyphoxa discord setup``'s report: from the config and the token to the steps a DM takes.

:func:`inspect_setup` gathers the facts once (the token's shape and application id, the invite
links, the servers, who is DM); :func:`render_text` writes them as numbered steps a first-time
DM can follow and :func:`as_json` as data. ``glyphoxa doctor``'s Discord line is built from the
same :class:`SetupFacts`, so the two always say the same thing.
"""

from __future__ import annotations

import logging
import os
import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bot.frontends.discord_setup.dm_rule import DmRule
from bot.frontends.discord_setup.needs import (
    PRIVILEGED_INTENTS,
    REQUIRED_PERMISSIONS,
    SCOPES,
    bot_intents,
    invite_url,
    privileged_intents_needed,
    required_permissions,
)
from bot.frontends.discord_setup.token import BotToken, TokenProblem, is_snowflake, read_bot_token
from campaigns.basics import GlyphoxaError

if TYPE_CHECKING:
    from bot.settings.config import GlyphoxaConfig

__all__ = ["SetupFacts", "as_json", "inspect_setup", "render_text", "token_summary"]

log = logging.getLogger(__name__)

PORTAL = "https://discord.com/developers/applications"
_HANGING = re.compile(r" *(?:- |(?:OK|Fix|PROBLEM|Now): |\S+(?: \S+)*? {2,})?")
NEXT_STEPS = (
    ("glyphoxa doctor --discord", "check every part, the token included (--online also asks "
     "Discord whether it accepts the token and the bot is in your server)"),
    ("glyphoxa run", "start the bot; it stays online until Ctrl+C"),
    ("/session start", "in Discord: join a voice channel, then type it in any text channel"),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class SetupFacts:
    """Everything ``discord setup`` reports, gathered once."""

    config_label: str
    token: BotToken | None
    token_problem: TokenProblem | None
    application_id: str | None
    application_id_source: str | None
    """``"token"`` (derived from its first part) or ``"--application-id"``."""
    guild_ids: list[int]
    rule: DmRule
    transcript_channel_id: int | None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """The bot can log in (a well-formed token) and the invite link is known."""
        return self.token is not None and self.application_id is not None

    def invite_urls(self) -> dict[str, str]:
        """``"any"`` -> the link for any server; each configured server's id -> its link."""
        if self.application_id is None:
            return {}
        urls = {"any": invite_url(self.application_id)}
        for guild_id in self.guild_ids:
            urls[str(guild_id)] = invite_url(self.application_id, guild_id)
        return urls


def inspect_setup(
    config: GlyphoxaConfig,
    config_label: str,
    *,
    application_id: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> SetupFacts:
    """The facts for ``config`` (``application_id``: ``--application-id``, for no token yet).

    Raises:
        GlyphoxaError: ``application_id`` is not a Discord id.
    """
    env = os.environ if environ is None else environ
    if application_id is not None and not is_snowflake(application_id.strip()):
        raise GlyphoxaError(
            "discord setup --application-id: not a Discord id (17 to 20 digits); copy it from "
            "Developer Portal > your application > General Information > Application ID"
        )
    token: BotToken | None = None
    problem: TokenProblem | None = None
    try:
        token = read_bot_token(config, env)
    except TokenProblem as error:
        problem = error
    notes: list[str] = []
    source: str | None = None
    app_id = application_id.strip() if application_id is not None else None
    if app_id is not None:
        source = "--application-id"
        if token is not None and token.user_id != app_id:
            notes.append(
                f"--application-id {app_id} differs from the token's bot user {token.user_id}: "
                "an application from before 2016 has its own id; otherwise the token belongs "
                "to another application"
            )
    elif token is not None:
        app_id, source = token.user_id, "token"
    settings = config.discord
    return SetupFacts(
        config_label=config_label,
        token=token,
        token_problem=problem,
        application_id=app_id,
        application_id_source=source,
        guild_ids=list(settings.guild_ids),
        rule=DmRule.from_config(settings),
        transcript_channel_id=settings.transcript_channel_id,
        notes=notes,
    )


def token_summary(token: BotToken) -> str:
    """A good token in one phrase (its length and public bot id, never the token)."""
    return f"well-formed ({token.length} characters), bot user and application id {token.user_id}"


def guild_summary(guild_ids: list[int]) -> str:
    if not guild_ids:
        return (
            "no server in discord.guild_ids: slash commands sync globally and can take up to "
            "an hour to appear"
        )
    ids = ", ".join(map(str, guild_ids))
    return f"slash commands sync at once to server{'s' if len(guild_ids) > 1 else ''} {ids}"


def as_json(facts: SetupFacts) -> dict[str, Any]:
    """The report as data (``glyphoxa discord setup --json``)."""
    problem = facts.token_problem
    permissions = required_permissions()
    return {
        "ok": facts.ok,
        "config": facts.config_label,
        "token": {
            "ok": facts.token is not None,
            "length": facts.token.length if facts.token else None,
            "bot_user_id": facts.token.user_id if facts.token else None,
            "problem": str(problem) if problem else None,
            "fix": problem.fix if problem else None,
        },
        "application_id": facts.application_id,
        "application_id_source": facts.application_id_source,
        "invite_urls": facts.invite_urls(),
        "scopes": [{"scope": s.name, "why": s.why} for s in SCOPES],
        "permissions": {
            "value": permissions.value,
            "needed": [
                {"flag": p.flag, "name": p.label, "why": p.why} for p in REQUIRED_PERMISSIONS
            ],
        },
        "intents": {
            "gateway": [name for name, on in bot_intents() if on],
            "privileged_needed": [PRIVILEGED_INTENTS[f] for f in privileged_intents_needed()],
            "privileged_not_needed": [
                name
                for flag, name in PRIVILEGED_INTENTS.items()
                if flag not in privileged_intents_needed()
            ],
        },
        "guild_ids": [str(g) for g in facts.guild_ids],
        "guild_note": guild_summary(facts.guild_ids),
        "dm": {
            "role": facts.rule.role,
            "admins": facts.rule.admins,
            "rule": facts.rule.describe(),
        },
        "transcript_channel_id": (
            str(facts.transcript_channel_id) if facts.transcript_channel_id else None
        ),
        "notes": facts.notes,
        "next": [{"command": command, "why": why} for command, why in NEXT_STEPS],
    }


def render_text(facts: SetupFacts) -> str:
    """The report as numbered steps, each saying where to click and which key to set."""
    out: list[str] = [f"Glyphoxa on Discord (config: {facts.config_label})", ""]
    out += _step_application()
    out += _step_token(facts)
    out += _step_invite(facts)
    out += _step_server(facts)
    out += _step_dm(facts)
    out += ["6. Next", *(f"   {command:<27}{why}" for command, why in NEXT_STEPS)]
    if facts.notes:
        out += ["", *(f"Note: {note}" for note in facts.notes)]
    title, *steps = out  # the title holds the config's path: never split
    return "\n".join([title, *(wrapped for line in steps for wrapped in _wrap(line))])


def _wrap(line: str, width: int = 100) -> list[str]:
    """One logical line as terminal lines, continued under its text: after a bullet, a label
    ("Fix: ") or a column ("Connect        join ...")."""
    if len(line) <= width or line.lstrip().startswith("https://"):
        return [line]
    head = _HANGING.match(line)
    hang = head.end() if head else 0
    return textwrap.wrap(
        line, width, subsequent_indent=" " * hang, break_long_words=False, break_on_hyphens=False
    )


def _step_application() -> list[str]:
    needed = privileged_intents_needed()
    off = [name for flag, name in PRIVILEGED_INTENTS.items() if flag not in needed]
    on = [PRIVILEGED_INTENTS[flag] for flag in needed]
    intents = (
        f"   - Same tab, Privileged Gateway Intents: leave {_join(off)} off; Glyphoxa needs "
        "none of them (it listens for servers and voice states, which need no switch)."
        if not on
        else f"   - Same tab, Privileged Gateway Intents: turn on {_join(on)}; leave "
        f"{_join(off) or 'the rest'} off."
    )
    return [
        "1. Create the bot (once)",
        f"   - Open {PORTAL} and press New Application; its name is what players see.",
        "   - Bot tab: press Reset Token and copy the token. It is a password: never share it.",
        "   - Put it in the environment of the shell that runs Glyphoxa:",
        "       export DISCORD_TOKEN='paste the token here'",
        "     glyphoxa.yaml reads it with  token: ${DISCORD_TOKEN:-}  under discord:.",
        intents,
        "   - Same tab: leave Requires OAuth2 Code Grant off (the invite link fails with it on). "
        "Public Bot off means only you can add the bot to a server.",
        "",
    ]


def _step_token(facts: SetupFacts) -> list[str]:
    if facts.token is not None:
        return ["2. Your token", f"   OK: {token_summary(facts.token)}.", ""]
    problem = facts.token_problem
    assert problem is not None
    return [
        "2. Your token",
        f"   PROBLEM: {_sentence(str(problem))}",
        f"   Fix: {_sentence(problem.fix)}",
        "",
    ]


def _step_invite(facts: SetupFacts) -> list[str]:
    permissions = required_permissions()
    out = ["3. Invite the bot to your server (you need Manage Server there)"]
    urls = facts.invite_urls()
    if not urls:
        out.append(
            "   The link needs the application id: set DISCORD_TOKEN (step 1), or pass "
            "--application-id (General Information > Application ID)."
        )
    elif facts.guild_ids:
        for guild_id in facts.guild_ids:
            out.append(f"   Server {guild_id}: {urls[str(guild_id)]}")
        out.append(f"   Any server: {urls['any']}")
    else:
        out.append(f"   {urls['any']}")
    out.append("   Open it in a browser, pick the server and press Authorize. It asks for:")
    for scope in SCOPES:
        out.append(f"   - scope {scope.name}: {scope.why}")
    out.append(f"   - permissions {permissions.value}:")
    width = max(len(p.label) for p in REQUIRED_PERMISSIONS)
    for needed in REQUIRED_PERMISSIONS:
        out.append(f"       {needed.label:<{width}}  {needed.why}")
    out += [
        "   Slash-command replies and the DM's tool approvals (direct messages) need no more. "
        "A private voice or text channel must also let the bot's role in (channel settings > "
        "Permissions).",
        "",
    ]
    return out


def _step_server(facts: SetupFacts) -> list[str]:
    channel = f"now {facts.transcript_channel_id}" if facts.transcript_channel_id else "now off"
    return [
        "4. Your server's id (discord.guild_ids)",
        "   - Discord: User Settings > Advanced > Developer Mode on; then right-click your "
        "server's icon > Copy Server ID.",
        "   - glyphoxa.yaml, under discord:   guild_ids: [<the id>]",
        f"   Now: {guild_summary(facts.guild_ids)}.",
        "   Live transcript (optional): right-click a text channel > Copy Channel ID, then "
        f"transcript_channel_id: <the id> ({channel}).",
        "",
    ]


def _step_dm(facts: SetupFacts) -> list[str]:
    return [
        "5. Who is the Dungeon Master (discord.dm_role, discord.dm_admins)",
        f"   Now: {facts.rule.describe()}.",
        "   The DM starts and stops sessions and steers NPCs (/session, /npc, /tier, /tools, "
        "/recap) and may steer by voice; everyone may /roll. Set dm_role to a role's name "
        "(Server Settings > Roles) and give it to the DM; dm_admins: false makes the role the "
        "only way.",
        "",
    ]


def _sentence(text: str) -> str:
    return text if text.endswith(".") else f"{text}."


def _join(names: list[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]
