"""``glyphoxa bench words``: its corpus, its judge, and the whole corpus played on a capable
model (the scripted server that calls tools properly), through the real tools, memory,
address detection and engines. The embedded model's run is the benchmark's (minutes)."""

from __future__ import annotations

import pytest

from bot.bench.doubles.capable_llm import CapableLlm
from bot.bench.words import GOALS, play_corpus
from bot.bench.words_corpus import (
    WORDS_CORPUS,
    Answer,
    WordsLine,
    judge,
    load_words_corpus,
    prompt_ngrams,
)
from campaigns.basics import Tier
from npcs.campaign import load_campaign
from npcs.schema import NpcDefinition

SAGE = NpcDefinition(name="Ilse", personality="A keeper.", tools=["search_facts", "roll"])
TEMPLATE = prompt_ngrams([SAGE])


def test_the_corpus_has_80_lines_in_three_campaigns_that_load() -> None:
    corpus = load_words_corpus()
    assert len(corpus) >= 3 and sum(len(lines) for lines in corpus.values()) >= 80
    for name, lines in corpus.items():
        campaign = load_campaign(WORDS_CORPUS / name)
        assert campaign.path.name != "example"
        for line in lines:
            assert line.npc is None or line.npc in campaign.npcs, line
    kinds = {line.kind for lines in corpus.values() for line in lines}
    assert {"roll", "no_roll", "world", "talked_about", "misheard"} <= kinds


def _answer(kind: str, spoken: str, **extra: object) -> Answer:
    line = WordsLine("x", "Mara", "Ilse, what happened at the lighthouse?", "Ilse", kind,
                     roll=str(extra.pop("roll", "")) or None)  # fmt: skip
    answer = Answer(line, ["Ilse"], npc=SAGE, tier=Tier.STANDARD, spoken=spoken, budget_words=30)
    for key, value in extra.items():
        setattr(answer, key, value)
    return answer


@pytest.mark.parametrize(
    ("spoken", "flag"),
    [
        ("What happened at the lighthouse, you ask?", "echo"),
        ("Mara: the lamp went dark.", "leak"),
        ("Speaking out loud to the players: the lamp went dark.", "leak"),
        ("you said:", "leak"),
        ("As an AI, I cannot know.", "broken character"),
        ("The lamp went dark. *sighs*", "markup"),
        ("The lamp went dark 🌊", "markup"),
        (" ".join(["word"] * 31), "over budget"),
    ],
)
def test_the_judge_catches_what_must_never_be_spoken(spoken: str, flag: str) -> None:
    verdict = judge(_answer("chat", spoken), TEMPLATE, ["Mara", "Ilse"])
    assert flag in verdict.why


def test_the_judge_hears_an_earlier_line_said_back() -> None:
    earlier = ["What happened at the lighthouse last winter?"]
    said_back = _answer("chat", "Aye. What happened at the lighthouse last winter?")
    assert "echo" in judge(said_back, TEMPLATE, [], earlier).why
    answered = _answer("chat", "The lighthouse went dark last winter, and stayed dark.")
    assert "echo" not in judge(answered, TEMPLATE, [], earlier).why


def test_the_judge_wants_the_roll_made_and_its_number_said() -> None:
    result = '{"total": 14, "rolls": [14]}'
    rolled = _answer("roll", "That's a 14. Luck!", roll="1d20",
                     tools=[("roll", {"expression": "1d20"}, result)])  # fmt: skip
    unsaid = _answer("roll", "Luck!", roll="1d20",
                     tools=[("roll", {"expression": "1d20"}, result)])  # fmt: skip
    assert judge(rolled, TEMPLATE, []).rolled is True
    assert judge(unsaid, TEMPLATE, []).rolled is False


def test_the_judge_wants_a_world_question_looked_up_and_grounded() -> None:
    fact = '{"results": [{"text": "Grey Gull: the lamp went dark during the storm."}]}'
    looked = _answer("world", "The storm put the lamp out.", retrieved=[fact],
                     tools=[("search_facts", {"query": "lighthouse"}, fact)])  # fmt: skip
    ignored = _answer("world", "I like fish.")
    assert (judge(looked, TEMPLATE, []).consulted, judge(looked, TEMPLATE, []).grounded) == (
        True,
        True,
    )
    assert (judge(ignored, TEMPLATE, []).consulted, judge(ignored, TEMPLATE, []).grounded) == (
        False,
        False,
    )


@pytest.mark.slow
async def test_the_whole_corpus_on_a_capable_model_meets_every_goal() -> None:
    async with CapableLlm() as llm:
        run = await play_corpus(llm.base_url, "capable")
    assert len(run.answers) >= 80
    for measure, (goal, passes) in GOALS.items():
        rate, count = run.rate(measure)
        assert count and passes(rate), (measure, goal, rate, run.misses(measure))
    rate, _ = run.rate("address accuracy")
    assert rate >= 0.95, run.misses("address accuracy")
