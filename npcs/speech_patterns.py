"""The patterns clean speech reads a model's line with (``npcs.clean_speech``): labels, prompt
scaffolding, broken character, markup and stage directions, echoes, and Glyphoxa's own prompt
wording, whose runs in a spoken line are the prompt leaking into speech. Kept apart from the
cleaner so each reads on its own; the words benchmark judges with rules of its own.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import get_args

from campaigns.content import EntityType
from npcs.context import prompt_wording

__all__ = [
    "BRACKETED",
    "BROKEN",
    "BROKEN_ANY_CASE",
    "DANGLING",
    "DICE",
    "ECHO_RUN",
    "ECHO_SHARE",
    "FACT_LABEL",
    "FACT_TAGS",
    "LINK",
    "MARKDOWN",
    "MIN_KEPT_WORDS",
    "NAME_LABEL",
    "NESTED_LABEL",
    "NUMBER",
    "OPENERS",
    "REPEAT_RUN",
    "REPEAT_SHARE",
    "ROLE_LABEL",
    "SCAFFOLDING",
    "SENTENCE_END",
    "SPACES",
    "STARRED",
    "TEMPLATE_GRAMS",
    "TEMPLATE_HEADS",
    "TEMPLATE_RUN",
    "URL",
    "covered_words",
    "cut_words",
    "is_emoji",
    "shared_runs",
    "tidy",
    "word_runs",
    "words_of",
]

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
#: Consecutive words of the player's line that make an echo (fewer if the line is shorter).
ECHO_RUN = 4
#: A piece whose words are this much an echo is dropped whole rather than cut.
ECHO_SHARE = 0.4
#: Consecutive words of a line already said at the table that make a piece a copy of it.
REPEAT_RUN = 5
#: A piece whose words are this much copied from lines already said is not said again.
REPEAT_SHARE = 0.6
#: A repaired piece needs this many words left to be worth saying.
MIN_KEPT_WORDS = 2

_OTHER_ROLES = (
    r"(?:the\s+)?(?:player|players|user|human|dm|gm|game\s*master|narrator|system|speaker)"
)
_OWN_ROLES = (
    r"(?:the\s+)?(?:assistant|npc|character|bot|ai|model|response|reply|answer|output)|[A-Z]"
)
ROLE_LABEL = re.compile(
    rf"(?:^|(?<=[\s\"'(]))(?:({_OTHER_ROLES})|{_OWN_ROLES})(?:\s*\([^)]{{0,40}}\))?\s*:", re.I
)
#: "Quil: ..." or "Frostfang Pass: ...": one to three capitalised words and a colon, where a
#: line or sentence begins: a speaker's label the model made up (or a fact's name as a label).
NAME_LABEL = re.compile(r"(?:^|(?<=[.!?]\s))\s*[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*){0,2}\s*:(?=\s|$)")
#: "Arin (Greymantle: ..." or "Bartok (you):": a name and a bracketed label opening a line.
NESTED_LABEL = re.compile(
    r"\b[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*){0,3}\s*\(\s*([\w' ]{1,40}?)\s*(?::|\)\s*:)"
)
#: What stands in brackets after a name in the prompt's own labels: "(you)" and the kinds of
#: the campaign facts ("- The Old Mill (location): ..."), which models copy as a label.
FACT_TAGS = frozenset(
    ["you", *get_args(EntityType), *(kind.replace("_", " ") for kind in get_args(EntityType))]
)
#: "The Old Mill (location):" as the campaign facts are written: the fact's name is kept.
FACT_LABEL = re.compile(
    r"\s*\(\s*(?:" + "|".join(sorted(FACT_TAGS - {"you"}, key=len, reverse=True)) + r")\s*\)\s*:",
    re.IGNORECASE,
)
SCAFFOLDING = re.compile(
    r"answer as\b|says to you|said to you|what was just said|oldest first|"
    r"facts from the campaign|campaign notes|rules you follow|who you are:|people also call you|"
    r"secrets you keep|private direction|game master|in character|out of character|"
    r"stay(?:ing)? in character|one to three|short spoken|spoken sentences?|stage directions?|"
    r"\bmarkdown\b|players at the table|table-?top|role-?play|\(you\)|\bthe player\b|"
    r"(?:you(?:'re| are)|i(?:'m| am)) (?:speaking|talking) (?:to|with)\b|"
    r"you(?:'re| are) asked to\b|\byou say to\b|\b(?:use|using|with) your tools\b|"
    r"\banswer (?:their|the players'?|the user'?s?) questions\b|\b(?:responds|replies)\b|"
    r"continue speaking|same reply|system prompt|\bprompt\b|"
    r"(?:my|the|your|these) instructions? (?:say|says|are|is|tell)|"
    r"(?:make|keep) (?:it|this|my (?:answer|reply|response)) (?:concise|short|brief)|"
    r"\bconcise\b|avoid mentioning|as requested|here(?:'s| is) (?:my|a|the) "
    r"(?:response|reply|answer|line)|\bthe user\b|\bthe assistant\b|as an npc|"
    r"what you recall|dice were (?:just )?rolled|react to (?:it|the roll)|"
    r"i (?:will|'ll) (?:respond|reply|answer)|my (?:response|reply) (?:is|would be)|"
    r"ready to (?:continue|proceed)\b|\bno (?:information|results?|data) (?:is |are )?"
    r"(?:available|found)",
    re.IGNORECASE,
)
BROKEN = re.compile(
    r"\b(?:AI|A\.I\.)(?=\W|$)|artificial intelligence|language model|\bLLM\b|chat\s?bot|"
    r"virtual assistant|\bopenai\b|\bchatgpt\b|\b(?:an?|the|your) assistant\b|"
    r"computer program|my training|knowledge cut-?off|i (?:do not|don'?t) have personal|"
    r"i (?:cannot|can'?t) (?:browse|access the internet)|as a (?:bot|machine|program)|"
    r"\b(?:the|this|our|your) game\b|\bvideo ?game\b|\bfictional character\b|"
    r"\bthe (?:other )?players\b",
)
BROKEN_ANY_CASE = re.compile(BROKEN.pattern.replace(r"\b(?:AI|A\.I\.)(?=\W|$)|", ""), re.IGNORECASE)
STARRED = re.compile(r"\*{1,2}([^*\n]{1,120})\*{1,2}")
BRACKETED = re.compile(r"\[[^\]\n]{0,160}\]|\([^)\n]{0,160}\)|\{[^}\n]{0,160}\}")
MARKDOWN = re.compile(
    r"```\w*|`+|^\s*#{1,6}\s+|^\s*>\s*|^\s*(?:[-+•]|\d{1,2}[.)])\s+|__|\*\*", re.MULTILINE
)
OPENERS = (("*", "*"), ("(", ")"), ("[", "]"))
LINK = re.compile(r"\[([^\]]{1,80})\]\((?:https?://|www\.)[^)]*\)")
URL = re.compile(r"https?://\S+|www\.\S+")
NUMBER = re.compile(r"\b\d+\b")
DICE = re.compile(r"\b\d*d\d+(?:\s*[+-]\s*\d+)?\b", re.IGNORECASE)
SENTENCE_END = re.compile(r"[.!?…][\"')\]”’]*$")
SPACES = re.compile(r"\s+")
DANGLING = re.compile(r"^[\s,;:\-–—\"'”“)]+|[\s\-–—\"'“(]+$")


TEMPLATE_RUN = 4
"""Words in a row of Glyphoxa's own prompt wording that make a leak."""


