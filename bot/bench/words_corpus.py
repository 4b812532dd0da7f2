"""The labelled lines of ``glyphoxa bench words`` and how each NPC answer is judged.

The corpus (``words_corpus/lines.yaml``) is three campaigns' worth of table talk (the folders
beside it, not the example campaign), each line labelled with who must answer and what the
table must do (roll, look up). :func:`judge` reads what an NPC actually said and did, with its
own rules, written from the issue's definitions rather than from clean speech's code, so the
benchmark can catch what clean speech lets through:

- echo: a spoken sentence repeats four words in a row of the player's line, or is mostly (six
  words in ten) four-word runs of one of the players' earlier lines, said back;
- leak: a role or speaker label ("Arin:", "The player:"), or four words in a row of the
  prompt's own wording (the template Glyphoxa writes around the DM's text);
- broken character: "AI", "language model", "assistant", "chatbot" and the like;
- markup: emoji, markdown or a stage direction in what is spoken;
- over budget: more words than the tier's spoken budget;
- rolled: a roll asked for ran the dice tool with that expression and the total was spoken;
- consulted: a world question at STANDARD or DEEP searched campaign memory or the rules;
- grounded: the answer shares a content word with what was retrieved for it (the searches'
  results and the campaign facts in the prompt), not counting the player's own words;
- talked-about line answered: a line labelled ``nobody`` got an NPC's answer.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from campaigns.basics import GlyphoxaError, Tier
from npcs.context import build_messages, build_system_prompt
from npcs.schema import NpcDefinition

__all__ = [
    "WORDS_CORPUS",
    "Answer",
    "Verdict",
    "WordsLine",
    "judge",
    "load_words_corpus",
    "prompt_ngrams",
]

WORDS_CORPUS = Path(__file__).with_name("words_corpus")
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_NGRAM = 4
_SENTENCES = re.compile(r"(?<=[.!?])\s+")
_ECHO_RUN = 4
_LABEL = re.compile(
    r"(?:^|[.!?]\s+|\n)\s*(?:the\s+)?(?:player|user|assistant|npc|narrator|system|dm|gm|"
    r"[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)\s*(?:\([^)]*\))?\s*:",
)
_BROKEN = re.compile(
    r"\bAI\b|\bA\.I\.|language model|chat ?bot|\bassistant\b|\bLLM\b|openai|"
    r"artificial intelligence|as a (?:bot|program)",
    re.IGNORECASE,
)
_MARKUP = re.compile(r"[*#`_~\[\]{}<>|]|\(\s*\w+(?:\s+\w+){0,4}\s*\)")
_STOP = frozenset(
    """a an and are as at be but by can could did do does for from had has have he her here him
    his how i if in into is it its just me my no not of on or our she so than that the their them
    then there these they this to us was we were what when where which who whom why will with
    would you your about tell know yes aye well said says say one all any some very much more
    been being over only also too like good time just old""".split()
)


@dataclass(frozen=True, slots=True)
class WordsLine:
    """One labelled line: who says it, what, and what must happen."""

    campaign: str
    speaker: str
    text: str
    npc: str | None
    """Who must answer; None: nobody (table talk, a name only talked about)."""
    kind: str
    roll: str | None = None
    tier: Tier | None = None
    after_s: float = 6.0


@dataclass(slots=True)
class Answer:
    """What happened at the table for one line: who answered, what was spoken, what ran."""

    line: WordsLine
    answered: list[str]
    npc: NpcDefinition | None = None
    tier: Tier = Tier.FAST
    spoken: str = ""
    tools: list[tuple[str, dict[str, Any], str]] = field(default_factory=list)
    """(tool, arguments, result text) of every call of the turn, the table's and the model's."""
    retrieved: list[str] = field(default_factory=list)
    """What the prompt was given to ground the answer: search results and campaign facts."""
    budget_words: int | None = None
    repairs: dict[str, int] = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    """The judgement of one answer; None where a measure does not apply to the line."""

    address_ok: bool
    talked_about_answered: bool | None
    echo: bool | None
    leak: bool | None
    broken: bool | None
    markup: bool | None
    over_budget: bool | None
    rolled: bool | None
    consulted: bool | None
    grounded: bool | None
    why: tuple[str, ...] = ()


def load_words_corpus(path: Path = WORDS_CORPUS / "lines.yaml") -> dict[str, list[WordsLine]]:
    """The corpus as campaign folder name -> its lines in order."""
    try:
        raw = yaml.safe_load(path.read_text())
        corpus: dict[str, list[WordsLine]] = {}
        for campaign, scene in raw["campaigns"].items():
            corpus[campaign] = [_line(campaign, item) for item in scene["lines"]]
    except (OSError, KeyError, TypeError, ValueError, yaml.YAMLError) as error:
        raise GlyphoxaError(f"{path}: not a words corpus ({error})") from None
    return corpus


def _line(campaign: str, item: dict[str, Any]) -> WordsLine:
    npc = item["npc"]
    tier = item.get("tier")
    return WordsLine(
        campaign=campaign,
        speaker=item["speaker"],
        text=item["text"],
        npc=None if npc == "nobody" else npc,
        kind=item["kind"],
        roll=item.get("roll"),
        tier=Tier.parse(tier) if tier else None,
        after_s=float(item.get("after_s", 6.0)),
    )


def prompt_ngrams(npcs: Iterable[NpcDefinition]) -> set[tuple[str, ...]]:
    """Four-word runs of the wording Glyphoxa writes around the DM's text in a prompt (a
    marker stands where the DM's text, the scene and the player's words go)."""
    marker = "qqmark"
    grams: set[tuple[str, ...]] = set()
    for npc in npcs:
        dummy = npc.model_copy(
            update={
                "personality": marker,
                "knowledge_scope": [marker],
                "secret_knowledge": [marker],
                "behavior_rules": [marker],
                "example_lines": [marker],
                "aliases": [marker],
            }
        )
        texts = [build_system_prompt(dummy, has_tools=True)]
        for message in build_messages(
            dummy, marker, marker, entity_snapshot=marker, direction=marker, has_tools=True
        ):
            texts.append(str(message["content"]))
        for text in texts:
            words = _words(text.replace(npc.name, marker))
            for i in range(len(words) - _NGRAM + 1):
                gram = tuple(words[i : i + _NGRAM])
                if marker not in gram:
                    grams.add(gram)
    return grams


def judge(
    answer: Answer,
    template: set[tuple[str, ...]],
    speakers: Sequence[str],
    earlier: Sequence[str] = (),
) -> Verdict:
    """The verdict on one line's answer (``speakers``: everyone at the table, for labels;
    ``earlier``: the players' lines before this one)."""
    line = answer.line
    expected = [line.npc] if line.npc else []
    address_ok = answer.answered[:1] == expected
    talked = line.npc is None
    if not answer.answered or answer.npc is None:
        return Verdict(
            address_ok, False if talked else None, None, None, None, None, None, None, None, None
        )
    why: list[str] = []
    spoken = answer.spoken
    words = _words(spoken)
    run = min(_ECHO_RUN, max(3, len(_words(line.text))))
    echo = any(
        _shares_run(_words(said), _words(line.text), run)
        or any(_said_back(_words(said), _words(before)) for before in earlier)
        for said in _SENTENCES.split(spoken)
    )
    leak = _labelled(spoken, speakers) or _shares_template(words, template)
    broken = _BROKEN.search(spoken) is not None
    markup = _MARKUP.search(spoken) is not None or any(_emoji(ch) for ch in spoken)
    budget = answer.budget_words
    over = budget is not None and len(words) > budget  # spoken words: a dash is none
    rolled = _rolled(answer) if line.kind == "roll" else None
    if line.kind == "no_roll":
        rolled = not any(name == "roll" for name, _, _ in answer.tools)
    consulted = grounded = None
    if line.kind == "world" and answer.tier >= Tier.STANDARD and _can_search(answer.npc):
        consulted = any(name.startswith(("search_", "get_rule")) for name, _, _ in answer.tools)
        grounded = _grounded(words, answer.retrieved, line.text, answer.npc)
    for name, flag in (("echo", echo), ("leak", leak), ("broken character", broken),
                       ("markup", markup), ("over budget", over)):  # fmt: skip
        if flag:
            why.append(name)
    if rolled is False:
        why.append("roll not made or not spoken" if line.kind == "roll" else "rolled unasked")
    if consulted is False:
        why.append("memory not consulted")
    return Verdict(
        address_ok, bool(answer.answered) if talked else None, echo, leak, broken, markup,
        over, rolled, consulted, grounded, tuple(why),
    )  # fmt: skip


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("’", "'"))


