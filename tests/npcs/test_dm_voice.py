"""DM voice commands read from final transcripts, as Whisper writes them."""

from __future__ import annotations

from pathlib import Path

import pytest

from campaigns.basics import Tier
from npcs.addressing import AddressDetector
from npcs.campaign import load_campaign
from npcs.dm_voice import DmCommandParser

EXAMPLE = Path(__file__).resolve().parents[2] / "campaigns" / "example"
PARSER = DmCommandParser(AddressDetector(load_campaign(EXAMPLE).npcs).mentions)


@pytest.mark.parametrize(
    ("text", "action", "npc", "tier"),
    [
        ("Greymantle, take your time.", "tier", "Greymantle", Tier.DEEP),
        ("Grey Mantel, take your time", "tier", "Greymantle", Tier.DEEP),
        ("gray mantle take all the time you need", "tier", "Greymantle", Tier.DEEP),
        ("Okay, Greymantle, no rush.", "tier", "Greymantle", Tier.DEEP),
        ("Bartok, quick answers please.", "tier", "Bartok", Tier.FAST),
        ("Bartock, keep it short.", "tier", "Bartok", Tier.FAST),
        ("Captain Vesa, quick answers", "tier", "Captain Vessa", Tier.FAST),
        ("Greymantle, back to normal.", "tier", "Greymantle", None),
        ("Everyone, take your time.", "tier", None, Tier.DEEP),
        ("Every one, quick answers.", "tier", None, Tier.FAST),
        ("everybody back to normal", "tier", None, None),
        ("All right everyone, as you were.", "tier", None, None),
        ("Bartok, be quiet.", "mute", "Bartok", None),
        ("Quiet, Bartok!", "mute", "Bartok", None),
        ("the barkeep, hush", "mute", "Bartok", None),
        ("Bart, you may speak.", "unmute", "Bartok", None),
        ("Bartok you can talk again", "unmute", "Bartok", None),
        ("Everyone, you may speak now.", "unmute", None, None),
        ("Everyone stop!", "stop", None, None),
        ("Everyone. Stop.", "stop", None, None),
        ("everybody stop talking", "stop", None, None),
        ("Hey Whisper, that's enough.", "stop", "Whisper", None),
    ],
)
def test_commands(text: str, action: str, npc: str | None, tier: Tier | None) -> None:
    command = PARSER.parse(text)
    assert command is not None
    assert (command.action, command.npc, command.tier, command.heard) == (action, npc, tier, text)


@pytest.mark.parametrize(
    "text",
    [
        "Greymantle, take your time and tell me about the war.",  # a question, not a command
        "take your time",  # no one named
        "Stop.",
        "As Bartok, be quiet.",  # puppeting
        "Bartok says be quiet.",
        "Bartok and Greymantle, be quiet.",
        "My friend, be quiet.",  # not an NPC
        "Grey mantle and the others, stop",
        "Greymantle, what happened at the old mill?",
        "",
    ],
)
def test_anything_else_is_not_a_command(text: str) -> None:
    assert PARSER.parse(text) is None


def test_describe() -> None:
    assert PARSER.parse("Grey, take your time").describe() == "tier deep for Greymantle"  # type: ignore[union-attr]
    assert PARSER.parse("everyone stop").describe() == "stop all NPCs"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "npc", "direction"),
    [
        ("Bartok, between us: you saw the thief; deny it.", "Bartok",
         "you saw the thief; deny it."),
        ("Bartock, between us. You saw the Thief.", "Bartok", "You saw the Thief."),
        ("Okay, Grey Mantel, between you and me, he lies.", "Greymantle", "he lies."),
        ("Captain Vesa, just between us: the Watch is bribed.", "Captain Vessa",
         "the Watch is bribed."),
        ("Bartok, between us: that's all.", "Bartok", ""),
        ("Bartok, between us, never mind", "Bartok", ""),
        ("Bartok, between us.", "Bartok", None),  # a pause: the next words are the direction
    ],
)  # fmt: skip
def test_between_us_is_a_private_direction(text: str, npc: str, direction: str | None) -> None:
    command = PARSER.parse(text)
    assert command is not None and command.private
    assert (command.action, command.npc, command.direction) == ("direct", npc, direction)
    assert "thief" not in repr(command).lower() and "lies" not in repr(command)


@pytest.mark.parametrize(
    "text",
    [
        "Everyone, between us: be nice.",  # one NPC at a time
        "Bartok, there is a wall between us and the sea.",
        "I think Bartok between us and the door there is a table.",
        "Between us, Bartok, the ale is off.",
    ],
)
def test_between_us_elsewhere_is_no_direction(text: str) -> None:
    command = PARSER.parse(text)
    assert command is None or not command.private


@pytest.mark.parametrize(
    ("text", "npc", "mood"),
    [
        ("Bartok, your mood is grumpy.", "Bartok", "grumpy"),
        ("Bartock your mood's grumpy", "Bartok", "grumpy"),
        ("Okay, Grey Mantel, mood: suspicious of the elves.", "Greymantle",
         "suspicious of the elves"),
        ("Captain Vesa, you're feeling tired and cranky", "Captain Vessa", "tired and cranky"),
        ("Greymantle, you're in a foul mood.", "Greymantle", "foul"),
        ("Everyone, you are in a festive mood!", None, "festive"),
        ("Bartok, drop the mood.", "Bartok", ""),
        ("Bartok, back to your usual self.", "Bartok", ""),
    ],
)  # fmt: skip
def test_a_mood_for_an_npc(text: str, npc: str | None, mood: str) -> None:
    command = PARSER.parse(text)
    assert command is not None and not command.private
    assert (command.action, command.npc, command.mood, command.heard) == ("mood", npc, mood, text)
    assert command.describe() == f"mood {mood or 'cleared'} for {npc or 'all NPCs'}"


@pytest.mark.parametrize(
    "text",
    [
        "Bartok, you're in a hurry.",  # not a mood
        "Bartok, what's your mood today?",  # a question to the NPC
        "Bartok, the mood in here is grim.",
        "Bartok, you are feeling like a king who lost his crown and wants it back.",  # a speech
        "My friend, your mood is grumpy.",  # not an NPC
        "Your mood is grumpy.",  # no one named
    ],
)
def test_mood_words_elsewhere_are_no_mood(text: str) -> None:
    command = PARSER.parse(text)
    assert command is None or command.action != "mood"
