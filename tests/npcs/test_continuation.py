"""Who answers in sequence: a continuation never answers a line that only talks about an NPC,
and names misheard by a letter or two still reach their NPC."""

from __future__ import annotations

from pathlib import Path

import pytest

from npcs.addressing import AddressDetector
from npcs.campaign import load_campaign

EXAMPLE = Path(__file__).resolve().parents[2] / "campaigns" / "example"


@pytest.fixture(scope="module")
def npcs() -> list:
    return list(load_campaign(EXAMPLE).npcs.values())


def _sequence(detector: AddressDetector, lines: list[str]) -> list[list[str]]:
    return [detector.detect("Arin", line, now=5.0 * i).npcs for i, line in enumerate(lines)]


@pytest.mark.parametrize(
    "aside",
    [
        "I don't trust Bartok.",
        "Let's ask Bartok tomorrow.",
        "Bartok's ale is watered down.",
        "Greymantle would know, I bet.",
        "Vessa thinks we're smugglers.",
    ],
)
def test_a_line_about_an_npc_gets_no_answer_in_a_conversation(npcs: list, aside: str) -> None:
    detector = AddressDetector(npcs)
    answered = _sequence(detector, ["Bartok, what's on tap?", aside, "And the stew?"])
    assert answered == [["Bartok"], [], ["Bartok"]]  # the conversation goes on after the aside


def test_a_plain_continuation_still_answers(npcs: list) -> None:
    detector = AddressDetector(npcs)
    assert _sequence(detector, ["Bartok, what's on tap?", "Is it any good?"]) == [
        ["Bartok"],
        ["Bartok"],
    ]


def test_thanking_the_npc_of_the_conversation_is_still_said_to_it(npcs: list) -> None:
    detector = AddressDetector(npcs)
    assert _sequence(detector, ["Bartok, a pint please.", "Thanks, Bart!"]) == [
        ["Bartok"],
        ["Bartok"],
    ]


def test_the_only_npc_in_the_scene_does_not_answer_what_is_said_about_it(npcs: list) -> None:
    detector = AddressDetector(npcs, active=["Bartok"])
    assert _sequence(detector, ["I don't trust Bartok."]) == [[]]
    assert _sequence(AddressDetector(npcs, active=["Bartok"]), ["Is the stew hot?"]) == [["Bartok"]]


@pytest.mark.parametrize(
    ("line", "npc"),
    [
        ("Bartek, what's on tap?", "Bartok"),
        ("Bardok, a pint!", "Bartok"),
        ("Vesa, any news from the docks?", "Captain Vessa"),
        ("Grymantle, tell me more.", "Greymantle"),
        ("Whisber, who are you?", "Whisper"),
    ],
)
def test_a_name_misheard_by_a_letter_reaches_its_npc_alone_and_in_sequence(
    npcs: list, line: str, npc: str
) -> None:
    assert AddressDetector(npcs).detect("Arin", line, now=0.0).npcs == [npc]
    detector = AddressDetector(npcs)
    others = [n.name for n in npcs if n.name != npc]
    answered = _sequence(detector, [f"{others[0]}, hello there.", line])
    assert answered == [[others[0]], [npc]]


SHORT_CAST = ["Mira Thorne", "Orin", "Edda Vale", "Sela", "Ilka", "Brannoc Tull"]


@pytest.mark.parametrize(
    ("line", "npc"),
    [
        ("Mera, a pint please.", "Mira Thorne"),
        ("Oren, where were you?", "Orin"),
        ("hey Orrin!", "Orin"),
        ("Eda, is the gate open?", "Edda Vale"),
        ("Sala, hello.", "Sela"),
        ("Ilke?", "Ilka"),
        ("Tul, what's the toll?", "Brannoc Tull"),
    ],
)
def test_a_short_name_one_letter_off_opening_the_line_reaches_its_npc(line: str, npc: str) -> None:
    from npcs.schema import NpcDefinition

    cast = [NpcDefinition(name=name, personality="x") for name in SHORT_CAST]
    assert AddressDetector(cast).detect("Arin", line, now=0.0).npcs == [npc]


@pytest.mark.parametrize(
    "line",
    ["I saw Oren yesterday.", "Mera is a nice name.", "Sell, I said!", "Idea, anyone?"],
)
def test_a_short_name_one_letter_off_elsewhere_is_no_name(line: str) -> None:
    from npcs.schema import NpcDefinition

    cast = [NpcDefinition(name=name, personality="x") for name in SHORT_CAST]
    assert AddressDetector(cast).detect("Arin", line, now=0.0).npcs == []