def _shares_run(said: list[str], heard: list[str], run: int) -> bool:
    if len(heard) < run or run < 1:
        return False
    grams = {tuple(heard[i : i + run]) for i in range(len(heard) - run + 1)}
    return any(tuple(said[i : i + run]) in grams for i in range(len(said) - run + 1))


def _said_back(said: list[str], before: list[str]) -> bool:
    """Six words in ten of ``said`` lie in runs of four of ``before``."""
    if len(said) < _ECHO_RUN or len(before) < _ECHO_RUN:
        return False
    grams = {tuple(before[i : i + _ECHO_RUN]) for i in range(len(before) - _ECHO_RUN + 1)}
    inside = [False] * len(said)
    for i in range(len(said) - _ECHO_RUN + 1):
        if tuple(said[i : i + _ECHO_RUN]) in grams:
            inside[i : i + _ECHO_RUN] = [True] * _ECHO_RUN
    return sum(inside) >= 0.6 * len(said)


def _shares_template(words: list[str], template: set[tuple[str, ...]]) -> bool:
    return any(tuple(words[i : i + _NGRAM]) in template for i in range(len(words) - _NGRAM + 1))


def _labelled(spoken: str, speakers: Sequence[str]) -> bool:
    if spoken.rstrip().endswith(":"):
        return True  # "you said:": a label whose line was cut
    if any(f"{name.lower()}:" in spoken.lower() for name in speakers):
        return True
    return _LABEL.search(spoken) is not None


def _emoji(ch: str) -> bool:
    return unicodedata.category(ch) == "So" or 0x1F000 <= ord(ch) <= 0x1FAFF


def _rolled(answer: Answer) -> bool:
    """The roll ran with the labelled expression and its total is in what was spoken."""
    for name, arguments, result in answer.tools:
        if name != "roll" or arguments.get("expression") != answer.line.roll:
            continue
        total = re.search(r'"total":\s*(-?\d+)', result)
        if total and re.search(rf"\b{total.group(1)}\b", answer.spoken):
            return True
    return False


def _can_search(npc: NpcDefinition) -> bool:
    return any(tool.startswith("search_") for tool in npc.tools)


def _grounded(words: list[str], retrieved: list[str], heard: str, npc: NpcDefinition) -> bool:
    """A content word of the answer stands in what was retrieved, and not in the question or
    the NPC's own name."""
    ignore = set(_words(heard)) | set(_words(" ".join(npc.names()))) | _STOP
    facts = set(_words(" ".join(retrieved))) - ignore
    return any(word in facts for word in words if len(word) > 3)
