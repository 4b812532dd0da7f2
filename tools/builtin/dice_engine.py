"""Dice expressions: ``2d6+1d4+3``, ``4d6kh3``, ``2d20kl1``, ``d6!``, ``d%``.

Grammar (case-insensitive, spaces ignored)::

    expression := ["+"|"-"] term (("+"|"-") term)*
    term       := integer | [count] "d" (sides | "%") ["!"] [("kh"|"kl"|"dh"|"dl"|"k"|"d") n]

An exploding die (``!``) that rolls its maximum rolls again and adds the new roll; keep/drop act
on each die's total. Limits keep a typo from burning CPU or flooding a voice channel.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from tools.spec import ToolError

__all__ = [
    "MAX_DICE_PER_TERM",
    "MAX_EXPLOSIONS_PER_TERM",
    "MAX_EXPRESSION_LENGTH",
    "MAX_SIDES",
    "MAX_TERMS",
    "DiceTerm",
    "RollResult",
    "TermResult",
    "parse_expression",
    "roll_expression",
]

MAX_DICE_PER_TERM = 100
MAX_SIDES = 1000
MAX_TERMS = 20
MAX_EXPRESSION_LENGTH = 200
#: Extra dice one term may add by exploding before it stops (and says so).
MAX_EXPLOSIONS_PER_TERM = 100

_TERM = re.compile(
    r"""(?P<count>\d+)?d(?P<sides>\d+|%)(?P<explode>!)?(?:(?P<keep>kh|kl|dh|dl|k|d)(?P<n>\d+)?)?
        |(?P<constant>\d+)""",
    re.VERBOSE,
)


@dataclass(frozen=True, slots=True)
class DiceTerm:
    """One parsed term: ``sign * (count d sides)`` or ``sign * constant``."""

    text: str
    sign: int
    count: int = 0
    sides: int = 0
    explode: bool = False
    keep: str | None = None
    """``kh``/``kl`` (keep highest/lowest n) or ``dh``/``dl`` (drop highest/lowest n)."""
    keep_n: int = 0
    constant: int = 0

    @property
    def is_constant(self) -> bool:
        return self.count == 0


@dataclass(frozen=True, slots=True)
class TermResult:
    term: DiceTerm
    dice: list[int] = field(default_factory=list)
    """Each die's total (an exploded die's rolls summed), in roll order."""
    rolls: list[list[int]] = field(default_factory=list)
    """Each die's individual rolls (more than one only when it exploded)."""
    kept: list[int] = field(default_factory=list)
    """Indexes into ``dice`` that count towards the subtotal."""
    subtotal: int = 0
    explosion_capped: bool = False

    def describe(self) -> str:
        if self.term.is_constant:
            return str(self.term.constant)
        shown = []
        for index, rolls in enumerate(self.rolls):
            text = "+".join(str(r) for r in rolls)
            if len(rolls) > 1:
                text = f"{text}={self.dice[index]}"
            shown.append(text if index in self.kept else f"~{text}~")
        capped = " (explosions capped)" if self.explosion_capped else ""
        return f"{self.term.text} [{', '.join(shown)}] = {abs(self.subtotal)}{capped}"

    def as_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"term": self.term.text, "sign": self.term.sign}
        if self.term.is_constant:
            body["value"] = self.term.constant
        else:
            body["dice"] = self.dice
            body["kept"] = [self.dice[i] for i in self.kept]
            if any(len(r) > 1 for r in self.rolls):
                body["rolls"] = self.rolls
            if self.explosion_capped:
                body["explosion_capped"] = True
        body["subtotal"] = self.subtotal
        return body


@dataclass(frozen=True, slots=True)
class RollResult:
    expression: str
    terms: list[TermResult]
    total: int

    @property
    def breakdown(self) -> str:
        parts: list[str] = []
        for index, term in enumerate(self.terms):
            sign = "-" if term.term.sign < 0 else ("+" if index else "")
            parts.append(f"{sign} {term.describe()}".strip() if sign else term.describe())
        return f"{' '.join(parts)} => {self.total}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "expression": self.expression,
            "total": self.total,
            "terms": [t.as_dict() for t in self.terms],
            "breakdown": self.breakdown,
        }


