"""How well the table took turns in a rehearsal: the endpointing wait and the cut-offs.

Pure functions of the transcript records (scene seconds), so they are tested without a model.
The endpointing wait is the time from a player's last word to their turn being declared over,
for every utterance (answered or not). A line is *cut off* when a turn of its speaker was
declared over while the line still had words to come (the speaker went on within the line,
i.e. within a second: lines only pause between words).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from campaigns.basics import percentile

__all__ = ["turn_taking"]

#: A turn that ended this much before the line's last word ended in the middle of the line
#: (VAD and the synthesizer's voicing threshold disagree on the last word by less than this).
_EARLY_S = 0.4


def turn_taking(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``endpoint_ms`` (p50/p95/n of the wait), ``reasons`` (why turns ended), ``cut_off``
    (lines cut off early, of how many, and which)."""
    ends = [r for r in records if r["type"] == "turn_end"]
    waits = [r["wait_ms"] for r in ends if r.get("wait_ms") is not None]
    lines = [r for r in records if r["type"] == "scripted" and r.get("speech_end") is not None]
    cut: list[str] = []
    for line in lines:
        start, stop = line["t"], line["speech_end"]
        early = [
            end
            for end in ends
            if end["speaker"] == line["speaker"]
            and end.get("speech_end") is not None
            and start <= end["speech_end"] <= stop - _EARLY_S
        ]
        if early:
            cut.append(
                f"{start:.1f}s {line['speaker']}: \u201c{line['text']}\u201d ended at "
                f"{early[0]['speech_end']:.1f}s ({early[0]['reason']}), line ends {stop:.1f}s"
            )
    summary: dict[str, Any] = {
        "endpoint_ms": None,
        "reasons": dict(Counter(r["reason"] for r in ends)),
        "cut_off": {"lines": len(lines), "cut": len(cut), "which": cut},
    }
    if waits:
        summary["endpoint_ms"] = {
            "p50": round(percentile(waits, 50), 1),
            "p95": round(percentile(waits, 95), 1),
            "n": len(waits),
        }
    return summary
