"""Spoken to or talked about: the role of each NPC name heard in a line, and who is asked.

A name is *spoken to* (a vocative) when it stands apart from the sentence: at the start of a
clause ("Bartok, a pint", "hey Bart is the stew good"), set off by a comma ("Another round,
Bartok!"), or at the end of a question or request ("can you open the gate captain"). It is
*talked about* when the sentence is about it: after a preposition or a verb that takes it as
an object ("ask Greymantle", "about the ghost", "I don't trust Bartok"), as the subject of a
statement or question ("Vessa thinks", "what did the ghost say", "Bartok slides a mug"), as a
possessive ("Bartok's ale") or after a determiner ("my grey cloak").

:func:`addressees` then follows the conversation clause by clause: a request goes to the names
spoken to in its clause, else to the latest names spoken to before it; a clause that only
thanks or greets ("Thanks, Bartok.") asks nothing, so in "Thanks, Bartok. Greymantle, where is
the tower?" only Greymantle answers. A line that only thanks or greets goes to whom it names.
"""

from __future__ import annotations

from dataclasses import dataclass

from npcs.name_words import TITLES

__all__ = ["Hit", "Role", "Words", "addressees", "judge"]

_SENTENCE_END = frozenset(".!?;")
_CLAUSE_END = frozenset('.!?;,:()"—–')
_SET_OFF = frozenset(",!?:")
# A name right after these is an object or the subject of a question: talked about.
_REFERENCE_BEFORE = frozenset(
    """about above across after against along among around as at before behind below beside
    besides between beyond by concerning despite except for from inside into like near of off
    onto over past regarding than through to toward towards under unlike until upon via with
    within without ask asked asking tell told telling trust trusted distrust see saw seen
    seeing meet met meeting find found finding kill killed follow followed visit visited
    know knew known remember remembered recall recalled hear heard call called pay paid give
    gave given bring brought take took taken help helped attack attacked hit fight fought
    love loved hate hated fear feared need needed want wanted warn warned show showed shown
    blame blamed believe believed sell sold buy bought rob robbed stab stabbed shoot shot
    hire hired bribe bribed convince convinced join joined leave left suspect suspected watch
    watched punch punched poison poisoned heal healed thank thanked free freed save saved
    did does do is was are were be been being has have had will would can could should shall
    may might must isn wasn aren weren doesn didn don hasn haven hadn won wouldn couldn
    shouldn""".split()
)
_DETERMINERS = frozenset(
    "the a an my your his her our their its this that these those some any no every".split()
)
# A name followed by these (with no comma) is the subject of a statement about the NPC.
_REFERENCE_AFTER = frozenset(
    """is was isn wasn has had hasn said says thinks thought knows knew seems seemed looks
    looked will would won doesn didn does did can could might must should shall may wants
    wanted needs needed told tells gave gives took takes went goes came comes got gets ll d
    ve re and or who""".split()
)
_NOT_VERBS = frozenset(
    """this his hers its yes thanks perhaps always sometimes towards afterwards as us plus
    less unless news lots guys folks yours ours theirs whats hows wheres whos lets thats
    heres theres please cheers nevertheless besides""".split()
)
# Words that may come before a name at the start of a clause and leave it at the start:
# greetings, thanks, fillers ("hey Bart", "okay Tomas", "thank you, Aldric").
_OPENERS = frozenset(
    """hey hi hello hiya howdy oi yo ahoy hail greetings okay ok alright right so well now
    listen look please excuse me thanks thank you cheers ta sorry oh ah um uh er hmm and but
    wait hold on come dear good morning evening afternoon night day great nice one perfect
    awesome excellent cool fine sure yes yeah yep no nope got it much appreciated obliged
    very lot a bye goodbye farewell there again welcome then""".split()
)
_ACK = _OPENERS - {"and", "but", "listen", "look", "wait", "hold", "come", "excuse", "please"}
"""Words of a clause that only thanks, greets or acknowledges: it asks nothing."""
_YOU = frozenset("you your yours youre yourself ya ye thee thou me us please lets".split())
_QUESTION_START = frozenset(
    """what whats where wheres when why how hows who whos which can could would will do does
    did is are have has may shall should""".split()
)
_LINKS = frozenset({"and", "or", "n"})
_AUXILIARIES = frozenset(
    "can could would will do does did is are have has may shall should".split()
)
_SUBJECTS = frozenset("i we you he she they it someone anyone anybody somebody".split())
"""After a name and an auxiliary, these make a question to the name ("Bartok, can we ...")."""


