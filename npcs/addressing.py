"""Which NPC (if any) a player's final utterance is meant for.

Precedence: DM puppeting > names spoken to (in order) > continuation (the NPC this player
addressed within the window) > the sole active NPC in the scene > nobody. A name talked about
("what did the ghost say", "ask Bartok") addresses nobody, and in "Thanks, Bartok. Greymantle,
where is the tower?" only Greymantle is asked (``npcs.vocative``). Names are matched on STT
output, so matching survives misspellings ("Bartock", "Grey Mantel", "Bar talk") and shortened
names ("Thornwood" for "Captain Vessa Thornwood"): the name index (``npcs.name_index``) is built
once per NPC set, so a final costs a few dictionary lookups per word. Utterances and names share
one normalisation (``normalize_text``), so punctuation, accents and invisible characters in
either cannot change who is addressed. Players' characters ("Arin") are names like the NPCs':
"Arin, what do you think?" is table talk that no NPC answers, not even the one the player was
talking with, and a character's name is never taken for a misheard NPC name.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from npcs.name_index import (
    ARTICLES,
    WORD,
    NameForm,
    NpcNameIndex,
    join_sounds,
    normalize_text,
    phonetic_key,
    sound_parts,
)
from npcs.name_words import TITLES, is_everyday
from npcs.schema import NpcDefinition
from npcs.vocative import Hit, Words, addressees, judge

__all__ = ["AddressDecision", "AddressDetector", "NameMention", "phonetic_key"]

log = logging.getLogger(__name__)

_TOKEN = re.compile(r"([^\W_]+)(['’]s\b)?")
_TOKEN_ASCII = re.compile(r"([a-z0-9]+)(['’]s\b)?")
"""The same words for ASCII text (every STT final), 25 % faster."""
_MAX_NGRAM = 3
_Span = tuple[str, int, int, bool]
"""A word of the line: (word, start, end without a possessive "'s", possessive)."""
_Heard = tuple[list["NameMention"], list[int], list[int]]
_PUPPET_PREFIX = re.compile(
    r"^\s*(?:\(?in character\)?\s*)?(?:as|playing|voicing)\s+(?P<name>[^,:]{1,40}?)\s*[,:]\s*"
    r"(?P<text>\S.*)$",
    re.IGNORECASE | re.DOTALL,
)
_PUPPET_SAYS = re.compile(
    r"^\s*(?P<name>[^,:]{1,40}?)\s+says\s*[,:]?\s*(?P<text>\S.*)$", re.IGNORECASE | re.DOTALL
)


@dataclass(frozen=True, slots=True)
class NameMention:
    npc: str
    matched: str
    """The words of the utterance that matched (as heard)."""
    how: str
    """``exact``, ``phonetic`` or ``fuzzy``."""
    position: int
    vocative: bool
    """True when the NPC is spoken to, False when only talked about."""
    why: str = ""
    """What decided ``vocative`` ("set off at the start", "after 'ask'", "possessive")."""
    character: bool = False
    """The name of a player's character (``npc`` is the character), not of an NPC."""


@dataclass(frozen=True, slots=True)
class AddressDecision:
    npcs: list[str]
    """NPCs that answer, in this order; empty means nobody answers."""
    reason: str
    mentions: list[NameMention] = field(default_factory=list)
    puppet_text: str | None = None
    """DM puppeting: the words to speak verbatim in the NPC's voice (no LLM)."""

    def as_dict(self) -> dict[str, object]:
        return {
            "npcs": self.npcs,
            "reason": self.reason,
            "puppet_text": self.puppet_text,
            "mentions": [
                {
                    "npc": m.npc,
                    "matched": m.matched,
                    "how": m.how,
                    "vocative": m.vocative,
                    "why": m.why,
                }
                for m in self.mentions
            ],
        }


