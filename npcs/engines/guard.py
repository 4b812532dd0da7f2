"""What a small model must never say out loud: other speakers' lines and imitated tool calls.

Tiny local models (SmolLM2-135M) continue the scene transcript they were shown ("... Tobble:
Greymantle, you are ...") and copy the tool-call syntax of their prompt into plain text
(``functions.query_entities: {"name": "Arin"}``). :class:`ContentGuard` sits between the
model's text stream and the sentence splitter: it strips a leading speaker label, ends the
answer where another speaker's line begins, and holds back an imitated tool call, which
:func:`imitated_calls` turns into real calls when the tool is visible to the NPC (the host
re-checks whitelist and tier as for any call).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Sequence
from typing import Any, get_args

from campaigns.content import EntityType
from tools.host.types import ToolCall

__all__ = [
    "ContentGuard",
    "calls_written_as_text",
    "imitated_calls",
    "parrots",
    "speaker_stops",
]

#: ``functions.NAME:`` (llama.cpp's chatml-function-calling syntax), ``Functions:``,
#: ``NAME({`` or any JSON object: never speech.
_IMITATION = re.compile(r"functions?\s*[.:]|\b[A-Za-z_]\w*\s*\(\s*\{|\{\s*[\"'&]", re.IGNORECASE)
_FUNCTIONS_CALL = re.compile(r"functions\s*\.\s*([A-Za-z_][\w .-]*?)\s*:")
_PAREN_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(\s*(?=\{)")
#: A trailing word that may still become ``NAME({`` or ``functions.NAME:``.
_PARTIAL_CALL = re.compile(r"[A-Za-z_]\w*\s*(?:\(\s*)?|\{\s*", re.IGNORECASE)


log = logging.getLogger(__name__)

_WORDS = re.compile(r"[a-z0-9']+")

#: What may stand in brackets after a name in a label: the prompt's "(you)" and the kinds of the
#: campaign facts ("- Bartok (npc): Dwarf barkeep"), which the model copies as "Bartok (npc):"
#: (small models often do, and the voice would speak the label).
_KINDS: tuple[str, ...] = get_args(EntityType)
_TAGS = tuple(dict.fromkeys(["you", *_KINDS, *(kind.replace("_", " ") for kind in _KINDS)]))


def parrots(sentence: str, heard: str) -> bool:
    """True when ``sentence`` only repeats a run of the player's words (``heard``): small
    models open with an echo of their prompt ("Bartok, what's on tap tonight?")."""
    said = _WORDS.findall(sentence.lower())
    words = _WORDS.findall(heard.lower())
    size = len(said)
    return bool(said) and any(words[i : i + size] == said for i in range(len(words) - size + 1))


def speaker_stops(names: Iterable[str], *, limit: int | None = None) -> list[str]:
    """Stop sequences that end an answer where the model starts another speaker's line."""
    stops: list[str] = []
    for name in names:
        stop = f"\n{name.strip()}:"
        if name.strip() and stop not in stops:
            stops.append(stop)
    return stops[:limit] if limit is not None else stops


