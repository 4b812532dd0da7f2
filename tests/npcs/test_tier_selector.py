"""Tier selection as DESIGN.md section 4: precedence, phrases with inflections, overrides."""

from __future__ import annotations

import pytest

from bot.config import TiersConfig
from campaigns.errors import GlyphoxaError
from npcs.schema import NpcDefinition
from npcs.tier_selector import TierSelector, compile_phrases, parse_duration
from tools.tiers import Tier

SAGE = NpcDefinition(name="Greymantle", personality="x", budget_tier="deep")
BARKEEP = NpcDefinition(name="Bartok", personality="x", budget_tier="fast")


def warmed(selector: TierSelector, npc: NpcDefinition, now: float = 0.0) -> TierSelector:
    """Mark the conversation as already going, so the first-turn rule does not apply."""
    decision = selector.select("hello", npc=npc, now=now)
    selector.commit(decision, npc=npc.name, now=now)
    return selector


@pytest.mark.parametrize(
    ("text", "tier", "phrase"),
    [
        ("Do you remember the crates from last session?", Tier.DEEP, "remember"),
        ("You remembered my name!", Tier.DEEP, "remembered"),
        ("Can you recall who hired you?", Tier.DEEP, "recall"),
        ("What happened last time we were here?", Tier.DEEP, "last time"),
        (
            "Tell me everything you know about the Shadowfell conspiracy",
            Tier.DEEP,
            "tell me everything",
        ),
        ("What are the rules for grappling a dragon?", Tier.DEEP, "what are the rules for"),
        ("How does counterspell work exactly?", Tier.DEEP, "how does counterspell work"),
        ("Could you look up the history of Emberford?", Tier.DEEP, "look up"),
        ("I need you to research the black candle", Tier.DEEP, "research"),
        ("Roll a d20 for me", Tier.STANDARD, "roll"),
        ("Who is the mayor of this town?", Tier.STANDARD, "who is"),
        ("Where’s the temple?", Tier.STANDARD, "where’s"),
        ("How much for a room?", Tier.STANDARD, "how much"),
        ("Heard any rumours lately?", Tier.STANDARD, "rumours"),
        ("Another ale please", Tier.FAST, None),
        ("Thanks, friend!", Tier.FAST, None),
    ],
)
def test_phrases(text: str, tier: Tier, phrase: str | None) -> None:
    selector = warmed(TierSelector(TiersConfig()), SAGE)
    decision = selector.select(text, npc=SAGE, now=10)
    assert (decision.tier, decision.phrase) == (tier, phrase)
    if phrase:
        assert decision.reason == f"phrase '{phrase}'"


def test_precedence_order() -> None:
    selector = warmed(TierSelector(TiersConfig()), SAGE)
    # queue depth beats STANDARD phrases but not DEEP phrases
    assert selector.select("who is that?", npc=SAGE, queue_depth=3, now=1).tier == Tier.FAST
    decision = selector.select("who is that?", npc=SAGE, queue_depth=3, now=1)
    assert decision.reason == "queue depth 3"
    assert selector.select("remember me?", npc=SAGE, queue_depth=5, now=1).tier == Tier.DEEP
    assert selector.select("who is that?", npc=SAGE, queue_depth=2, now=1).tier == Tier.STANDARD
    # DM override beats everything
    selector.set_override("fast", now=1)
    decision = selector.select("tell me everything", npc=SAGE, now=2)
    assert (decision.tier, decision.override) == (Tier.FAST, True)
    assert decision.reason.startswith("DM override fast for all NPCs")


def test_first_turn_of_a_conversation_is_standard() -> None:
    selector = TierSelector(TiersConfig(continuation_window_s=30))
    first = selector.select("Good evening", npc=SAGE, now=0)
    assert (first.tier, first.reason) == (Tier.STANDARD, "first turn of the conversation")
    selector.commit(first, npc="Greymantle", now=0)
    assert selector.select("Nice hat", npc=SAGE, now=10).tier == Tier.FAST
    # After a long silence, a new conversation starts.
    assert selector.select("Hello again", npc=SAGE, now=100).tier == Tier.STANDARD
    assert selector.select("Hi", npc=SAGE, now=10, first_turn=False).tier == Tier.FAST


