"""What a player's line asks of the table, read without a model: a dice roll, or knowledge.

Tables ask an NPC for the same few actions every night: "roll a d20 for me", "roll 2d6+3",
"roll for initiative", "what happened at the old mill?". A tiny model rarely thinks of its
tools, so these are recognised here, in microseconds, and the engine runs the tool itself
(:mod:`npcs.engines.table_actions`); a capable model's own tool calls work on top.

Both readers are built for speech-to-text output: spoken numbers ("two d six", "d twenty"),
Whisper's spellings ("D-20", "d 20") and the noun "roll" ("the roll of the ship", "a bread
roll"), the past ("I rolled a 15") and a refusal ("don't roll yet") are not requests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tools.builtin.dice_engine import parse_expression
from tools.spec import ToolError

__all__ = [
    "DiceRequest",
    "asks_for_knowledge",
    "dice_request",
    "is_rules_question",
    "knowledge_query",
]


@dataclass(frozen=True, slots=True)
class DiceRequest:
    """A roll a player asked for: the dice expression and what it is for ("initiative")."""

    expression: str
    purpose: str = ""


_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "twenty": 20,
    "hundred": 100, "a hundred": 100, "one hundred": 100,
}  # fmt: skip
_NUMBER = "|".join(sorted((re.escape(n) for n in _NUMBERS), key=len, reverse=True))
#: Dice as Whisper writes them: "2d6+3", "d20", "D-20", "d 20", "two d six", "a d twenty".
_SPOKEN_DIE = re.compile(
    rf"\b(?:(?P<count>\d+|{_NUMBER})\s*-?\s*)?d\s*-?\s*(?P<sides>\d+|{_NUMBER}|%|percent)\b"
    rf"(?P<mod>(?:\s*(?:[+-]|plus|minus)\s*(?:\d+|{_NUMBER})\b)?)",
    re.IGNORECASE,
)
#: A dice expression as written ("4d6kh3", "2d20kl1+5", "d6!"): taken as it is.
_WRITTEN = re.compile(
    r"(?<![\w])\d*d(?:\d+|%)!?(?:(?:kh|kl|dh|dl|k)\d+)?(?:\s*[+-]\s*(?:\d*d\d+|\d+)(?!\w))*",
    re.IGNORECASE,
)
_SIDED = re.compile(
    rf"\b(?:(?P<count>\d+|{_NUMBER})\s+)?(?P<sides>\d+|{_NUMBER})[\s-]*sided\s+(?:die|dice)\b",
    re.IGNORECASE,
)
_ROLL = re.compile(r"\broll\b", re.IGNORECASE)
_CLAUSE_START = re.compile(r"(?:^|[,.!?;:]|\b(?:and|then|so|now|please|just)\b)\s*$")
#: Words right before a "roll" that is asked of the NPC ("can you roll", "go ahead and roll").
_ASKING = re.compile(
    r"\b(?:you|ya|please|to|ahead and|gonna|go|and|then|now|just|quickly|quick)\s*$",
    re.IGNORECASE,
)
#: A roll that is refused, delayed or someone else's.
_NOT_NOW = re.compile(
    r"\b(?:don'?t|do not|never|not|no need to|stop|won'?t|shouldn'?t|can'?t|cannot|i|we|"
    r"let'?s|let us|i'?ll|we'?ll|i will|we will|i'?m gonna|will|gonna|he|she|they|it|"
    r"someone|somebody|everyone|everybody)\s+(?:\w+\s+)?$",
    re.IGNORECASE,
)
_ROCK = re.compile(r"\brock\s*(?:and|n|'n'?|&)\s*$", re.IGNORECASE)
#: One to three capitalised words before "roll": a name said without a comma ("Bartok roll").
_NAME_BEFORE = re.compile(
    r"^\s*(?:(?:hey|ok|okay|alright|so|now|right|oi)[,\s]+)?[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*){0,2}\s*$"
)
_NOT_YET = re.compile(r"^\s*(?:yet|later|just yet)\b", re.IGNORECASE)
#: What a verb "roll" may not be followed by ("roll over", "roll call", "roll out").
_OTHER_ROLLS = re.compile(
    r"^\s*(?:over|out|up|away|back|down|around|call|along|in\b|into|off|with it|the bones|"
    r"your eyes|my eyes|of)\b",
    re.IGNORECASE,
)
_PURPOSES = (
    r"(initiative|perception|stealth|"
    r"insight|investigation|athletics|acrobatics|persuasion|deception|intimidation|arcana|"
    r"history|nature|religion|medicine|survival|sleight of hand|animal handling|performance|"
    r"luck|damage|attack|to hit|a save|saving throw|a check|check)\b"
)
_WHAT_FOR = re.compile(
    rf"^\s*(?:me\s+)?(?:a\s+|an\s+)?(?:for\s+)?{_PURPOSES}|\bfor\s+(?:a\s+|an\s+|my\s+|the\s+)?{_PURPOSES}",
    re.IGNORECASE,
)
_ADVANTAGE = re.compile(r"\bwith\s+(?P<kind>advantage|disadvantage)\b", re.IGNORECASE)
_PERCENTILE = re.compile(r"\bpercentile\b|\bd\s*100\b|\bd\s*%", re.IGNORECASE)


#: How Whisper writes "roll a die" when it hears it as other words ("Rolla Dye for me").
_HEARD_AS = (
    (re.compile(r"\brolla\b(?=\s+\w)", re.IGNORECASE), "roll a"),
    (re.compile(r"\brolls\s+(?=(?:a|an|the|me|for)\b)", re.IGNORECASE), "roll "),
    (
        re.compile(r"\brole\s+(?=(?:a|an|the|me|for|initiative|\d|d\s*\d)\b)", re.IGNORECASE),
        "roll ",
    ),
    (re.compile(r"\b(?:dye|dai)\b", re.IGNORECASE), "die"),
)


def _as_said(text: str) -> str:
    for pattern, said in _HEARD_AS:
        text = pattern.sub(said, text)
    return text


def dice_request(text: str, names: tuple[str, ...] = ()) -> DiceRequest | None:
    """The roll ``text`` asks the NPC for, or None.

    A request needs the verb "roll" said to the NPC: at the start of a clause ("Bartok, roll
    a d20", "Bartok roll a d20": ``names`` are the NPC's), after a polite or helping word
    ("can you roll", "please roll", "I want you to roll"). Without dice named a roll is a d20;
    "with advantage" is ``2d20kh1``; "percentile" ``1d100``. Whisper's spellings of it
    ("Rolla Dye", "role a d20") are read as what was said.
    """
    text = _as_said(text)
    for match in _ROLL.finditer(text):
        before, after = text[: match.start()], text[match.end() :]
        if _NOT_NOW.search(before) or _NOT_YET.match(after) or _OTHER_ROLLS.match(after):
            continue
        if _ROCK.search(before):
            continue
        named = _NAME_BEFORE.match(before) is not None or any(
            before.lower().rstrip(" ,").endswith(name.lower()) for name in names if name
        )
        if not (_CLAUSE_START.search(before) or _ASKING.search(before) or named):
            continue
        return _what_to_roll(after)
    return None


def _what_to_roll(after: str) -> DiceRequest | None:
    clause = re.split(r"[.!?;]", after, maxsplit=1)[0]
    purpose_match = _WHAT_FOR.search(clause)
    what = purpose_match and (purpose_match.group(1) or purpose_match.group(2))
    purpose = what.lower() if what else ""
    purpose = {"a save": "saving throw", "a check": "check"}.get(purpose, purpose)
    advantage = _ADVANTAGE.search(clause)
    expression = _dice_in(clause)
    if expression == "1d20" and advantage is not None:
        expression = None  # "a d20 with advantage": two d20, one kept
    if expression is None:
        if _PERCENTILE.search(clause):
            expression = "1d100"
        elif advantage is not None:
            keep = "kh1" if advantage.group("kind").lower() == "advantage" else "kl1"
            expression = f"2d20{keep}"
            purpose = purpose or advantage.group("kind").lower()
        else:
            expression = "1d20"
    try:
        parse_expression(expression)
    except ToolError:
        return None
    return DiceRequest(expression, purpose)


def _dice_in(clause: str) -> str | None:
    """The first dice named in ``clause`` as an expression ("2d6+3"), or None."""
    written = _WRITTEN.search(clause)
    if written is not None and re.search(r"\d", written.group(0)):
        expression = re.sub(r"\s+", "", written.group(0)).lower()
        expression = "1" + expression if expression.startswith("d") else expression
        try:
            parse_expression(expression)
            return expression
        except ToolError:
            pass
    match = _SPOKEN_DIE.search(clause)
    if match is not None:
        count = _number(match.group("count")) if match.group("count") else 1
        raw_sides = match.group("sides").lower()
        sides = "%" if raw_sides in ("%", "percent") else str(_number(raw_sides))
        mod = re.sub(r"\s+", "", match.group("mod") or "").lower()
        mod = mod.replace("plus", "+").replace("minus", "-")
        if mod:
            mod = mod[0] + str(_number(mod[1:]))
        return f"{count}d{sides}{mod}"
    sided = _SIDED.search(clause)
    if sided is not None:
        count = _number(sided.group("count")) if sided.group("count") else 1
        return f"{count}d{_number(sided.group('sides'))}"
    return None


def _number(word: str) -> int:
    word = word.strip().lower()
    return int(word) if word.isdigit() else _NUMBERS[word]


# -- knowledge ---------------------------------------------------------------------------------

_RULES = re.compile(
    r"\b(?:rules?|how (?:do|does|did|can|would)\b.*\b(?:work|works)|can i|may i|am i allowed|"
    r"saving throws?|ability checks?|advantage|disadvantage|spell slots?|concentration|"
    r"grapple|grappling|opportunity attacks?|conditions?|armou?r class|hit points|cantrips?|"
    r"bonus action|reaction|difficulty class|\bdc\b|proficiency|short rest|long rest|"
    r"exhaustion|cover|prone|stunned|poisoned|frightened|charmed|restrained)\b",
    re.IGNORECASE,
)
_STOP = frozenset(
    """a an and are as at be but by can could did do does for from had has have he her here
    him his how i if in into is it its just me my no not of on or our please she so some than
    that the their them then there these they this to us was we were what whats when where which
    who whom whose why will with would you your yours about tell know everything anything
    something anyone remember recall think say said heard hear ever again any all more much
    very really could should happened happen going go get got give let lets one thing things
    like well oh hey hi hello yes yeah okay ok right sir madam friend""".split()
)
_WORDS = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def knowledge_query(text: str, names: tuple[str, ...] = ()) -> str:
    """The words of ``text`` worth searching campaign memory for ("Greymantle, what happened at
    the old mill?" -> "old mill"): content words without the NPC's ``names`` and spoken filler;
    empty when nothing is left to search for."""
    own = {word for name in names for word in _WORDS.findall(name.lower())}
    kept: list[str] = []
    for word in _WORDS.findall(text.lower().replace("’", "'")):
        bare = word.split("'")[0]
        if bare in _STOP or bare in own or len(bare) < 2 or bare in kept:
            continue
        kept.append(bare)
    return " ".join(kept)


_ASKING_FOR = re.compile(
    r"\?|(?:^|[,.!;:]\s*|\b(?:and|so|now|please)\s+)(?:what|who|whom|whose|where|when|why|how|which|"
    r"is|are|was|were|do|does|did|have|has|can|could|would|will|tell|explain|describe|remind|"
    r"recount|show|look|search|find|say)\b|"
    r"\b(?:about|history|story|stories|legends?|tales?|news|rumou?rs?|rules?)\b",
    re.IGNORECASE,
)


def asks_for_knowledge(text: str) -> bool:
    """True when ``text`` asks something (a question, or "tell me", "explain", "remind me"),
    not when it greets, thanks or orders: only then is memory searched for it."""
    return _ASKING_FOR.search(text) is not None


def is_rules_question(text: str) -> bool:
    """True when ``text`` asks about the game's rules ("how does grappling work?")."""
    return _RULES.search(text) is not None