class ContentGuard:
    """Filter one round of streamed model text: ``push`` returns what may be spoken now,
    ``flush`` the rest at the end of the stream; ``stopped`` turns True when another speaker's
    line begins (stop reading), ``held`` is an imitated tool call that was not spoken.

    Args:
        names: the other speakers at the table (players, NPCs).
        own: the NPC's name and aliases (a leading "Name:" label of these is only stripped).
    """

    def __init__(self, names: Iterable[str], *, own: Iterable[str] = ()) -> None:
        self._own = {n.strip().lower() for n in own if n.strip()}
        unique = sorted({n.strip() for n in [*names, *own] if n.strip()}, key=len, reverse=True)
        alternatives = "|".join(re.escape(n) for n in unique)
        tags = "|".join(re.escape(tag) for tag in _TAGS)
        self._label = (
            re.compile(
                rf"(?:(?<=\s)|^)({alternatives})(?:\s*\((?:{tags})\))?"
                r"(?:\s+sa(?:ys|id)(?:\s+to\s+you)?)?\s*:",
                re.IGNORECASE,
            )
            if alternatives
            else None
        )
        # "Arin says to you:" echoes the prompt's layout
        suffixes = ("", *(f" ({tag})" for tag in _TAGS), " says", " says to you", " said",
                    " said to you")  # fmt: skip
        self._labels = [f"{n.lower()}{suffix}:" for n in unique for suffix in suffixes]
        self._hold = max([len(label) for label in self._labels] + [16])
        self._buffer = ""
        self._started = False
        self.stopped = False
        self.held = ""
        self.labels = 0
        """Speaker labels it cut: the NPC's own stripped, or another speaker's line ended."""

    def push(self, text: str) -> str:
        """Add streamed text; return the part that is safe to speak now."""
        if self.stopped:
            return ""
        if self.held:
            self.held += text
            return ""
        self._buffer += text
        if not self._started:
            stripped = self._buffer.lstrip()
            if not stripped or any(label.startswith(stripped.lower()) for label in self._labels):
                return ""  # it may still turn out to be a leading "Name:" label
            self._started = True
            self._buffer = self._strip_label(stripped)
            if self.stopped:
                return ""
        return self._release(final=False)

    def flush(self) -> str:
        """The end of the stream: whatever is left and safe to speak."""
        if self.stopped or self.held:
            return ""
        if not self._started:
            self._started = True
            self._buffer = self._strip_label(self._buffer.lstrip())
            if self.stopped:
                return ""
        return self._release(final=True)

    def _strip_label(self, text: str) -> str:
        """Drop the NPC's own leading "Name:" label; another speaker's label means the model
        is writing their line: nothing of it is spoken."""
        if self._label is not None:
            match = self._label.match(text)
            if match:
                self.labels += 1
            if match and match.group(1).lower() in self._own:
                return text[match.end() :].lstrip()
            if match:
                self.stopped = True
                return ""
        return text

    def _release(self, *, final: bool) -> str:
        text = self._buffer
        cut = len(text)
        label = self._label.search(text) if self._label is not None else None
        if label is not None:
            cut = label.start()
        imitation = _IMITATION.search(text, 0, cut)
        if imitation is not None:
            self.held = text[imitation.start() :]
            self._buffer = ""
            return text[: imitation.start()]
        if label is not None:
            self.stopped = True
            self.labels += 1
            self._buffer = ""
            return text[:cut]
        if final:
            self._buffer = ""
            return text
        start = self._partial_start(text)
        self._buffer = text[start:]
        return text[:start]

    def _partial_start(self, text: str) -> int:
        """Where a label or call that the next text may complete begins (else the end)."""
        for index in range(max(0, len(text) - self._hold), len(text)):
            if index > 0 and not text[index - 1].isspace():
                continue
            tail = text[index:].lower()
            if _PARTIAL_CALL.fullmatch(tail):
                return index
            if any(label.startswith(tail) for label in self._labels):
                return index
        return len(text)


def imitated_calls(text: str, visible: Sequence[str], *, id_prefix: str) -> list[ToolCall]:
    """Tool calls written as text (``functions.NAME: {json}`` or ``NAME({json})``) whose NAME
    is one of the ``visible`` tools (spaces and case forgiven); arguments that are not a JSON
    object become ``{}``. Anything else in ``text`` is dropped."""
    by_key = {_key(name): name for name in visible}
    calls: list[ToolCall] = []
    matches = [*_FUNCTIONS_CALL.finditer(text), *_PAREN_CALL.finditer(text)]
    for match in sorted(matches, key=lambda m: m.start()):
        name = by_key.get(_key(match.group(1)))
        if name is None:
            continue
        calls.append(ToolCall(f"{id_prefix}_{len(calls)}", name, _json_object_after(text, match)))
    return calls


def _key(name: str) -> str:
    return re.sub(r"[\s.-]+", "_", name.strip()).lower()


def _json_object_after(text: str, match: re.Match[str]) -> str:
    start = text.find("{", match.end())
    if start < 0 or text[match.end() : start].strip():
        return "{}"
    try:
        value, _ = json.JSONDecoder().raw_decode(text, start)
    except ValueError:
        return "{}"
    return json.dumps(value) if isinstance(value, dict) else "{}"


def calls_written_as_text(
    npc_name: str, text: str, offered: Sequence[dict[str, Any]], depth: int
) -> list[ToolCall]:
    """A tool call the model wrote as text: never spoken; run if the tool is offered."""
    visible = [tool["function"]["name"] for tool in offered]
    calls = imitated_calls(text, visible, id_prefix=f"call_text_{depth}")
    log.info(
        "%s: dropped a tool call written as text (%d run as real calls): %s",
        npc_name,
        len(calls),
        text if len(text) <= 120 else text[:120] + "...",
    )
    return calls
