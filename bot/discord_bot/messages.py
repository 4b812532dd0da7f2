"""Discord's message limits applied to everything the cog sends.

A message holds at most 2,000 characters; Discord refuses a longer one outright, so the reply
is lost and the user sees "the application did not respond". A long text is shortened to fit,
with the whole of it attached as a text file.
"""

from __future__ import annotations

import io

import discord

__all__ = ["MESSAGE_LIMIT", "fit_message"]

MESSAGE_LIMIT = 2000
_NOTICE = "\n… (too long for one message: the whole text is attached)"


def fit_message(text: str, *, filename: str = "message.txt") -> tuple[str, discord.File | None]:
    """``(content, attachment)``: ``text`` itself when it fits, else its beginning and a file."""
    if len(text) <= MESSAGE_LIMIT:
        return text, None
    head = text[: MESSAGE_LIMIT - len(_NOTICE)]
    attachment = discord.File(io.BytesIO(text.encode("utf-8")), filename=filename)
    return head + _NOTICE, attachment
