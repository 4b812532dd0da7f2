"""DM voice commands: what the DM says out loud to steer the table, read from a final transcript.

Only the DM's own voice lane is parsed (the session decides who the DM is); a player saying the
same words is an ordinary turn. A command is the whole utterance: a target (an NPC's name as STT
writes it, or "everyone") and one short instruction, in either order, with fillers around it::

    Greymantle, take your time.        -> tier DEEP for Greymantle (for a few minutes)
    Bartok, quick answers please       -> tier FAST for Bartok
    Everyone, take your time           -> tier DEEP for all NPCs
    everyone back to normal            -> clear the tier overrides (auto)
    Bartok, be quiet / you may speak   -> mute / unmute
    Everyone, stop!                    -> cut every NPC now (barge-in) and drop queued answers
    Bartok, between us: you saw the thief; deny it.
                                       -> a private direction for Bartok until cleared
    Bartok, between us: that's all     -> clear Bartok's private direction
    Bartok, between us. <pause> ...    -> the DM's next words are the direction
    Bartok, your mood is grumpy        -> Bartok's mood (also "you're feeling ...", "you're in
                                          a foul mood"; "everyone, ..." sets every NPC's)
    Bartok, drop the mood              -> clear Bartok's mood (also "back to your usual self")

Anything longer ("Greymantle, take your time and tell me about the war") is not a command, so
a DM who talks in character or to the players is never mistaken for steering. A private
direction is the exception: "between us" right after one NPC's name marks it, and what follows
(up to a few sentences) is the direction, which the session keeps out of every transcript.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from campaigns.basics import Tier
from npcs.addressing import NameMention
from npcs.name_index import ARTICLES, WORD

__all__ = ["DmCommandParser", "DmVoiceCommand"]

Action = Literal["tier", "mute", "unmute", "stop", "direct", "mood"]

_ANY_TIME = r"(?:your|all the|as much|the|some|more|plenty of)"
#: instruction -> (action, tier for ``tier`` actions; None there means auto).
_INSTRUCTIONS: tuple[tuple[Action, Tier | None, str], ...] = (
    (
        "tier",
        Tier.DEEP,
        rf"take {_ANY_TIME} time(?: you need| you like| you want)?|(?:there'?s )?no (?:rush|hurry)"
        r"|think (?:carefully|hard|it through|it over)|slow (?:down|it down)|go deep"
        r"|deep (?:mode|tier|answers|thinking)|take it slow",
    ),
    (
        "tier",
        Tier.FAST,
        r"(?:(?:give me|give us|keep (?:it|them|your answers)) )?(?:quick|short|fast|brief|snappy)"
        r"(?: (?:answers?|replies|responses|mode|tier|ones))?|be (?:quick|brief)|speed (?:it )?up"
        r"|hurry (?:it )?up|quick answers only",
    ),
    (
        "tier",
        Tier.STANDARD,
        r"standard (?:answers|mode|tier)",
    ),
    (
        "tier",
        None,
        r"(?:go |get |come )?back to normal|(?:carry on |go on )?as (?:normal|usual)|as you were"
        r"|normal (?:answers|mode|speed)|(?:back to )?auto(?: tier| mode)?|reset(?: tiers?)?",
    ),
    (
        "mute",
        None,
        r"(?:be |stay |keep |please be )?(?:quiet|silent)|hush|shush|silence|shut up|zip it|mute"
        r"|not (?:a|another) word|hold your tongues?|no more talking",
    ),
    (
        "unmute",
        None,
        r"you (?:may|can|are free to|'re free to) (?:speak|talk|go on)(?: again| freely)?"
        r"|speak freely|unmute|(?:you may )?speak again|talk again",
    ),
    (
        "stop",
        None,
        r"stop(?: talking| speaking| it| there| that)?|hold (?:on|it)|enough|that'?s enough"
        r"|cut it out|wait",
    ),
)
_FILLER = r"(?:(?:ok(?:ay)?|alright|all right|right|hey|um+|uh+|so|now|and|well|please)[\s,.!]+)*"
_TRAILER = (
    r"(?:[\s,.!]+(?:please|now|for now|for (?:a|the) (?:bit|while|moment|minute|few minutes|"
    r"next few minutes)|thanks|thank you|ok(?:ay)?|guys|folks|all of you|you lot))*"
)
_SEP = r"[\s,.!?;:]+"
_BODY = "|".join(f"(?P<i{n}>{pattern})" for n, (_, _, pattern) in enumerate(_INSTRUCTIONS))
# Target first ("Greymantle, take your time"), or the instruction first ("quiet, Bartok").
_TARGET_FIRST = re.compile(rf"^\W*{_FILLER}(?P<target>.+?){_SEP}(?:{_BODY}){_TRAILER}\W*$")
_BODY_FIRST = re.compile(rf"^\W*{_FILLER}(?:{_BODY}){_TRAILER}{_SEP}(?P<target>.+?)\W*$")
_EVERYONE = re.compile(
    r"(?:every ?one|every ?body|all of you|you all|y'?all|all npcs|all|folks|guys|people"
    r"|every npc|all the npcs|everyone here)"
)
# "<NPC>, between us: <direction>" (also "just between us", "between you and me").
_PRIVATE = re.compile(
    rf"^\W*{_FILLER}(?P<target>[^,.:;!?]{{1,40}}?){_SEP}(?:just |strictly )?between "
    r"(?:us|the two of us|you and me|you and i|ourselves)(?:[\s,.!?;:\u2014-]+(?P<text>.*))?$",
    re.DOTALL,
)
#: What the DM says after "between us" to clear the direction.
_CLEAR = re.compile(
    r"(?:clear|cleared|forget (?:it|that|what i said)|never ?mind|that'?s all|as you were"
    r"|no more directions?|drop it|carry on as (?:normal|usual))\W*"
)
# "<NPC>, your mood is <mood>" / "you're feeling <mood>" / "you're in a <mood> mood"; a mood is
# a few words ("grumpy", "suspicious of the elves"), so anything longer is table talk.
_MOOD = re.compile(
    rf"^\W*{_FILLER}(?P<target>[^,.:;!?]{{1,40}}?){_SEP}(?:"
    r"(?:your )?mood(?: is|'s)?[\s:,]+(?P<mood>[a-z' -]{1,60}?)"
    r"|you(?:'re| are) (?:feeling |in an? (?=.*mood\W*$))(?P<feeling>[a-z' -]{1,60}?)(?: mood)?"
    r"|(?P<clear>drop (?:the|your) mood|(?:back to )?your usual (?:self|mood)|no (?:more )?mood)"
    r")\W*$"
)
#: The longest spoken direction (characters), as the slash command allows.
MAX_SPOKEN_DIRECTION = 600
_TARGET_FILLERS = frozenset("ok okay alright right hey um uh so now and well please oh".split())


@dataclass(frozen=True, slots=True)
class DmVoiceCommand:
    """One command heard from the DM. ``npc`` None means every NPC."""

    action: Action
    npc: str | None
    tier: Tier | None = None
    """For ``tier``: the override (None: back to auto)."""
    heard: str = ""
    """The DM's words as transcribed."""
    direction: str | None = ""
    """For ``direct``: the private direction; empty: clear it; None: the DM paused after
    "between us", so their next words are the direction. Never logged or shown."""
    mood: str = ""
    """For ``mood``: the NPC's mood as said ("grumpy"); empty: clear it."""

    @property
    def private(self) -> bool:
        """Whether the words are a private direction, kept out of every transcript."""
        return self.action == "direct"

    def __repr__(self) -> str:  # the words of a private direction stay out of logs
        return f"DmVoiceCommand({self.describe()!r})"

    def describe(self) -> str:
        who = self.npc or "all NPCs"
        if self.action == "direct":
            if self.direction is None:
                return f"private direction for {who} (next words)"
            return f"{'' if self.direction else 'clear the '}private direction for {who}"
        if self.action == "tier":
            return f"tier {self.tier.label if self.tier else 'auto'} for {who}"
        if self.action == "mood":
            return f"mood {self.mood or 'cleared'} for {who}"
        return f"{self.action} {who}"


