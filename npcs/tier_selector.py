"""Latency tier of a turn, chosen without an LLM in microseconds on every STT partial.

DESIGN.md section 4: DM override > DEEP phrases (a second DEEP within ``deep_interval_s`` is
demoted to STANDARD) > queue depth >= threshold -> FAST > STANDARD phrases > first turn of a
conversation -> STANDARD > default (FAST). Effective tier = min(NPC budget, selected) unless a DM
override lifts the ceiling. ``select`` is pure so it can run on every partial; ``commit`` records a
final turn (DEEP history, conversation start).

Phrase syntax (config lists use it too): words separated by spaces; each word of four or more
letters also matches its inflections ("remember" -> "remembered", "remembering"); ``a|b`` offers
alternatives for one word; ``*`` stands for one to three arbitrary words; ``word!`` is literal.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from campaigns.errors import GlyphoxaError
from npcs.schema import NpcDefinition
from tools.tiers import Tier

__all__ = [
    "DEFAULT_DEEP_PHRASES",
    "DEFAULT_STANDARD_PHRASES",
    "TierDecision",
    "TierSelector",
    "compile_phrases",
    "parse_duration",
]

log = logging.getLogger(__name__)

DEFAULT_DEEP_PHRASES: tuple[str, ...] = (
    "remember",
    "recall",
    "remind me",
    "memory|memories",
    "last session",
    "last time",
    "last week",
    "previous session|time|visit",
    "earlier session",
    "back when",
    "long ago",
    "ages ago",
    "history of",
    "the history",
    "tell me everything",
    "told me everything",
    "everything you know",
    "all you know",
    "all about",
    "in detail",
    "what are the rules for|on|about",
    "what is the rule for|on|about",
    "what's the rule for|on|about",
    "how does * work",
    "how do * work",
    "rules for|on",
    "look up",
    "look into",
    "research",
    "search",
    "dig up",
    "find out",
    "check the records|archives|books|library|scrolls",
    "consult",
    "archives",
    "records",
    "chronicle",
    "lore",
    "legend of",
    "origins of",
    "what happened when|at|in|to|with|after|before",
    "summarize",
    "recap",
    "catch me up",
)

DEFAULT_STANDARD_PHRASES: tuple[str, ...] = (
    "roll",
    "dice",
    "d4|d6|d8|d10|d12|d20|d100",
    "random",
    "pick",
    "who is|was|are",
    "who's",
    "where is|are|can",
    "where's",
    "what do you know",
    "do you know",
    "tell me about",
    "have you heard",
    "heard of|about|anything",
    "rumor|rumors|rumour|rumours",
    "news",
    "how much",
    "price",
    "cost",
    "directions",
    "the way to",
    "map",
    "explain",
    "why did",
    "what happened",
    "who did",
    "know anything",
    "any idea",
    "describe",
    "the rule|rules",
    "spell",
    "check",
)

_SUFFIXES = "(?:e|es|ed|d|s|ing|ings|ment|ments)?"
_PHRASE_TOKEN = re.compile(r"\S+")


@dataclass(frozen=True, slots=True)
class TierDecision:
    tier: Tier
    """Effective tier: what the engine and tool visibility use."""
    selected: Tier
    """Tier chosen from the utterance before the NPC's budget ceiling."""
    reason: str
    override: bool = False
    phrase: str | None = None
    capped: bool = False
    """True when the NPC's budget lowered the selected tier."""

    def as_dict(self) -> dict[str, object]:
        return {
            "tier": self.tier.label,
            "selected": self.selected.label,
            "reason": self.reason,
            "override": self.override,
            "phrase": self.phrase,
            "capped": self.capped,
        }


@dataclass(frozen=True, slots=True)
class _Override:
    tier: Tier
    expires_at: float | None


def parse_duration(text: str | float | None) -> float | None:
    """``"5m"``, ``"30s"``, ``"1h"``, ``"90"`` (seconds) -> seconds; None/empty -> None."""
    if text is None or text == "":
        return None
    if isinstance(text, int | float):
        return float(text)
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|hr)?\s*", str(text).lower())
    if match is None:
        raise GlyphoxaError(f"cannot read duration {text!r}; write e.g. 30s, 5m or 1h")
    unit = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hr": 3600}[match.group(2) or "s"]
    return float(match.group(1)) * unit