def test_second_deep_within_interval_is_demoted() -> None:
    selector = warmed(TierSelector(TiersConfig(deep_interval_s=30)), SAGE)
    first = selector.select("Do you remember the war?", npc=SAGE, now=10)
    assert first.tier == Tier.DEEP
    # Partials are pure: selecting again before commit is still DEEP.
    assert selector.select("Do you remember the war?", npc=SAGE, now=11).tier == Tier.DEEP
    selector.commit(first, npc=SAGE.name, now=10)
    second = selector.select("And do you recall the plague?", npc=SAGE, now=25)
    assert second.tier == Tier.STANDARD
    assert "demoted" in second.reason
    assert selector.select("Do you recall the flood?", npc=SAGE, now=41).tier == Tier.DEEP


def test_budget_caps_the_selected_tier_and_override_lifts_it() -> None:
    selector = warmed(TierSelector(TiersConfig()), BARKEEP)
    decision = selector.select("Do you remember me?", npc=BARKEEP, now=1)
    assert (decision.selected, decision.tier, decision.capped) == (Tier.DEEP, Tier.FAST, True)
    assert decision.reason == "phrase 'remember'; capped by budget fast"
    selector.set_override("deep", npc="Bartok", duration_s="5m", now=1)
    lifted = selector.select("Another ale", npc=BARKEEP, now=2)
    assert lifted.tier == Tier.DEEP
    assert lifted.reason == "DM override deep for Bartok, 299s left"
    # The per-NPC override does not touch others, and it expires.
    assert selector.select("Another ale", npc=SAGE, now=2).override is False
    assert selector.select("Another ale", npc=BARKEEP, now=302).tier == Tier.FAST


def test_auto_clears_overrides() -> None:
    selector = TierSelector(TiersConfig())
    selector.set_override("deep", now=0)
    selector.set_override("fast", npc="Bartok", now=0)
    assert selector.select("hi", npc=BARKEEP, now=1).tier == Tier.FAST
    assert selector.select("hi", npc=SAGE, now=1).tier == Tier.DEEP
    selector.set_override("auto", npc="Bartok", now=1)
    assert selector.select("hi", npc=BARKEEP, now=1).reason.startswith("DM override deep")
    selector.set_override("auto", now=1)
    assert selector.select("hi", npc=SAGE, now=1).override is False


def test_custom_phrase_lists_and_syntax() -> None:
    config = TiersConfig(
        deep_phrases=["consult the oracle"],
        extra_standard_phrases=["barter|haggle", "how many * cost"],
    )
    selector = warmed(TierSelector(config), SAGE)
    assert selector.select("let us consult the oracle", npc=SAGE, now=1).tier == Tier.DEEP
    assert selector.select("do you remember", npc=SAGE, now=1).tier == Tier.FAST  # replaced
    assert selector.select("I want to haggle", npc=SAGE, now=1).tier == Tier.STANDARD
    assert selector.select("we were haggling", npc=SAGE, now=1).tier == Tier.STANDARD
    assert selector.select("how many arrows cost", npc=SAGE, now=1).tier == Tier.STANDARD
    assert compile_phrases([]).search("anything") is None


def test_whole_words_only() -> None:
    selector = warmed(TierSelector(TiersConfig()), SAGE)
    assert selector.select("the scroll is old", npc=SAGE, now=1).tier == Tier.FAST  # not "roll"
    assert selector.select("a controller", npc=SAGE, now=1).tier == Tier.FAST


def test_bad_override_and_duration_are_clear_errors() -> None:
    selector = TierSelector(TiersConfig())
    with pytest.raises(GlyphoxaError, match="unknown tier"):
        selector.set_override("turbo", now=0)
    with pytest.raises(GlyphoxaError, match="30s, 5m or 1h"):
        parse_duration("soon")
    assert parse_duration("5m") == 300
    assert parse_duration("90") == 90
    assert parse_duration(None) is None