@dataclass(frozen=True, slots=True)
class Hit:
    """One name heard: words ``start`` to ``start + count`` of the line."""

    npc: str
    start: int
    count: int


@dataclass(frozen=True, slots=True)
class Role:
    vocative: bool
    why: str


class Words:
    """A line's words with where its sentences and clauses begin.

    Args:
        text: the line, lowercased (``normalize_text``).
        spans: per word ``(word, start, end, possessive)``; ``end`` is the end of the word
            without a possessive "'s".
    """

    __slots__ = ("clause_start", "possessive", "sentence", "set_off_after", "words")

    def __init__(self, text: str, spans: list[tuple[str, int, int, bool]]) -> None:
        self.words = [span[0] for span in spans]
        self.possessive = [span[3] for span in spans]
        ends = [span[2] + 2 if span[3] else span[2] for span in spans]
        starts = [span[1] for span in spans[1:]]
        starts.append(len(text))
        # What follows each word up to the next one: " ", ", ", "? ", "" ...
        self.set_off_after = [
            text[end:start].strip() for end, start in zip(ends, starts, strict=True)
        ]
        self.sentence = [0] * len(spans)
        self.clause_start = [0] * len(spans)
        sentence = clause = 0
        for i, gap in enumerate(self.set_off_after[:-1], 1):
            if gap:
                if not _SENTENCE_END.isdisjoint(gap):
                    sentence += 1
                if not _CLAUSE_END.isdisjoint(gap):
                    clause = i
            self.sentence[i] = sentence
            self.clause_start[i] = clause

    def same_sentence(self, a: int, b: int) -> bool:
        return (
            0 <= a < len(self.words)
            and 0 <= b < len(self.words)
            and (self.sentence[a] == self.sentence[b])
        )

    def at_clause_start(self, i: int) -> bool:
        """Only openers ("hey", "thanks", "okay") come before word ``i`` in its clause."""
        return all(self.words[k] in _OPENERS for k in range(self.clause_start[i], i))

    def clause_break_before(self, i: int) -> bool:
        return i > 0 and self.clause_start[i] == i


def judge(words: Words, hits: list[Hit]) -> list[Role]:
    """The role of each hit; names joined by "and", "or" or commas share one role."""
    roles: list[Role] = []
    k = 0
    while k < len(hits):
        group_end = k
        while group_end + 1 < len(hits) and _linked(words, hits[group_end], hits[group_end + 1]):
            group_end += 1
        role = _role(words, hits[k].start, hits[group_end].start + hits[group_end].count - 1)
        roles += [role] * (group_end - k + 1)
        k = group_end + 1
    return roles


def _linked(words: Words, a: Hit, b: Hit) -> bool:
    """``b`` continues ``a``'s list of names ("Bartok and Greymantle", "Bartok, Greymantle,")."""
    end = a.start + a.count
    if not words.same_sentence(a.start, b.start) or words.possessive[end - 1]:
        return False
    between = words.words[end : b.start]
    return all(word in _LINKS for word in between) and len(between) <= 1