class DmCommandParser:
    """Reads DM voice commands; ``mentions`` finds NPC names (``AddressDetector.mentions``)."""

    def __init__(self, mentions: Callable[[str], Sequence[NameMention]]) -> None:
        self._mentions = mentions

    def parse_private(self, text: str) -> DmVoiceCommand | None:
        """``text`` as a private direction ("Bartok, between us: ..."), or None."""
        spoken = " ".join(text.replace("\u2019", "'").split())
        match = _PRIVATE.match(spoken.lower())
        if match is None:
            return None
        found, npc = self._target(match.group("target"))
        if not found or npc is None:
            return None  # one NPC only: a direction for everyone is not a thing
        start = match.start("text") if match.group("text") is not None else len(spoken)
        words: str | None = spoken[start:].strip()[:MAX_SPOKEN_DIRECTION] or None
        if words is not None and _CLEAR.fullmatch(words.lower()):
            words = ""
        return DmVoiceCommand("direct", npc, None, text.strip(), words)

    def parse(self, text: str) -> DmVoiceCommand | None:
        """The command ``text`` is, or None when it is anything else (an ordinary line)."""
        private = self.parse_private(text)
        if private is not None:
            return private
        lowered = " ".join(text.lower().replace("’", "'").split())
        if not lowered or len(lowered) > 80:
            return None  # commands are short; skip the regexes for long lines
        mood = _MOOD.match(lowered)
        if mood is not None:
            found, npc = self._target(mood.group("target"))
            said = (mood.group("mood") or mood.group("feeling") or "").strip(" -'")
            if found and (said or mood.group("clear")) and len(said.split()) <= 6:
                return DmVoiceCommand("mood", npc, None, text.strip(), mood=said)
        for pattern in (_TARGET_FIRST, _BODY_FIRST):
            match = pattern.match(lowered)
            if match is None:
                continue
            action, tier = next(
                _INSTRUCTIONS[n][:2] for n in range(len(_INSTRUCTIONS)) if match.group(f"i{n}")
            )
            found, npc = self._target(match.group("target"))
            if found:
                return DmVoiceCommand(action, npc, tier, text.strip())
        return None

    def _target(self, words_text: str) -> tuple[bool, str | None]:
        """(is a target, NPC name or None for everyone)."""
        words = WORD.findall(words_text.replace("'", ""))
        while words and words[0] in _TARGET_FILLERS:
            words = words[1:]
        if not words:
            return False, None
        if _EVERYONE.fullmatch(" ".join(words)):
            return True, None
        said = [w for w in words if w not in ARTICLES] or words
        # As spoken, then run together: "Grey Mantel" must name Greymantle as a whole, not
        # match the alias "Grey" and leave a word over.
        for candidate in (" ".join(words), "".join(said)):
            mentions = self._mentions(candidate)
            if len(mentions) != 1:
                continue
            named = [w for w in WORD.findall(mentions[0].matched) if w not in ARTICLES]
            if named in (said, ["".join(said)]):
                return True, mentions[0].npc
        return False, None