class AddressDetector:
    """Decides who answers a final utterance; keeps per-player continuation state.

    Args:
        npcs: the campaign's NPCs (a list or a name -> definition mapping).
        continuation_window_s: how long a player keeps talking to the NPC they last addressed.
        active: names of NPCs present in the scene (default: all); with exactly one, it answers
            unaddressed lines unless it is ``address_only``.
    """

    def __init__(
        self,
        npcs: Iterable[NpcDefinition] | Mapping[str, NpcDefinition],
        *,
        continuation_window_s: float = 30.0,
        active: Iterable[str] | None = None,
        characters: Iterable[str] = (),
    ) -> None:
        self.continuation_window_s = continuation_window_s
        self._last: dict[str, tuple[list[str], float]] = {}
        self._characters = list(characters)
        self.set_npcs(npcs)
        if active is not None:
            self.set_active(active)

    def set_npcs(self, npcs: Iterable[NpcDefinition] | Mapping[str, NpcDefinition]) -> None:
        """Rebuild the name index (hot reload); continuation state is kept for known NPCs."""
        values = list(npcs.values()) if isinstance(npcs, Mapping) else list(npcs)
        self._npcs = {npc.name: npc for npc in values}
        self._index = NpcNameIndex(values, self._characters)
        self._last_heard: tuple[str, _Heard] | None = None
        self._active = list(self._npcs)

    def set_characters(self, names: Iterable[str]) -> None:
        """The names players' characters go by: said to a player, they address no NPC."""
        names = list(names)
        if names == self._characters:
            return
        self._characters = names
        npcs = list(self._npcs.values())
        active = self._active
        self.set_npcs(npcs)
        self.set_active(active)

    @property
    def active(self) -> list[str]:
        """The NPCs present in the current scene (every NPC unless ``set_active`` said)."""
        return list(self._active)

    def set_active(self, names: Iterable[str]) -> None:
        """The NPCs present in the current scene (unknown names are ignored)."""
        self._active = [name for name in names if name in self._npcs]

    def rename_speaker(self, old: str, new: str) -> None:
        """A player now goes by another name (their character): keep their conversation."""
        last = self._last.pop(old, None)
        if last is not None:
            self._last[new] = last

    def forget(self, speaker: str | None = None) -> None:
        """Drop continuation state for one player or everyone."""
        if speaker is None:
            self._last.clear()
        else:
            self._last.pop(speaker, None)

    def mentions(self, text: str) -> list[NameMention]:
        """Every NPC named in ``text``, in order (one per NPC: where it is first spoken to,
        else where it is first named)."""
        return self._first_per_npc(self._hear(text)[0])

    @staticmethod
    def _first_per_npc(heard: list[NameMention]) -> list[NameMention]:
        chosen: dict[str, NameMention] = {}
        for mention in heard:
            if mention.character:
                continue
            held = chosen.get(mention.npc)
            if held is None or (mention.vocative and not held.vocative):
                chosen[mention.npc] = mention
        return sorted(chosen.values(), key=lambda mention: mention.position)

    def _hear(self, text: str) -> _Heard:
        """(every name heard, indices of those asked, indices spoken to but not asked).

        The last line's answer is kept: a partial is read by ``mentions`` and ``detect``.
        """
        last = self._last_heard
        if last is not None and last[0] == text:
            return last[1]
        heard = self._hear_now(text)
        self._last_heard = (text, heard)
        return heard

    def _hear_now(self, text: str) -> _Heard:
        lowered = normalize_text(text)
        spans = [
            (m.group(1), m.start(), m.end(1), m.group(2) is not None)
            for m in (_TOKEN_ASCII if lowered.isascii() else _TOKEN).finditer(lowered)
        ]
        found = self._find(spans, lowered)
        if not found:
            return [], [], []
        words = Words(lowered, spans)
        hits = [Hit(form.npc, i, n) for form, _, i, n in found]
        roles = judge(words, hits)
        heard = [
            NameMention(
                npc=form.npc,
                matched=lowered[spans[i][1] : spans[i + n - 1][2]],
                how=how,
                position=i,
                vocative=role.vocative,
                why=role.why,
                character=form.character,
            )
            for (form, how, i, n), role in zip(found, roles, strict=True)
        ]
        asked, unasked = addressees(words, hits, roles)
        return heard, asked, unasked

    def _find(
        self, spans: list[tuple[str, int, int, bool]], lowered: str
    ) -> list[tuple[NameForm, str, int, int]]:
        """Every name form heard: (form, how, first word, word count), in order."""
        words = [span[0] for span in spans]
        sounds: dict[int, tuple[str, str]] = {}

        def sound(k: int) -> tuple[str, str]:
            found = sounds.get(k)
            if found is None:
                found = sounds[k] = sound_parts(words[k])
            return found

        index = self._index
        common = index.common
        plain = [word in common for word in words]
        found: list[tuple[NameForm, str, int, int]] = []
        i = 0
        count = len(words)
        while i < count:
            # An n-gram never runs past a possessive ("Bartok's" ends the name).
            longest = 1
            while longest < _MAX_NGRAM and i + longest < count and not spans[i + longest - 1][3]:
                longest += 1
            candidates = [
                words[i] if n == 1 else "".join(words[i : i + n]) for n in range(longest, 0, -1)
            ]
            hit: tuple[NameForm, str, int] | None = None
            for offset, candidate in enumerate(candidates):
                form = index.exact.get(candidate)
                if form is not None:
                    hit = (form, "exact", longest - offset)
                    break
            if hit is None and not plain[i]:
                for offset, candidate in enumerate(candidates):
                    n = longest - offset
                    if plain[i + n - 1]:
                        continue
                    if n == 1 and candidate not in index.name_words and is_everyday(candidate):
                        continue  # a word heard clearly is that word, not a misheard name
                    parts = [sound(k) for k in range(i, i + n)]
                    key = parts[0][0] + parts[0][1] if n == 1 else join_sounds(parts)
                    result = index.lookup_approximate(candidate, key)
                    if result is not None:
                        hit = (result[0], result[1], n)
                        break
            if hit is None and not plain[i] and _opens_line(lowered, spans, i):
                short = index.lookup_opening(words[i])
                if short is not None and not is_everyday(words[i]):
                    hit = (short[0], short[1], 1)
            if hit is None:
                i += 1
                continue
            form, how, n = hit
            found.append((form, how, i, n))
            i += n
        return found

    def detect(
        self, speaker: str, text: str, now: float, *, is_dm: bool = False, record: bool = True
    ) -> AddressDecision:
        """Decide who answers ``text`` said by ``speaker`` at ``now`` (monotonic seconds).

        Records the outcome for the speaker's continuation; ``record=False`` only looks (a
        partial transcript: who would answer if the player stopped here).
        """
        if is_dm:
            puppet = self._puppet(text)
            if puppet is not None:
                return puppet
        heard, asked, unasked = self._hear(text)
        mentions = self._first_per_npc(heard)
        # A player never speaks to their own character ("I'm Arin, Bartok").
        asked = [k for k in asked if not (heard[k].character and heard[k].npc == speaker)]
        players = [heard[k].npc for k in asked if heard[k].character]
        asked = [k for k in asked if not heard[k].character]
        if players and not asked:  # "Arin, what do you think?": table talk
            if record:
                self._last.pop(speaker, None)
            who = ", ".join(dict.fromkeys(players))
            return AddressDecision([], f"spoken to {who} (a player's character)", mentions)
        if asked:
            chosen = list({heard[k].npc: heard[k] for k in reversed(asked)}.values())[::-1]
            names = [m.npc for m in chosen]
            self._remember(speaker, names, now, record)
            reason = "named " + ", ".join(f"{m.npc} ({m.how} '{m.matched}')" for m in chosen)
            passed = [
                heard[k].npc
                for k in unasked
                if heard[k].npc not in names and not heard[k].character
            ]
            if passed:
                reason += f"; {', '.join(dict.fromkeys(passed))} only thanked or greeted"
            return AddressDecision(names, reason, mentions)
        # A line about an NPC ("I don't trust Bartok", "let's ask Greymantle tomorrow") or
        # naming one that is not in the conversation is not said to the NPC of the
        # conversation, nor to the only NPC in the scene: nobody answers it.
        last = self._last.get(speaker)
        talking_with = set(last[0]) if last is not None else set()
        about = [
            m.npc
            for m in mentions
            if (not m.vocative or m.npc not in talking_with)
            and not self._noun_heard_as_name(m, talking_with)
        ]
        if about:
            who = ", ".join(dict.fromkeys(about))
            return AddressDecision([], f"NPCs only talked about, not to ({who})", mentions)
        if last is not None and now - last[1] <= self.continuation_window_s:
            names = [n for n in last[0] if n in self._npcs and not self._npcs[n].address_only]
            if names:
                self._remember(speaker, names, now, record)
                age = now - last[1]
                return AddressDecision(
                    names, f"continuation: {speaker} spoke to {names[0]} {age:.0f}s ago", mentions
                )
        if len(self._active) == 1:
            sole = self._npcs[self._active[0]]
            if not sole.address_only:
                self._remember(speaker, [sole.name], now, record)
                return AddressDecision([sole.name], f"sole active NPC {sole.name}", mentions)
        return AddressDecision([], "no clear addressee", mentions)

    def _noun_heard_as_name(self, mention: NameMention, talking_with: set[str]) -> bool:
        """A name of the NPC the player is talking with, after an article: "And what about
        the Bart?" was "the bard", heard as Bartok's alias (the recognizer is prompted with the
        NPCs' names). A person's name does not follow "the"; a role does ("the barkeep", "the
        captain": a lowercase alias, or a title), and still only talks about the NPC."""
        if mention.npc not in talking_with or mention.why not in _AFTER_ARTICLE:
            return False
        heard = normalize_text(mention.matched)
        words = WORD.findall(heard)
        if not words or words[0] in TITLES:
            return False
        npc = self._npcs.get(mention.npc)
        roles = {normalize_text(a) for a in (npc.aliases if npc else []) if a[:1].islower()}
        return heard not in roles and f"the {heard}" not in roles

    def _remember(self, speaker: str, names: list[str], now: float, record: bool) -> None:
        if record:
            self._last[speaker] = (names, now)

    def _puppet(self, text: str) -> AddressDecision | None:
        for pattern in (_PUPPET_PREFIX, _PUPPET_SAYS):
            match = pattern.match(text)
            if match is None:
                continue
            words = WORD.findall(normalize_text(match.group("name")))
            if not words or len(words) > _MAX_NGRAM + 1:
                continue
            words = [w for w in words if w not in ARTICLES] or words
            result = self._index.lookup("".join(words))
            if result is not None and not result[0].character:
                npc = result[0].npc
                return AddressDecision(
                    [npc], f"DM puppeting {npc}", puppet_text=match.group("text").strip()
                )
        return None


_OPENERS = frozenset("hey hi hello oi ok okay so well now and yo right".split())
_AFTER_ARTICLE = frozenset({"after 'the'", "after 'a'", "after 'an'"})


def _opens_line(lowered: str, spans: list[_Span], i: int) -> bool:
    """The word at ``i`` opens the line as a name said to someone does: first (or after "hey")
    and set off by a comma, "!", "?" or the line's end ("Mera, a pint!", "hey Oren!")."""
    if i > 1 or (i == 1 and spans[0][0] not in _OPENERS):
        return False
    after = lowered[spans[i][2] :].lstrip()
    return not after or after[0] in ",!?.:"