def _role(words: Words, first: int, last: int) -> Role:
    said = words.words
    while first > 0 and said[first - 1] in TITLES and words.same_sentence(first - 1, first):
        first -= 1  # "Father Aldric": a title the index does not know is still part of the name
    if words.possessive[last]:
        return Role(False, "possessive")
    prev = first - 1 if first > 0 and words.same_sentence(first - 1, first) else None
    if prev is not None and not words.clause_break_before(first):
        before = said[prev]
        if words.possessive[prev]:
            return Role(False, f'after "{before}\'s"')
        if before in _DETERMINERS or before in _REFERENCE_BEFORE:
            return Role(False, f"after '{before}'")
    after = words.set_off_after[last]
    nxt = last + 1 if words.same_sentence(last + 1, last) else None
    set_off = bool(after) and after[0] in _SET_OFF
    if words.at_clause_start(first):
        if set_off or nxt is None:
            return Role(True, "set off at the start")
        following = said[nxt]
        if following in _AUXILIARIES and _subject_follows(words, nxt):
            return Role(True, f"asked '{following} {said[nxt + 1]}'")
        if following in _REFERENCE_AFTER or _third_person(following):
            return Role(False, f"subject of '{following}'")
        if prev is not None and said[prev] in _OPENERS:
            return Role(True, f"after '{said[prev]}'")
        return Role(True, "starts the request")
    if (set_off or nxt is None) and _asks(words, first):
        return Role(True, "ends a question or request")
    return Role(False, "inside a sentence about them")


def _subject_follows(words: Words, i: int) -> bool:
    return words.same_sentence(i, i + 1) and words.words[i + 1] in _SUBJECTS


def _third_person(word: str) -> bool:
    """A verb form that makes the name before it the subject ("slides", "walked")."""
    if word in _NOT_VERBS or len(word) < 3:
        return False
    if word.endswith("s"):
        return not word.endswith(("ss", "us", "is"))
    return word.endswith("ed") and len(word) >= 4 and not word.endswith("eed")


def _asks(words: Words, i: int) -> bool:
    """The sentence around word ``i`` speaks to someone: "you", "me", or a question."""
    sentence = words.sentence[i]
    indices = [k for k in range(len(words.words)) if words.sentence[k] == sentence]
    said = [words.words[k] for k in indices]
    if not _YOU.isdisjoint(said):
        return True
    opening = next((word for word in said if word not in _OPENERS), "")
    if opening in _QUESTION_START:
        return True
    return words.set_off_after[indices[-1]].startswith("?")


def addressees(words: Words, hits: list[Hit], roles: list[Role]) -> tuple[list[int], list[int]]:
    """(indices of the hits asked, indices of hits spoken to but not asked) in order.

    Clause by clause: a request goes to the names spoken to in it, else to the latest names
    spoken to before it; thanks and greetings ask nothing unless nothing else is asked.
    """
    spoken = {hits[k].start: k for k in range(len(hits)) if roles[k].vocative}
    if len({words.clause_start[start] for start in spoken}) <= 1:
        return list(spoken.values()), []  # one clause speaks to them: it asks or it is all
    names_at = {hits[k].start + j for k in spoken.values() for j in range(hits[k].count)}
    asked: list[int] = []
    pending: list[int] = []
    pending_names_only = False
    clause_starts = sorted(set(words.clause_start))
    for n, start in enumerate(clause_starts):
        end = clause_starts[n + 1] if n + 1 < len(clause_starts) else len(words.words)
        here = [spoken[i] for i in range(start, end) if i in spoken]
        rest = [words.words[i] for i in range(start, end) if i not in names_at]
        if all(word in _LINKS for word in rest):
            continued = (
                pending_names_only
                and pending
                and words.same_sentence(hits[pending[-1]].start, start)
            )
            pending = (pending + here) if continued else (here or pending)
            pending_names_only = bool(here)
        elif all(word in _ACK for word in rest):
            pending = here or pending
            pending_names_only = False
        else:
            asked += here or pending
            pending, pending_names_only = [], False
    if not asked:
        asked = pending
    asked = list(dict.fromkeys(asked))
    unasked = [k for k in spoken.values() if k not in asked]
    return asked, unasked
