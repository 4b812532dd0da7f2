"""Tier selection as the tier map says: precedence, phrases with inflections, overrides."""

from __future__ import annotations

import pytest

from bot.settings.config import TiersConfig
from campaigns.basics import GlyphoxaError, Tier
from npcs.schema import NpcDefinition
from npcs.tier_selector import TierSelector, compile_phrases, parse_duration

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
        # DEEP: explicit deliberation or slow work
        ("Think carefully before you answer.", Tier.DEEP, "think carefully"),
        ("take your time with this one", Tier.DEEP, "take your time"),
        ("Mull it over, no rush.", Tier.DEEP, "mull it over"),
        ("Tell me everything you know about the Shadowfell", Tier.DEEP, "tell me everything"),
        ("Explain the ritual in great detail", Tier.DEEP, "in great detail"),
        ("Give me every detail.", Tier.DEEP, "every detail"),
        ("Do a deep search on the Black Candle", Tier.DEEP, "deep search"),
        ("Search the web for tide tables", Tier.DEEP, "search the web"),
        ("Look it up online.", Tier.DEEP, "online"),
        ("Draw me a sketch of the docks", Tier.DEEP, "draw me a sketch"),
        ("Can you generate an image of our ship?", Tier.DEEP, "generate an image"),
        ("Don’t rush, think it over.", Tier.DEEP, "don’t rush"),
        ("Do you remember the war? Think carefully.", Tier.DEEP, "think carefully"),  # later
        ("Who was the king, in detail", Tier.DEEP, "in detail"),
        # STANDARD: the past, rules and lore
        ("Do you remember the blacksmith?", Tier.STANDARD, "remember"),
        ("You remembered my name!", Tier.STANDARD, "remembered"),
        ("What happened last time we were here?", Tier.STANDARD, "what happened"),
        ("What are the rules for grappling?", Tier.STANDARD, "rules"),
        ("How does counterspell work exactly?", Tier.STANDARD, "how does counterspell work"),
        ("Who is the mayor of this town?", Tier.STANDARD, "who is"),
        ("Tell me about the Black Candle.", Tier.STANDARD, "tell me about"),
        ("Could you look it up?", Tier.STANDARD, "look it up"),
        ("Heard any rumours lately?", Tier.STANDARD, "rumours"),
        # FAST: talk, prices, haggling, dice
        ("Can you roll a d20?", Tier.FAST, None),
        ("What do I owe you?", Tier.FAST, None),
        ("How much for a room?", Tier.FAST, None),
        ("Thanks, friend!", Tier.FAST, None),
    ],
)
def test_phrases(text: str, tier: Tier, phrase: str | None) -> None:
    selector = warmed(TierSelector(TiersConfig()), SAGE)
    decision = selector.select(text, npc=SAGE, now=10)
    assert (decision.tier, decision.phrase) == (tier, phrase)
    if phrase:
        assert decision.reason == f"{tier.label.upper()} phrase '{phrase}'"


@pytest.mark.parametrize(
    ("text", "tier", "reason"),
    [
        ("Don't think too hard, just tell me.", Tier.FAST, "default"),
        ("dont take your time, how much", Tier.FAST, "default"),
        ("You don't have to explain everything.", Tier.FAST, "default"),
        ("No need to go into detail, who is she?", Tier.STANDARD, "STANDARD phrase 'who is'"),
        ("Skip the deep search. Do you remember me?", Tier.STANDARD, "STANDARD phrase 'remember'"),
        # a negation in another clause, or a suggestion, does not undo the request
        ("I don't know. Take your time.", Tier.DEEP, "DEEP phrase 'take your time'"),
        ("Why don't you think it over?", Tier.DEEP, "DEEP phrase 'think it over'"),
    ],
)
def test_negations(text: str, tier: Tier, reason: str) -> None:
    selector = warmed(TierSelector(TiersConfig()), SAGE)
    decision = selector.select(text, npc=SAGE, now=10)
    assert (decision.tier, decision.reason) == (tier, reason)


