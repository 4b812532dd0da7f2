"""How the cogs answer in Discord: within its message limits, privately, and the same words for
the same failure.

A message holds at most 2,000 characters; Discord refuses a longer one outright, so the reply
is lost and the user sees "the application did not respond". A long text is shortened to fit,
with the whole of it attached as a text file. Every slash command answers its user privately
(ephemeral), and a failed one says why in one line: the error's own words for an expected
refusal, a generic line (and the details in the bot's log) for a bug, nothing at all when
another process runs the guild's table and answers instead.
"""

from __future__ import annotations

import io
import logging
from typing import Any

import discord
from discord import app_commands

from bot.frontends.discord_bot.claims import TableElsewhere
from bot.frontends.discord_bot.permissions import NotDungeonMaster
from campaigns.basics import GlyphoxaError

__all__ = ["MESSAGE_LIMIT", "command_error_text", "fit_message", "reply_privately"]

log = logging.getLogger(__name__)

MESSAGE_LIMIT = 2000
_NOTICE = "\n… (too long for one message: the whole text is attached)"


def fit_message(text: str, *, filename: str = "message.txt") -> tuple[str, discord.File | None]:
    """``(content, attachment)``: ``text`` itself when it fits, else its beginning and a file."""
    if len(text) <= MESSAGE_LIMIT:
        return text, None
    head = text[: MESSAGE_LIMIT - len(_NOTICE)]
    attachment = discord.File(io.BytesIO(text.encode("utf-8")), filename=filename)
    return head + _NOTICE, attachment


async def reply_privately(
    interaction: discord.Interaction, text: str, *, filename: str = "message.txt", **kwargs: Any
) -> None:
    """Private answer whether or not the interaction was already deferred; a text over
    Discord's limit is shortened and attached whole as ``filename``."""
    text, attachment = fit_message(text, filename=filename)
    if attachment is not None:
        kwargs["file"] = attachment
    if interaction.response.is_done():
        await interaction.followup.send(text, ephemeral=True, **kwargs)
    else:
        await interaction.response.send_message(text, ephemeral=True, **kwargs)


def command_error_text(
    interaction: discord.Interaction,
    error: app_commands.AppCommandError,
    *,
    shown: tuple[type[Exception], ...] = (GlyphoxaError,),
) -> str | None:
    """What a failed slash command tells its user, or None when it must stay silent (another
    process runs the guild's table and answers). ``shown``: errors whose own words are the
    answer (a DM-only refusal always is)."""
    original: BaseException = error
    if isinstance(error, app_commands.CommandInvokeError):
        original = error.original
    if isinstance(original, TableElsewhere):
        name = interaction.command and interaction.command.name
        log.info("%s: %s; not answering", name, original)
        return None
    if isinstance(original, (NotDungeonMaster, *shown)):
        return str(original)
    if isinstance(original, app_commands.CheckFailure):
        return "You can't use that command here."
    log.error("command %s failed", interaction.command, exc_info=original)
    return "Something went wrong; the DM can find the details in the bot's log."
