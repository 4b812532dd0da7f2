"""Rehearsal outputs that are pure functions of the turn records: latency.json, the latency chart
(PNG) and report.md. Kept apart from the runner so they can be tested without any model."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bot.table.session.spend import cost_lines
from campaigns.basics import percentile

__all__ = ["latency_summary", "write_chart", "write_latency_json", "write_report"]

log = logging.getLogger(__name__)

#: Stages drawn as stacked segments (voice_to_voice is their sum, not a segment).
_SEGMENTS = (
    "endpoint",
    "stt_final",
    "queue",
    "route",
    "llm_first_token",
    "first_sentence",
    "tts_first_audio",
    "to_playback",
)
_COLORS = (
    "#b3b3e6", "#8da0cb", "#e5c494", "#bbbbbb", "#fc8d62", "#ffd92f", "#66c2a5", "#e78ac3",
)  # fmt: skip


def _pcts(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {
        "n": len(values),
        "p50": round(percentile(values, 50), 1),
        "p95": round(percentile(values, 95), 1),
        "max": round(max(values), 1),
    }


def latency_summary(turns: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """p50/p95 per stage over the turns that reached playback, plus overhead and FAST-only v2v."""
    stages: dict[str, list[float]] = {}
    for turn in turns:
        for stage, ms in turn["stages_ms"].items():
            if ms is not None:
                stages.setdefault(stage, []).append(ms)
    overhead = [t["overhead_ms"] for t in turns if t.get("overhead_ms") is not None]
    fast_v2v = [
        t["stages_ms"]["voice_to_voice"]
        for t in turns
        if t["tier"] == "fast" and t["stages_ms"].get("voice_to_voice") is not None
    ]
    return {
        "stages": {stage: _pcts(values) for stage, values in stages.items()},
        "overhead_ms": _pcts(overhead),
        "voice_to_voice_fast_ms": _pcts(fast_v2v),
        "turns": len(turns),
        "interrupted": sum(1 for t in turns if t.get("interrupted")),
        "failed": sum(1 for t in turns if t.get("error")),
        "budget_hit": sum(1 for t in turns if t.get("budget_hit")),
        "repairs": _repair_totals(turns),
        "tool_calls": sum(len(t.get("tools") or ()) for t in turns),
    }


def _repair_totals(turns: Sequence[dict[str, Any]]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for turn in turns:
        for kind, times in (turn.get("repairs") or {}).items():
            totals[kind] = totals.get(kind, 0) + times
    return totals


def _repairs_text(repairs: dict[str, int]) -> str:
    return ", ".join(f"{kind} {times}" for kind, times in repairs.items())


def write_latency_json(
    path: Path,
    turns: Sequence[dict[str, Any]],
    turn_taking: dict[str, Any] | None = None,
    cost: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """latency.json: the summary (with ``turn_taking`` and the night's ``cost`` when given)
    and every turn."""
    summary = latency_summary(turns)
    if turn_taking is not None:
        summary["turn_taking"] = turn_taking
    if cost is not None:
        summary["cost"] = cost
    path.write_text(json.dumps({"summary": summary, "turns": list(turns)}, indent=2) + "\n")
    return summary


def write_chart(path: Path, turns: Sequence[dict[str, Any]], title: str = "") -> bool:
    """Stacked horizontal bars, one per turn, of the stage latencies. False if nothing to draw."""
    drawable = [t for t in turns if t["stages_ms"].get("voice_to_voice") is not None]
    if not drawable:
        return False
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.45 * len(drawable)))
    try:
        labels = [f"#{t['turn']} {t['npc']} ({t['tier']})" for t in drawable]
        y = list(range(len(drawable)))
        left = [0.0] * len(drawable)
        for stage, color in zip(_SEGMENTS, _COLORS, strict=True):
            widths = [max(0.0, t["stages_ms"].get(stage) or 0.0) for t in drawable]
            ax.barh(y, widths, left=left, color=color, label=stage, height=0.6)
            left = [a + b for a, b in zip(left, widths, strict=True)]
        for yi, turn in zip(y, drawable, strict=True):
            v2v = turn["stages_ms"]["voice_to_voice"]
            ax.text(v2v + 15, yi, f"{v2v:.0f} ms", va="center", fontsize=8)
        ax.axvline(800, color="red", linestyle="--", linewidth=0.8, label="FAST goal 0.8 s")
        ax.set_yticks(y, labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("milliseconds from end of player speech (endpoint: until the turn is over)")
        ax.set_title(title or "Voice-to-voice latency by stage")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncols=7)
        fig.savefig(path, dpi=110, bbox_inches="tight")
    finally:
        plt.close(fig)
    return True


def _fmt(stats: dict[str, float] | None) -> str:
    if not stats:
        return "n/a"
    return f"p50 {stats['p50']:.0f} ms, p95 {stats['p95']:.0f} ms (n={stats['n']:.0f})"


def _why(turn: dict[str, Any]) -> str:
    """The tier decision's reason, e.g. " (DEEP phrase 'take your time')"."""
    reason = turn.get("tier_reason")
    return f" ({reason})" if reason else ""


def _turn_taking_lines(taking: dict[str, Any] | None) -> list[str]:
    if not taking:
        return []
    cut = taking["cut_off"]
    reasons = ", ".join(f"{why} {n}" for why, n in sorted(taking["reasons"].items())) or "none"
    share = f" ({cut['cut'] / cut['lines']:.0%})" if cut["lines"] else ""
    lines = [
        f"- Endpointing wait (last word to the turn declared over), every player turn: "
        f"{_fmt(taking['endpoint_ms'])}; ended by: {reasons}",
        f"- Lines cut off early (a turn ended while the player still had words to say): "
        f"{cut['cut']} of {cut['lines']}{share}",
    ]
    return lines + [f"  - {which}" for which in cut["which"]]


def write_report(
    path: Path,
    *,
    title: str,
    turns: Sequence[dict[str, Any]],
    summary: dict[str, Any],
    outputs: dict[str, str],
    checks: Sequence[str] = (),
    notes: Sequence[str] = (),
    verdict: Sequence[str] = (),
    alerts: Sequence[str] = (),
) -> None:
    """A short human-readable report.md: the verdict first (PASS, or FAIL and what failed),
    what the DM was told, headline numbers, one line per turn, checks, output files."""
    lines = [f"# Rehearsal: {title}", ""]
    if verdict:
        lines += [*verdict, ""]
    if alerts:
        lines += ["## What the DM was told", "", *[f"- {alert}" for alert in alerts], ""]
    if summary.get("cost") is not None:
        lines += ["## Cost", "", *cost_lines(summary["cost"]), ""]
    stages = summary["stages"]
    repaired = _repairs_text(summary.get("repairs") or {})
    lines += [
        f"- Turns: {summary['turns']} ({summary['interrupted']} interrupted, "
        f"{summary['failed']} failed); tool calls: {summary.get('tool_calls', 0)}",
        f"- What the NPCs said: {summary.get('budget_hit', 0)} answers cut at their spoken "
        f"budget; clean speech repaired: {repaired or 'nothing'}",
        f"- Voice-to-voice (end of player speech to first NPC audio): "
        f"{_fmt(stages.get('voice_to_voice'))}",
        f"- Voice-to-voice, FAST turns: {_fmt(summary['voice_to_voice_fast_ms'])}",
        f"- Pipeline overhead (total minus models, endpointing and floor waits): "
        f"{_fmt(summary['overhead_ms'])}",
        *_turn_taking_lines(summary.get("turn_taking")),
        "",
        "## Stages (p50 / p95 ms)",
        "",
        "| stage | p50 | p95 | n |",
        "|---|---:|---:|---:|",
    ]
    for stage, stats in stages.items():
        if stats:
            lines.append(f"| {stage} | {stats['p50']:.0f} | {stats['p95']:.0f} | {stats['n']} |")
    lines += ["", "## Turns", ""]
    for turn in turns:
        v2v = turn["stages_ms"].get("voice_to_voice")
        if v2v is not None:
            latency = f"{v2v:.0f} ms"
        else:
            latency = "played" if turn.get("played") else "no audio"
        tools = ", ".join(f"{t['name']}={t['status']}" for t in turn["tools"]) or "no tools"
        flag = " (interrupted)" if turn.get("interrupted") else ""
        flag += f" (error: {turn['error']})" if turn.get("error") else ""
        flag += f' (said "{turn["fallback"]}" instead)' if turn.get("fallback") else ""
        flag += f" (reaction dropped: {turn['dropped']})" if turn.get("dropped") else ""
        if turn.get("budget_hit"):
            flag += f" (cut at its {turn.get('budget_words')}-word budget)"
        if turn.get("repairs"):
            flag += f" (repaired: {_repairs_text(turn['repairs'])})"
        who = turn.get("reaction_to") or turn["speaker"]  # a reaction hears an NPC's answer
        heard = f"{who}: \u201c{turn['heard']}\u201d -> " if turn["heard"] else ""
        lines.append(
            f"- #{turn['turn']} {heard}**{turn['npc']}** [{turn['tier']}{_why(turn)}; {latency}; "
            f"{tools}]"
            f"{flag}: {' '.join((turn['spoken'] or turn['reply'] or '(silent)').split())}"
        )
    if checks:
        lines += ["", "## Checks", "", *[f"- {c}" for c in checks]]
    if notes:
        lines += ["", "## Notes", "", *[f"- {n}" for n in notes]]
    lines += ["", "## Files", "", *[f"- `{name}`: {what}" for name, what in outputs.items()], ""]
    path.write_text("\n".join(lines))