_NO_INFLECTION = frozenset(
    "what when where which with about after before does have tell told this that there "
    "your from into them they their then than".split()
)


def _inflectable(option: str, literal: bool) -> bool:
    return (
        not literal
        and len(option) >= 4
        and option.isalpha()
        and option not in _NO_INFLECTION
        and not option.endswith(("ed", "ing", "s"))
    )


def _word_options(word: str) -> list[tuple[str, str]]:
    """(literal stem, regex suffix) for each alternative of one phrase word."""
    literal = word.endswith("!")
    options = [w.lower() for w in word.rstrip("!").split("|") if w]
    out = []
    for option in options:
        if _inflectable(option, literal):
            stem = option[:-1] if option.endswith("e") else option
            out.append((stem, _SUFFIXES))
        else:
            out.append((option, ""))
    return out


def _word_pattern(word: str) -> str:
    if word == "*":
        return r"(?:\w+[\s,']+){0,2}\w+"
    parts = [_literal(stem) + suffix for stem, suffix in _word_options(word)]
    return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"


def _literal(text: str) -> str:
    return re.escape(text).replace("'", "['’]")


def _phrase_entries(phrase: str) -> list[tuple[str, str]]:
    """(first word's literal stem, regex for the rest) pairs; the stem feeds a character trie."""
    tokens = _PHRASE_TOKEN.findall(phrase.replace("’", "'"))
    if not tokens or tokens[0] == "*":
        raise GlyphoxaError(f"tier phrase {phrase!r} must start with a word")
    rest = "".join(r"\s+" + _word_pattern(token) for token in tokens[1:])
    return [(stem, suffix + rest) for stem, suffix in _word_options(tokens[0])]


def _trie_pattern(entries: list[tuple[str, str]]) -> str:
    """A regex whose alternatives branch on one character at a time.

    Python's ``re`` tries alternatives in order at each position; a flat list of 50 phrases
    costs 50 attempts per word, a character trie about one.
    """
    tails = sorted({tail for stem, tail in entries if not stem}, key=len, reverse=True)
    groups: dict[str, list[tuple[str, str]]] = {}
    for stem, tail in entries:
        if stem:
            groups.setdefault(stem[0], []).append((stem[1:], tail))
    branches = [_literal(char) + _trie_pattern(sub) for char, sub in sorted(groups.items())]
    # Longer tails first so "rules for" wins over "rules"; an empty tail (end of phrase) last.
    alternatives = branches + [t for t in tails if t] + ([""] if "" in tails else [])
    if len(alternatives) == 1:
        return alternatives[0]
    return "(?:" + "|".join(alternatives) + ")"


def compile_phrases(phrases: Iterable[str]) -> re.Pattern[str]:
    """One case-insensitive regex for a phrase list, whole words only, built as a trie."""
    entries = sorted({entry for p in phrases if p.strip() for entry in _phrase_entries(p)})
    if not entries:
        return re.compile(r"(?!x)x")
    return re.compile(r"\b" + _trie_pattern(entries) + r"\b", re.IGNORECASE)


