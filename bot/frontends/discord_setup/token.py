"""The bot token's shape, checked offline, and the application id it carries.

A Discord bot token is three base64url parts joined by dots: the bot user's id, a timestamp and
a signature. Its first part therefore names the bot user, whose id equals the application id for
every application created since bots became part of applications. Each way a token is commonly
pasted wrong (quotes, a "Bot " prefix, a line break, the client secret or the application id
instead of the token, a copy cut short) gets its own message. A message never contains the
token or any part of it; only its length and the bot's public user id.
"""

from __future__ import annotations

import base64
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.settings.config import GlyphoxaConfig

__all__ = [
    "TOKEN_ENV_VAR",
    "TOKEN_FIX",
    "BotToken",
    "TokenProblem",
    "is_snowflake",
    "parse_bot_token",
    "read_bot_token",
]

log = logging.getLogger(__name__)

TOKEN_ENV_VAR = "DISCORD_TOKEN"
#: Where a token comes from, for every message that asks for a new one.
TOKEN_FIX = (
    f"Developer Portal > your application > Bot > Reset Token, then export {TOKEN_ENV_VAR}=..."
)
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*")
_MIN_SECOND, _MIN_THIRD = 4, 20
_CLIENT_SECRET_LENGTH = 32


def is_snowflake(text: str) -> bool:
    """A Discord id as written in the client: 17 to 20 digits."""
    return text.isascii() and text.isdigit() and 17 <= len(text) <= 20


class TokenProblem(Exception):
    """The token is missing or not shaped like a bot token: ``str(self)`` says what is wrong,
    ``fix`` what to do. Neither contains the token."""

    def __init__(self, message: str, fix: str = TOKEN_FIX, *, missing: bool = False) -> None:
        super().__init__(message)
        self.fix = fix
        self.missing = missing
        """No token anywhere (not a malformed one): only ``glyphoxa run`` needs one."""


@dataclass(frozen=True, slots=True)
class BotToken:
    """A well-formed bot token and what its shape tells (the value stays out of the repr)."""

    value: str
    """The token, stripped of surrounding whitespace (as discord.py sends it)."""
    user_id: str
    """The bot user's id (its first part, decoded); the application id for any bot account."""

    def __repr__(self) -> str:
        return f"BotToken(user_id={self.user_id}, length={len(self.value)})"

    @property
    def length(self) -> int:
        return len(self.value)


def parse_bot_token(raw: str) -> BotToken:
    """Check ``raw``'s shape and decode the bot user id from its first part.

    Raises:
        TokenProblem: what is wrong with the shape, and how to get a good token.
    """
    value = raw.strip()
    if not value:
        raise TokenProblem(f"{TOKEN_ENV_VAR} is empty")
    if value[0] in "\"'" or value[-1] in "\"'":
        raise TokenProblem(
            f"the token is wrapped in quotes ({len(value)} characters with them)",
            "set it without the quotes: export DISCORD_TOKEN=... takes the bare token",
        )
    if value.lower().startswith("bot "):
        raise TokenProblem(
            'the token starts with "Bot "',
            "set the bare token without the prefix; Glyphoxa adds it when talking to Discord",
        )
    inner = next((i for i, char in enumerate(value) if char.isspace()), None)
    if inner is not None:
        raise TokenProblem(
            f"the token has a space or line break inside it (character {inner + 1} of "
            f"{len(value)})",
            "paste it again as one line: " + TOKEN_FIX,
        )
    parts = value.split(".")
    if len(parts) == 1:
        raise TokenProblem(_one_part(value))
    if len(parts) != 3:
        raise TokenProblem(
            f"the token has {len(parts)} parts separated by dots; a bot token has three "
            f"({len(value)} characters in all)"
        )
    for number, part in enumerate(parts, start=1):
        if not part:
            raise TokenProblem(f"part {number} of the token (between the dots) is empty")
        bad = _BASE64URL.match(part)
        end = bad.end() if bad else 0
        if end < len(part):
            position = sum(len(p) + 1 for p in parts[: number - 1]) + end + 1
            raise TokenProblem(
                f"part {number} of the token has a character that is not base64url "
                f"(A-Z a-z 0-9 - _) at character {position} of {len(value)}"
            )
    if len(parts[1]) < _MIN_SECOND or len(parts[2]) < _MIN_THIRD:
        short = 2 if len(parts[1]) < _MIN_SECOND else 3
        least = _MIN_SECOND if short == 2 else _MIN_THIRD
        raise TokenProblem(
            f"part {short} of the token has {len(parts[short - 1])} characters; a bot token's "
            f"has at least {least} (was it cut off when copying?)"
        )
    user_id = _decode_user_id(parts[0])
    if user_id is None:
        raise TokenProblem(
            "the token's first part does not encode a bot user id, so this is not a bot token "
            "(an OAuth2 access token or a user token?)"
        )
    return BotToken(value, user_id)


def read_bot_token(config: GlyphoxaConfig, environ: Mapping[str, str] | None = None) -> BotToken:
    """The configured token (``discord.token``, which the shipped config reads from
    ``$DISCORD_TOKEN``), checked; what ``glyphoxa run`` would log in with.

    Raises:
        TokenProblem: missing (also when ``$DISCORD_TOKEN`` is set but the config does not read
            it) or malformed.
    """
    env = os.environ if environ is None else environ
    secret = config.discord.token
    raw = secret.get_secret_value() if secret is not None else ""
    if not raw.strip():
        if env.get(TOKEN_ENV_VAR, "").strip():
            raise TokenProblem(
                f"{TOKEN_ENV_VAR} is set, but the config does not read it (discord.token is empty)",
                "add  token: ${DISCORD_TOKEN:-}  under discord: in glyphoxa.yaml",
            )
        raise TokenProblem(f"{TOKEN_ENV_VAR} is not set", missing=True)
    return parse_bot_token(raw)


def _one_part(value: str) -> str:
    if value.isdigit():
        return (
            f"the token is a number of {len(value)} digits: that is an id (the Application ID?), "
            "not the bot token"
        )
    if len(value) == _CLIENT_SECRET_LENGTH and _BASE64URL.fullmatch(value):
        return (
            "the token has no dots and 32 characters: that looks like the OAuth2 Client Secret, "
            "not the bot token"
        )
    if len(value) == 64 and all(c in "0123456789abcdef" for c in value.lower()):
        return "the token is 64 hex digits: that looks like the Public Key, not the bot token"
    return (
        f"the token has no dots ({len(value)} characters); a bot token is three parts joined "
        "by dots"
    )


def _decode_user_id(head: str) -> str | None:
    try:
        decoded = base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)).decode("ascii")
    except (ValueError, UnicodeDecodeError):
        return None
    return decoded if is_snowflake(decoded) else None