def _template_grams() -> frozenset[tuple[str, ...]]:
    grams: set[tuple[str, ...]] = set()
    for text in prompt_wording():
        for segment in text.split("\n"):
            words = words_of(segment)
            grams.update(
                tuple(words[i : i + TEMPLATE_RUN]) for i in range(len(words) - TEMPLATE_RUN + 1)
            )
    return frozenset(grams)


def words_of(text: str) -> list[str]:
    """The lower-cased words of ``text`` (how echoes, repeats and budgets count)."""
    return _WORD.findall(text.lower().replace("’", "'"))


TEMPLATE_GRAMS = _template_grams()
TEMPLATE_HEADS = frozenset(gram[:n] for gram in TEMPLATE_GRAMS for n in (2, 3))


def shared_runs(said: list[str], heard: list[str], run: int) -> list[tuple[int, int]]:
    """Spans of ``said`` (word indices) that repeat ``run`` or more consecutive heard words."""
    grams = {tuple(heard[i : i + run]) for i in range(len(heard) - run + 1)}
    spans: list[tuple[int, int]] = []
    i = 0
    while i <= len(said) - run:
        if tuple(said[i : i + run]) in grams:
            end = i + run
            while end < len(said) and any(
                tuple(said[end - run + 1 : end + 1]) == gram for gram in grams
            ):
                end += 1
            spans.append((i, end))
            i = end
        else:
            i += 1
    return spans


def cut_words(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """``text`` without the words at ``spans`` (indices into :func:`words_of`)."""
    matches = list(_WORD.finditer(text.lower().replace("’", "'")))
    pieces: list[str] = []
    last = 0
    for start, end in spans:
        if start >= len(matches):
            break
        pieces.append(text[last : matches[start].start()])
        stop = matches[min(end, len(matches)) - 1].end()
        # the echo's own closing punctuation and quotes go with it
        while stop < len(text) and text[stop] in "?!.,\"'”’ ":
            stop += 1
        last = stop
    pieces.append(text[last:])
    return " ".join(p.strip(" \"'“”") for p in pieces if p.strip(" \"'“”,"))


def tidy(text: str) -> str:
    text = SPACES.sub(" ", text).strip()
    text = DANGLING.sub("", text)
    text = re.sub(r"\s+([,.!?;:])", r"\1", text)
    if text.count('"') % 2:
        text = text.replace('"', "")
    return text


def is_emoji(ch: str) -> bool:
    code = ord(ch)
    if 0x1F000 <= code <= 0x1FAFF or 0x2600 <= code <= 0x27BF or 0x2B00 <= code <= 0x2BFF:
        return True
    if code in (0xFE0F, 0xFE0E, 0x200D, 0x20E3) or 0x1F3FB <= code <= 0x1F3FF:
        return True
    return unicodedata.category(ch) == "So"


def word_runs(words: list[str], run: int = REPEAT_RUN) -> set[tuple[str, ...]]:
    """Every ``run`` consecutive words of ``words``."""
    return {tuple(words[i : i + run]) for i in range(len(words) - run + 1)}


def covered_words(words: list[str], runs: set[tuple[str, ...]], run: int) -> list[bool]:
    """Which of ``words`` lie in a run of ``run`` consecutive words found in ``runs``."""
    covered = [False] * len(words)
    for i in range(len(words) - run + 1):
        if tuple(words[i : i + run]) in runs:
            covered[i : i + run] = [True] * run
    return covered