def _parse_term(text: str, sign: int, expression: str) -> DiceTerm:
    match = _TERM.fullmatch(text)
    if match is None:
        raise ToolError(
            f"cannot read dice term {text!r} in {expression!r}; write e.g. 2d6+3, 4d6kh3, "
            "2d20kl1, d6! or d%"
        )
    if match["constant"] is not None:
        return DiceTerm(text=text, sign=sign, constant=int(match["constant"]))
    count = int(match["count"]) if match["count"] is not None else 1
    sides = 100 if match["sides"] == "%" else int(match["sides"])
    if count < 1:
        raise ToolError(f"{text!r}: roll at least one die")
    if count > MAX_DICE_PER_TERM:
        raise ToolError(f"{text!r}: at most {MAX_DICE_PER_TERM} dice per term")
    if sides < 1:
        raise ToolError(f"{text!r}: a die needs at least one side")
    if sides > MAX_SIDES:
        raise ToolError(f"{text!r}: at most {MAX_SIDES} sides per die")
    explode = match["explode"] is not None
    if explode and sides == 1:
        raise ToolError(f"{text!r}: a one-sided die cannot explode (it would never stop)")
    keep = match["keep"]
    keep_n = 0
    if keep is not None:
        keep = {"k": "kh", "d": "dl"}.get(keep, keep)
        keep_n = int(match["n"]) if match["n"] is not None else 1
        if keep in ("kh", "kl") and not 1 <= keep_n <= count:
            raise ToolError(f"{text!r}: can keep between 1 and {count} of {count} dice")
        if keep in ("dh", "dl") and not 0 <= keep_n < count:
            raise ToolError(f"{text!r}: can drop between 0 and {count - 1} of {count} dice")
    return DiceTerm(
        text=text, sign=sign, count=count, sides=sides, explode=explode, keep=keep, keep_n=keep_n
    )


def parse_expression(expression: str) -> list[DiceTerm]:
    """Parse a dice expression; a ``ToolError`` says what is wrong and how to write it."""
    if not isinstance(expression, str) or not expression.strip():
        raise ToolError("empty dice expression; write e.g. 1d20+5")
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise ToolError(f"dice expression longer than {MAX_EXPRESSION_LENGTH} characters")
    pieces = [p.strip() for p in re.split(r"([+-])", expression.lower()) if p.strip()]
    terms: list[DiceTerm] = []
    sign: int | None = None
    for piece in pieces:
        if piece in ("+", "-"):
            if sign is not None:
                raise ToolError(f"two signs in a row in {expression!r}")
            sign = 1 if piece == "+" else -1
            continue
        if re.search(r"\s", piece):
            raise ToolError(f"missing + or - between {piece!r} in {expression!r}")
        if terms and sign is None:
            raise ToolError(f"missing + or - between terms in {expression!r}")
        terms.append(_parse_term(piece, sign or 1, expression))
        if len(terms) > MAX_TERMS:
            raise ToolError(f"at most {MAX_TERMS} terms in one expression")
        sign = None
    if not terms or sign is not None:
        raise ToolError(f"dice expression {expression!r} ends without a term")
    return terms


def _roll_term(term: DiceTerm, rng: random.Random) -> TermResult:
    if term.is_constant:
        return TermResult(term=term, subtotal=term.sign * term.constant)
    rolls: list[list[int]] = []
    explosions = 0
    capped = False
    for _ in range(term.count):
        chain = [rng.randint(1, term.sides)]
        while term.explode and chain[-1] == term.sides:
            if explosions >= MAX_EXPLOSIONS_PER_TERM:
                capped = True
                break
            explosions += 1
            chain.append(rng.randint(1, term.sides))
        rolls.append(chain)
    dice = [sum(chain) for chain in rolls]
    order = sorted(range(len(dice)), key=lambda i: (dice[i], i))
    if term.keep == "kh":
        kept = order[-term.keep_n :]
    elif term.keep == "kl":
        kept = order[: term.keep_n]
    elif term.keep == "dh":
        kept = order[: len(order) - term.keep_n]
    elif term.keep == "dl":
        kept = order[term.keep_n :]
    else:
        kept = order
    kept_sorted = sorted(kept)
    subtotal = term.sign * sum(dice[i] for i in kept_sorted)
    return TermResult(
        term=term,
        dice=dice,
        rolls=rolls,
        kept=kept_sorted,
        subtotal=subtotal,
        explosion_capped=capped,
    )


def roll_expression(expression: str, rng: random.Random | None = None) -> RollResult:
    """Parse and roll ``expression``.

    Args:
        expression: Dice expression, e.g. ``"4d6kh3"`` or ``"2d20kl1+5"``.
        rng: Random source; tests pass a seeded one. Default: the module's system-seeded RNG.
    """
    source = rng if rng is not None else _RNG
    terms = [_roll_term(term, source) for term in parse_expression(expression)]
    return RollResult(
        expression=expression.strip(), terms=terms, total=sum(t.subtotal for t in terms)
    )


_RNG = random.SystemRandom()
