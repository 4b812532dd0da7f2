"""Latency tier of a turn, chosen without an LLM in microseconds on every STT partial.

The tier map (docs/running-a-table.md): DM override > DEEP phrases (a second DEEP within
``deep_interval_s`` is demoted to STANDARD) > queue depth >= threshold -> FAST > STANDARD phrases >
first turn of a conversation -> STANDARD > default (FAST). Effective tier = min(NPC budget,
selected) unless a DM override lifts the ceiling. ``select`` is pure so it can run on every partial;
``commit`` records a final turn (DEEP history, conversation start); ``explain`` says how each rule
judged a line. The phrase lists are in ``npcs.tier_phrases``, their syntax and negation in
``npcs.phrase_match``.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from campaigns.basics import GlyphoxaError, Tier
from npcs.phrase_match import PhraseMatcher, TierPhrases, compile_phrases
from npcs.schema import NpcDefinition
from npcs.tier_phrases import DEFAULT_DEEP_PHRASES, DEFAULT_STANDARD_PHRASES

__all__ = [
    "DEFAULT_DEEP_PHRASES",
    "DEFAULT_STANDARD_PHRASES",
    "RULES",
    "TierDecision",
    "TierSelector",
    "compile_phrases",
    "parse_duration",
]

log = logging.getLogger(__name__)

#: The selection rules in order; ``TierDecision.rule`` names the one that decided.
RULES: dict[str, str] = {
    "dm_override": "1. DM override",
    "deep_phrase": "2. DEEP phrase",
    "queue_depth": "3. queue depth",
    "standard_phrase": "4. STANDARD phrase",
    "first_turn": "5. first turn of a conversation",
    "default": "6. default",
}


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
    rule: str = "default"
    """The rule that decided (a key of ``RULES``)."""

    def as_dict(self) -> dict[str, object]:
        return {
            "tier": self.tier.label,
            "selected": self.selected.label,
            "reason": self.reason,
            "rule": self.rule,
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


class TierSelector:
    """Chooses a turn's tier; holds DM overrides and the per-table DEEP history.

    Args:
        config: ``bot.settings.config.TiersConfig`` (duck-typed: npcs never imports bot); None means
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
        self._phrases = TierPhrases(deep, standard)
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

    def active_overrides(self, now: float) -> list[tuple[str | None, Tier, float | None]]:
        """Every override still in force: ``(npc or None for all, tier, seconds left or None)``
        (what a resumed table must restore)."""
        active = []
        for npc, found in list(self._overrides.items()):
            left = None if found.expires_at is None else found.expires_at - now
            if left is not None and left <= 0:
                continue
            active.append((npc, found.tier, left))
        return active

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
                tier = override[0]
                return TierDecision(tier, tier, override[1], override=True, rule="dm_override")
        selected, reason, rule, phrase = self._select(text, name, queue_depth, now, first_turn)
        if npc is not None and npc.budget_tier < selected:
            budget = npc.budget_tier
            reason = f"{reason}; capped by budget {budget.label}"
            return TierDecision(budget, selected, reason, False, phrase, True, rule)
        return TierDecision(selected, selected, reason, False, phrase, False, rule)

    def _select(
        self, text: str, npc: str | None, queue_depth: int, now: float, first_turn: bool | None
    ) -> tuple[Tier, str, str, str | None]:
        hit, standard = self._phrases.find(text)
        if hit is not None:
            phrase = hit.text.lower()
            last = self._last_deep_at
            if last is not None and now - last < self.deep_interval_s:
                reason = f"DEEP phrase '{phrase}' demoted: DEEP {now - last:.0f}s ago"
                return Tier.STANDARD, reason, "deep_phrase", phrase
            return Tier.DEEP, f"DEEP phrase '{phrase}'", "deep_phrase", phrase
        if queue_depth >= self.queue_threshold:
            return Tier.FAST, f"queue depth {queue_depth}", "queue_depth", None
        if standard is not None:
            phrase = standard.text.lower()
            return Tier.STANDARD, f"STANDARD phrase '{phrase}'", "standard_phrase", phrase
        if first_turn is None:
            first_turn = self._first_turn(npc, now)
        if first_turn:
            return Tier.STANDARD, "first turn of the conversation", "first_turn", None
        return self.default_tier, "default", "default", None

    def _first_turn(self, npc: str | None, now: float) -> bool:
        last_turn = self._last_turn_at.get(npc) if npc is not None else None
        return npc is not None and (last_turn is None or now - last_turn > self.conversation_gap_s)

    def commit(self, decision: TierDecision, *, npc: str | None, now: float) -> None:
        """Record a final turn: DEEP history and the conversation's last turn time."""
        if decision.selected == Tier.DEEP and not decision.override:
            self._last_deep_at = now
        if npc is not None:
            self._last_turn_at[npc] = now

    # -- explanation (``glyphoxa tier --explain``) -------------------------------------------

    def explain(
        self,
        text: str,
        *,
        npc: NpcDefinition | None = None,
        queue_depth: int = 0,
        now: float = 0.0,
        first_turn: bool | None = None,
    ) -> tuple[TierDecision, list[str]]:
        """The decision and one line per rule in order, the deciding one marked ``<- decided``.

        Slow (compiles each phrase on its own to name the list entry): never on the hot path.
        """
        decision = self.select(
            text, npc=npc, queue_depth=queue_depth, now=now, first_turn=first_turn
        )
        name = npc.name if npc is not None else None
        override = self.override_for(name, now)
        if first_turn is None:
            first_turn = self._first_turn(name, now)
        last = self._last_deep_at
        recent = last is not None and now - last < self.deep_interval_s
        judged = {
            "dm_override": override[1] if override else "none",
            "deep_phrase": self._hits(self._phrases.deep, text)
            + (f"; a DEEP {now - (last or 0):.0f}s ago demotes it to STANDARD" if recent else ""),
            "queue_depth": f"{queue_depth} waiting (FAST from {self.queue_threshold})",
            "standard_phrase": self._hits(self._phrases.standard, text),
            "first_turn": "yes" if first_turn else "no (a conversation is going on)",
            "default": self.default_tier.label,
        }
        lines = []
        for rule, title in RULES.items():
            mark = "  <- decided" if rule == decision.rule else ""
            lines.append(f"{title}: {judged[rule]}{mark}")
        if decision.capped and npc is not None:
            lines.append(f"budget: {npc.name}'s budget_tier {npc.budget_tier.label} caps it")
        return decision, lines

    @staticmethod
    def _hits(matcher: PhraseMatcher, text: str) -> str:
        parts = []
        for hit, negation in matcher.all_hits(text):
            entries = " / ".join(f"'{p}'" for p in matcher.sources(hit.text)) or "?"
            state = f"negated by '{negation}'" if negation else "counts"
            parts.append(f"'{hit.text}' (list entry {entries}; {state})")
        return ", ".join(parts) or "none"