class TierSelector:
    """Chooses a turn's tier; holds DM overrides and the per-table DEEP history.

    Args:
        config: ``bot.config.TiersConfig`` (duck-typed: npcs never imports bot); None means
            the defaults.
    """

    def __init__(self, config: Any = None) -> None:
        cfg = config
        deep = list(getattr(cfg, "deep_phrases", None) or DEFAULT_DEEP_PHRASES)
        deep += list(getattr(cfg, "extra_deep_phrases", []) or [])
        standard = list(getattr(cfg, "standard_phrases", None) or DEFAULT_STANDARD_PHRASES)
        standard += list(getattr(cfg, "extra_standard_phrases", []) or [])
        self.deep_interval_s = float(getattr(cfg, "deep_interval_s", 30.0))
        self.queue_threshold = int(getattr(cfg, "queue_threshold", 3))
        self.conversation_gap_s = float(getattr(cfg, "continuation_window_s", 30.0))
        self.default_tier = Tier.parse(getattr(cfg, "default_tier", "fast"))
        self._deep = compile_phrases(deep)
        self._standard = compile_phrases(standard)
        self._overrides: dict[str | None, _Override] = {}
        self._last_deep_at: float | None = None
        self._last_turn_at: dict[str, float] = {}

    # -- DM overrides -----------------------------------------------------------------------

    def set_override(
        self,
        tier: Tier | str | None,
        *,
        npc: str | None = None,
        duration_s: float | str | None = None,
        now: float,
    ) -> None:
        """Force ``tier`` for one NPC or (``npc=None``) all, optionally expiring.

        ``tier=None`` or ``"auto"`` clears: for one NPC, or every override when ``npc`` is None.
        """
        if tier is None or (isinstance(tier, str) and tier.strip().lower() == "auto"):
            if npc is None:
                self._overrides.clear()
            else:
                self._overrides.pop(npc, None)
            return
        try:
            parsed = Tier.parse(tier)
        except ValueError as error:
            raise GlyphoxaError(f"{error} (or auto)") from None
        seconds = parse_duration(duration_s)
        expires = None if seconds is None else now + seconds
        self._overrides[npc] = _Override(parsed, expires)

    def override_for(self, npc: str | None, now: float) -> tuple[Tier, str] | None:
        """The active override for an NPC (its own first, then the table-wide one)."""
        for key in (npc, None) if npc is not None else (None,):
            found = self._overrides.get(key)
            if found is None:
                continue
            if found.expires_at is not None and now >= found.expires_at:
                del self._overrides[key]
                continue
            scope = f"for {key}" if key is not None else "for all NPCs"
            left = "" if found.expires_at is None else f", {found.expires_at - now:.0f}s left"
            return found.tier, f"DM override {found.tier.label} {scope}{left}"
        return None

    # -- selection --------------------------------------------------------------------------

    def select(
        self,
        text: str,
        *,
        npc: NpcDefinition | None = None,
        queue_depth: int = 0,
        now: float = 0.0,
        first_turn: bool | None = None,
    ) -> TierDecision:
        """Pick the tier for ``text`` (a partial or a final). Pure: call ``commit`` on finals.

        ``first_turn`` None means: derive it from the last committed turn with this NPC.
        """
        name = npc.name if npc is not None else None
        if self._overrides:
            override = self.override_for(name, now)
            if override is not None:
                return TierDecision(override[0], override[0], override[1], override=True)
        selected, reason, phrase = self._select(text, name, queue_depth, now, first_turn)
        if npc is not None and npc.budget_tier < selected:
            budget = npc.budget_tier
            return TierDecision(
                budget, selected, f"{reason}; capped by budget {budget.label}", False, phrase, True
            )
        return TierDecision(selected, selected, reason, False, phrase)

    def _select(
        self, text: str, npc: str | None, queue_depth: int, now: float, first_turn: bool | None
    ) -> tuple[Tier, str, str | None]:
        match = self._deep.search(text)
        if match is not None:
            phrase = match.group(0).lower()
            last = self._last_deep_at
            if last is not None and now - last < self.deep_interval_s:
                return (
                    Tier.STANDARD,
                    f"phrase '{phrase}' demoted: DEEP {now - last:.0f}s ago",
                    phrase,
                )
            return Tier.DEEP, f"phrase '{phrase}'", phrase
        if queue_depth >= self.queue_threshold:
            return Tier.FAST, f"queue depth {queue_depth}", None
        match = self._standard.search(text)
        if match is not None:
            phrase = match.group(0).lower()
            return Tier.STANDARD, f"phrase '{phrase}'", phrase
        if first_turn is None:
            last_turn = self._last_turn_at.get(npc) if npc is not None else None
            first_turn = npc is not None and (
                last_turn is None or now - last_turn > self.conversation_gap_s
            )
        if first_turn:
            return Tier.STANDARD, "first turn of the conversation", None
        return self.default_tier, "default", None

    def commit(self, decision: TierDecision, *, npc: str | None, now: float) -> None:
        """Record a final turn: DEEP history and the conversation's last turn time."""
        if decision.selected == Tier.DEEP and not decision.override:
            self._last_deep_at = now
        if npc is not None:
            self._last_turn_at[npc] = now
