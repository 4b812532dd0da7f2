"""The Discord front end with hostile users: players learn nothing from the DM's autocomplete,
oversized answers still arrive (shortened, the whole attached), and names cannot ping.

Driven through the real bot, command tree and HTTP client against the local Discord API
stand-in of ``tests/discord``.
"""

from __future__ import annotations

from bot.frontends.discord_bot.messages import MESSAGE_LIMIT, fit_message
from tests.discord.test_commands import (  # the harness fixture and payload builders
    DM_ROLE,
    PLAYER,
    Harness,
    harness,
    interaction,
    opt,
    sub,
)

__all__ = ["harness"]

BIG_ROLL = "+".join(["100d1000"] * 20)  # 2,000 dice: a breakdown of ~10,000 characters


async def test_autocomplete_answers_only_the_dm(harness: Harness) -> None:
    for command in (sub("mute", opt("name", "", focused=True)), sub("say", opt("name", "b"))):
        command[0]["options"][0]["focused"] = True
        player = await harness.run(interaction("npc", command, member=PLAYER, kind=4))
        assert player["type"] == 8 and player["choices"] == []
        dm = await harness.run(interaction("npc", command, roles=(DM_ROLE,), kind=4))
        assert dm["choices"], "the DM still gets NPC names"


async def test_a_roll_too_long_for_one_message_still_arrives(harness: Harness) -> None:
    reply = await harness.run(interaction("roll", [opt("expr", BIG_ROLL)], member=PLAYER))
    assert reply["type"] == 4 and not reply.get("flags")  # public, as every roll
    assert len(reply["content"]) <= MESSAGE_LIMIT
    assert "every die attached" in reply["content"]
    attached = reply["_files"]["roll.txt"].decode()
    assert len(attached) > MESSAGE_LIMIT and attached.endswith(reply["content"].split("**")[1])


async def test_names_never_ping(harness: Harness) -> None:
    payload = interaction("roll", [opt("expr", "1d20")], member=PLAYER)
    payload["member"]["user"]["global_name"] = "@everyone"
    payload["member"]["nick"] = "@everyone **bold**"
    reply = await harness.run(payload)
    assert reply["allowed_mentions"] == {"parse": []}
    assert "\\*\\*bold\\*\\*" in reply["content"]


def test_fit_message_keeps_short_texts_and_attaches_long_ones() -> None:
    assert fit_message("short") == ("short", None)
    content, attachment = fit_message("x" * 5000, filename="status.txt")
    assert len(content) <= MESSAGE_LIMIT and attachment is not None
    assert attachment.filename == "status.txt"
    assert attachment.fp.read() == b"x" * 5000