def test_precedence_order() -> None:
    selector = warmed(TierSelector(TiersConfig()), SAGE)
    # queue depth beats STANDARD phrases but not DEEP phrases
    decision = selector.select("who is that?", npc=SAGE, queue_depth=3, now=1)
    assert (decision.tier, decision.reason, decision.rule) == (
        Tier.FAST,
        "queue depth 3",
        "queue_depth",
    )
    deep = selector.select("think hard about it", npc=SAGE, queue_depth=5, now=1)
    assert (deep.tier, deep.rule) == (Tier.DEEP, "deep_phrase")
    assert selector.select("who is that?", npc=SAGE, queue_depth=2, now=1).tier == Tier.STANDARD
    # DM override beats everything
    selector.set_override("fast", now=1)
    decision = selector.select("tell me everything", npc=SAGE, now=2)
    assert (decision.tier, decision.override, decision.rule) == (Tier.FAST, True, "dm_override")
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
    first = selector.select("Think hard about the war", npc=SAGE, now=10)
    assert first.tier == Tier.DEEP
    # Partials are pure: selecting again before commit is still DEEP.
    assert selector.select("Think hard about the war", npc=SAGE, now=11).tier == Tier.DEEP
    selector.commit(first, npc=SAGE.name, now=10)
    second = selector.select("And take your time with the plague", npc=SAGE, now=25)
    assert second.tier == Tier.STANDARD
    assert second.reason == "DEEP phrase 'take your time' demoted: DEEP 15s ago"
    assert selector.select("Tell me everything about the flood", npc=SAGE, now=41).tier == Tier.DEEP


def test_budget_caps_the_selected_tier_and_override_lifts_it() -> None:
    selector = warmed(TierSelector(TiersConfig()), BARKEEP)
    decision = selector.select("Think carefully, please", npc=BARKEEP, now=1)
    assert (decision.selected, decision.tier, decision.capped) == (Tier.DEEP, Tier.FAST, True)
    assert decision.reason == "DEEP phrase 'think carefully'; capped by budget fast"
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
    assert selector.select("take your time", npc=SAGE, now=1).tier == Tier.FAST  # replaced
    assert selector.select("I want to haggle", npc=SAGE, now=1).tier == Tier.STANDARD
    assert selector.select("we were haggling", npc=SAGE, now=1).tier == Tier.STANDARD
    assert selector.select("how many arrows cost", npc=SAGE, now=1).tier == Tier.STANDARD
    assert compile_phrases([]).search("anything") is None


def test_whole_words_only() -> None:
    selector = warmed(TierSelector(TiersConfig()), SAGE)
    assert selector.select("the recalled item", npc=SAGE, now=1).tier == Tier.STANDARD
    assert selector.select("a rulers edge", npc=SAGE, now=1).tier == Tier.FAST  # not "rule"
    assert selector.select("a searchlight", npc=SAGE, now=1).tier == Tier.FAST  # not "search"


def test_bad_override_and_duration_are_clear_errors() -> None:
    selector = TierSelector(TiersConfig())
    with pytest.raises(GlyphoxaError, match="unknown tier"):
        selector.set_override("turbo", now=0)
    with pytest.raises(GlyphoxaError, match="30s, 5m or 1h"):
        parse_duration("soon")
    assert parse_duration("5m") == 300
    assert parse_duration("90") == 90
    assert parse_duration(None) is None


def test_explain_names_the_rule_and_the_list_entry() -> None:
    selector = warmed(TierSelector(TiersConfig()), SAGE)
    decision, lines = selector.explain(
        "Don't think too hard, just tell me about the mill", npc=SAGE, now=5
    )
    assert (decision.tier, decision.rule) == (Tier.STANDARD, "standard_phrase")
    assert lines[0] == "1. DM override: none"
    assert "'think too hard'" in lines[1] and "negated by 'don't'" in lines[1]
    assert "'think * carefully|hard|harder|deeply|properly|thoroughly'" in lines[1]
    assert lines[3].startswith("4. STANDARD phrase: 'tell me about' (list entry 'tell me|us")
    assert lines[3].endswith("<- decided")
    assert sum("<- decided" in line for line in lines) == 1
    decision, lines = selector.explain("Think carefully", npc=BARKEEP, now=5, first_turn=True)
    assert decision.capped and lines[-1] == "budget: Bartok's budget_tier fast caps it"
