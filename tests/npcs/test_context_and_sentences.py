"""Prompt building and the streaming sentence splitter."""

from __future__ import annotations

import itertools

import pytest

from bot.settings.providers import LlmOptions
from npcs.context import (
    MAX_SCENE_CHARS,
    SceneLine,
    SceneWindow,
    build_messages,
    build_system_prompt,
    render_scene,
)
from npcs.schema import NpcDefinition
from npcs.sentences import SentenceSplitter, split_sentences

BARTOK = NpcDefinition(
    name="Bartok",
    aliases=["the barkeep"],
    personality="A stout dwarf who runs the Rusty Flagon.",
    knowledge_scope=["drinks and prices"],
    secret_knowledge=["Black-candle crates are in his cellar."],
    behavior_rules=["Deflect questions about the cellar."],
)


def test_system_prompt_has_persona_rules_scope_and_guarded_secrets() -> None:
    prompt = build_system_prompt(BARTOK, entity_snapshot="Emberford: a river town.")
    assert "You are Bartok" in prompt
    assert "A stout dwarf" in prompt
    assert "the barkeep" in prompt
    assert "- Deflect questions about the cellar." in prompt
    assert "You know about: drinks and prices" in prompt
    secrets_at = prompt.index("Secrets you keep (never reveal")
    assert prompt.index("Black-candle crates") > secrets_at
    assert "Facts from the campaign notes:\nEmberford: a river town." in prompt


def test_shared_scene_marks_own_lines_and_drops_the_current_utterance() -> None:
    scene = [
        SceneLine("Alice", "Greymantle, what is the Shadowfell?", at=1),
        SceneLine("Greymantle", "A plane of shadow.", npc="Greymantle", at=2),
        SceneLine("Bob", "Bartok, you heard that?", npc=None, at=3),
    ]
    messages = build_messages(BARTOK, "Bob", "Bartok, you heard that?", scene=scene)
    system, user = messages[0]["content"], messages[1]["content"]
    assert "Alice" not in system  # the system prompt stays the same turn after turn (KV reuse)
    assert 'Alice said: "Greymantle, what is the Shadowfell?"' in user
    assert 'Greymantle said: "A plane of shadow."' in user  # NPCs know what others said
    assert 'you heard that?"' not in user  # the current line is not in the transcript
    assert messages[1]["role"] == "user"
    assert user.endswith("\n\nAnswer as Bartok. Bob says to you: Bartok, you heard that?")
    again = build_messages(BARTOK, "Alice", "And you?", scene=scene, entity_snapshot="Facts.")
    assert again[0] == messages[0]
    own = build_system_prompt(BARTOK, scene=[SceneLine("Bartok", "Welcome!", npc="Bartok", at=1)])
    assert 'Bartok (you) said: "Welcome!"' in own


def test_the_players_words_end_the_prompt_so_a_prefill_on_a_partial_serves_the_turn() -> None:
    """The prompt prefilled on a partial ("Bartok, is it") is the turn's own prompt cut where
    the words go on: the server evaluates only the new words (and the chat template's tail)."""
    scene = [SceneLine("Alice", "Evening.", at=1), SceneLine("Bartok", "Aye.", npc="Bartok", at=2)]
    facts = "- Emberford (location): a river town."
    partial = build_messages(BARTOK, "Bob", "Bartok, is it", scene=scene, entity_snapshot=facts)
    final = build_messages(
        BARTOK, "Bob", "Bartok, is it raining outside?", scene=scene, entity_snapshot=facts
    )
    assert partial[0] == final[0]
    assert final[1]["content"] == partial[1]["content"] + " raining outside?"
    # Prefilled before Bob speaks: no trailing space, which would be a token of its own
    # where the turn has " Bartok".
    before = build_messages(BARTOK, "Bob", "", scene=scene)[1]["content"]
    assert before.endswith("Bob says to you:")
    assert build_messages(BARTOK, "Bob", "Hi.", scene=scene)[1]["content"] == before + " Hi."
    assert "Answer as Bartok." in partial[1]["content"]  # small models need it (npcs.context)


def test_scene_keeps_only_recent_lines() -> None:
    scene = [SceneLine("Alice", f"line {i}", at=i) for i in range(40)]
    prompt = build_system_prompt(BARTOK, scene=scene)
    assert "line 39" in prompt and "line 27" not in prompt


def test_the_configs_scene_budget_is_the_engines_default() -> None:
    """``providers.llm.options.scene_chars`` writes the number out (the config, which the
    speech stack reads, imports nothing from ``npcs``): a prompt built without the option
    and one built from the default config carry the same scene."""
    assert LlmOptions().scene_chars == MAX_SCENE_CHARS


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello there. How are you?", ["Hello there.", "How are you?"]),
        ("Mr. Smith paid 3.5 gold. Fine!", ["Mr. Smith paid 3.5 gold.", "Fine!"]),
        ('"Really?!" he asked. Yes.', ['"Really?!"', "he asked.", "Yes."]),
        (
            "J. R. R. Tolkien wrote it. Neither did I. End",
            ["J. R. R. Tolkien wrote it.", "Neither did I.", "End"],
        ),
        ("Wait... what? No", ["Wait...", "what?", "No"]),
        ("no terminator", ["no terminator"]),
    ],
)
def test_split_sentences(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def test_streaming_split_matches_whole_text_and_waits_for_what_follows() -> None:
    text = "It costs 3.5 gold. The ale is fresh! Want some?"
    splitter = SentenceSplitter()
    streamed: list[str] = []
    for char in text:
        streamed += splitter.push(char)
    rest = splitter.flush()
    assert [*streamed, rest] == split_sentences(text)
    # "3." alone is not a sentence yet: it may become "3.5".
    assert SentenceSplitter().push("It costs 3.") == []


def test_the_scene_window_keeps_the_prompt_prefix_for_several_turns() -> None:
    """Once the scene is full, ``render_scene`` alone starts the transcript elsewhere every
    second turn (the prompt's cached prefix is lost there: ~1,200 characters to evaluate
    again); the table's window stays put until it must, then keeps a third, so it moves half
    as often, each move costs a third, and it moves with an answer, not a player's line."""
    window = SceneWindow()
    scene: list[SceneLine] = []
    starts: list[str] = []
    plain_starts: list[str] = []
    for turn in range(24):
        question = SceneLine("Arin", f"Bartok, what about ale {turn}?", at=turn, seq=2 * turn)
        answer = f"Ale {turn}: " + "the dark ale is on tap tonight, friend. " * 4  # 168 chars
        before = window.start
        scene.append(question)
        window.advance(scene)
        assert window.start == before  # it moves with answers: their reply's prefill follows
        scene.append(SceneLine("Bartok", answer, npc="Bartok", at=turn + 0.5, seq=2 * turn + 1))
        window.advance(scene)
        shown = render_scene(window.shown(scene), "Bartok")
        assert len(shown) <= MAX_SCENE_CHARS and shown.count("\n") < 12
        assert shown.endswith(f'Bartok (you) said: "{answer.strip()}"')
        starts.append(shown.split("\n")[0])
        plain_starts.append(render_scene(scene, "Bartok").split("\n")[0])
    moves = sum(a != b for a, b in itertools.pairwise(starts))
    plain_moves = sum(a != b for a, b in itertools.pairwise(plain_starts))
    assert moves <= 5 and plain_moves >= 9  # every fourth or fifth turn, against every second
