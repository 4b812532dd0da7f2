"""Turn-taking figures of a rehearsal, from its transcript records (no model)."""

from __future__ import annotations

from bot.frontends.rehearsal.turn_taking import turn_taking


def _line(t: float, speaker: str, text: str, end: float) -> dict:  # type: ignore[type-arg]
    return {"t": t, "type": "scripted", "speaker": speaker, "text": text, "speech_end": end}


def _end(speaker: str, start: float, end: float, reason: str, wait: float) -> dict:  # type: ignore[type-arg]
    return {"t": end + wait / 1000, "type": "turn_end", "speaker": speaker,
            "speech_start": start, "speech_end": end, "reason": reason, "silence_ms": wait,
            "wait_ms": wait}  # fmt: skip


def test_a_turn_ended_inside_its_line_is_a_cut_off() -> None:
    records = [
        _line(1.0, "Arin", "Bartok, what's on tap tonight?", 2.5),
        _end("Arin", 1.0, 2.5, "sounds finished", 210.0),
        _line(5.0, "Tobble", "Greymantle, tell me about the Black Candle.", 7.6),
        _end("Tobble", 5.0, 5.7, "sounds finished", 200.0),  # after "Greymantle," only
        _end("Tobble", 5.9, 7.6, "sounds finished", 230.0),
        _line(9.0, "Arin", "Great, pour me a pint.", 10.1),
        _end("Arin", 9.0, 10.0, "hangover", 1000.0),  # VAD ends 0.1 s before the synthesizer
    ]
    taking = turn_taking(records)
    assert taking["cut_off"]["lines"] == 3 and taking["cut_off"]["cut"] == 1
    assert "Tobble" in taking["cut_off"]["which"][0]
    assert taking["endpoint_ms"] == {"p50": 230.0, "p95": 1000.0, "n": 4}  # nearest rank
    assert taking["reasons"] == {"sounds finished": 3, "hangover": 1}


def test_no_turns_no_figures() -> None:
    taking = turn_taking([_line(1.0, "Arin", "Hello.", 1.5)])
    assert taking["endpoint_ms"] is None
    assert taking["cut_off"] == {"lines": 1, "cut": 0, "which": []}
