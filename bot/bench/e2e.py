"""``glyphoxa bench e2e``: voice-to-voice latency on the local stack, alone and at a full table.

Runs the example campaign's scene (``--quick``: its first two lines), then ten short FAST lines
to its barkeep (the goal's sample), then the same ten lines at a full table (two more players
talking to each other over every answered turn, a fourth listening; skipped by ``--quick``),
then the ten lines with an instant scripted LLM (the pipeline's floor), all through
``rehearse`` at real time: synthesized players, real VAD, turn model and Whisper, the local LLM
server, real tools, Piper and the mixer. Voice-to-voice is the end of the player's speech (when
the last voiced frame was pushed) to the first NPC audio frame pulled from the mixer; the
endpointing wait is the end of speech to the turn being declared over. Overhead is
voice-to-voice minus the time inside models, the endpointing wait and waiting for another NPC.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from bot.bench.e2e_goals import E2eGoals, goals_for
from bot.bench.e2e_scenes import EXAMPLE_SCENE, cause_summary, fast_scene
from bot.bench.machine import describe_machine
from bot.bench.result import BenchResult
from bot.settings.providers import LlmProvider
from campaigns.basics import percentile

__all__ = ["EXAMPLE_SCENE", "run_bench"]


def _progress(message: str) -> None:
    print(f"  e2e: {message}", file=sys.stderr, flush=True)


def _stats(values: list[float]) -> dict[str, float]:
    return {"p50": percentile(values, 50), "p95": percentile(values, 95), "n": len(values)}


def _v2v(turns: list[dict[str, Any]], *, fast_only: bool = False) -> list[float]:
    return [
        t["stages_ms"]["voice_to_voice"]
        for t in turns
        if t["heard"]
        and t["stages_ms"]["voice_to_voice"] is not None
        and (not fast_only or t["tier"] == "fast")
    ]


class _Tally:
    """Every rehearsed turn and line of the bench run, for the figures across runs."""

    def __init__(self) -> None:
        self.turns: list[dict[str, Any]] = []
        self.lines = self.cut = 0
        self.which: list[str] = []
        self.waits: list[float] = []

    def add(self, result: Any) -> None:
        self.turns += [t for t in result.turns if t["heard"]]
        taking = result.summary.get("turn_taking") or {}
        cut = taking.get("cut_off") or {}
        self.lines += cut.get("lines", 0)
        self.cut += cut.get("cut", 0)
        self.which += cut.get("which", [])
        self.waits += [
            r["wait_ms"]
            for r in result.events
            if r["type"] == "turn_end" and r.get("wait_ms") is not None
        ]


async def run_bench(quick: bool, peer: str | None = None) -> list[BenchResult]:
    """Every figure above; ``peer`` (``--peer pipecat``) adds the same FAST lines through that
    framework, alternated line by line with ours in this run (:mod:`bot.bench.peer`)."""
    from bot.frontends.rehearsal.runner import rehearse
    from bot.frontends.rehearsal.scene import load_scene
    from bot.settings.loader import load_config

    comparison = None
    if peer is not None:  # its virtualenv first: an install problem is said at once
        from bot.bench.peer import PeerComparison

        comparison = PeerComparison(peer, _progress)
        await comparison.prepare()
    config = load_config(None)
    scene = load_scene(EXAMPLE_SCENE)
    if quick:
        scene = scene.model_copy(update={"lines": scene.lines[:2], "dm": []})
    tally = _Tally()
    goals = goals_for(describe_machine().flags)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="glyphoxa-e2e-") as folder:
        result = await rehearse(
            scene, config, Path(folder), speed=1.0, playout_speed=8.0, progress=_progress
        )
    tally.add(result)
    wall_s = time.monotonic() - started
    turns = [t for t in result.turns if t["heard"]]  # player turns (not DM `say`)
    method = (
        f"example scene ({len(scene.lines)} lines, {len(turns)} NPC turns) through glyphoxa "
        f"rehearse at 1x on {config.providers.llm.name} LLM, {config.providers.stt.model} STT; "
        f"end of voiced player audio -> first NPC frame from the mixer; {wall_s:.0f} s wall"
    )
    results = _scene_results(result, turns, method)
    alone = (
        await _fast_set(config, "local LLM", tally, goals, full_table=False) if not quick else []
    )
    results += alone
    if not quick:
        crowded = await _fast_set(config, "local LLM", tally, goals, full_table=True)
        results += crowded
        if alone and crowded:
            ratio = crowded[0].value / alone[0].value
            same = f"the two runs above, same lines, same machine; {_judged(goals)}"
            limit = goals.full_table_ratio
            results.append(BenchResult("full table / alone, FAST voice-to-voice p50", ratio,
                                       "x", same, f"<= {limit:g}", ratio <= limit))  # fmt: skip
    instant = _with_instant_llm(config)
    results += await _fast_set(instant, "instant LLM", tally, goals, full_table=False)
    results += _tally_results(tally, goals)
    if comparison is not None:
        _progress(f"the same FAST lines through {peer}, alternated with ours")
        results += await comparison.rows(quick=quick)
    return results


def _scene_results(result: Any, turns: list[dict[str, Any]], method: str) -> list[BenchResult]:
    stages: dict[str, Any] = {}
    for stage in ("endpoint", "stt_final", "queue", "route", "llm_first_token",
                  "first_sentence", "tts_first_audio", "to_playback"):  # fmt: skip
        values = [t["stages_ms"][stage] for t in turns if t["stages_ms"].get(stage) is not None]
        if values:
            stages[stage] = round(percentile(values, 50), 1)
    extra = {"stage_p50_ms": stages, "checks": [str(check) for check in result.checks],
             "causes": cause_summary(turns)}  # fmt: skip
    v2v, fast = _v2v(turns), _v2v(turns, fast_only=True)
    if not v2v:
        return [BenchResult("voice-to-voice", float("nan"), "ms", method + "; no NPC audio",
                            None, False, extra)]  # fmt: skip
    stats = _stats(v2v)
    out = [
        BenchResult("voice-to-voice p50 (all turns of the scene)", stats["p50"], "ms", method,
                    extra={**extra, "p95_ms": stats["p95"], "n": stats["n"]}),
        BenchResult("voice-to-voice p95 (all turns of the scene)", stats["p95"], "ms", method),
    ]  # fmt: skip
    if fast:
        fast_stats = _stats(fast)
        out.append(BenchResult("voice-to-voice p50 (FAST turns of the scene)", fast_stats["p50"],
                               "ms", method, extra={"p95_ms": fast_stats["p95"],
                                                    "n": fast_stats["n"]}))  # fmt: skip
    overhead = [t["overhead_ms"] for t in turns if t["overhead_ms"] is not None]
    if overhead:
        p95 = percentile(overhead, 95)
        out.append(BenchResult(
            "pipeline overhead p95", p95, "ms",
            method + "; voice-to-voice minus STT/LLM/TTS compute, endpointing and floor waits",
            "<= 30 ms", p95 <= 30.0, {"p50_ms": percentile(overhead, 50), "n": len(overhead)},
        ))  # fmt: skip
    return out


def _judged(goals: E2eGoals) -> str:
    return f"goal for a machine {goals.machine} (bot.bench.e2e_goals)"


def _tally_results(tally: _Tally, goals: E2eGoals) -> list[BenchResult]:
    out: list[BenchResult] = []
    answered = [t["stages_ms"]["endpoint"] for t in tally.turns
                if t["stages_ms"].get("endpoint") is not None]  # fmt: skip
    if answered:
        waits = _stats(answered)
        out.append(BenchResult(
            "endpointing wait p50 (every turn an NPC answered)", waits["p50"], "ms",
            f"last voiced frame pushed -> the lane declared the turn over, n={waits['n']} "
            f"(every answered line of this run, all complete sentences); {_judged(goals)}",
            f"<= {goals.endpoint_p50_ms:.0f} ms", waits["p50"] <= goals.endpoint_p50_ms,
            {"p95_ms": waits["p95"]},
        ))  # fmt: skip
    if tally.waits:
        waits = _stats(tally.waits)
        out.append(BenchResult(
            "endpointing wait p50 (every player turn, table talk included)", waits["p50"], "ms",
            f"as above over every turn, n={waits['n']}: table talk that sounds finished waits "
            "speech.turn.table_talk_ms (500) by design, since nobody waits for its answer",
            extra={"p95_ms": waits["p95"]},
        ))  # fmt: skip
    if tally.lines:
        share = tally.cut / tally.lines * 100
        out.append(BenchResult(
            "lines cut off early", share, "%",
            f"{tally.cut} of {tally.lines} scripted lines had a turn declared over while the "
            "player still had words to say (bot.frontends.rehearsal.turn_taking)",
            f"<= {goals.cut_off_pct:g} %", share <= goals.cut_off_pct, {"which": tally.which},
        ))  # fmt: skip
    causes = cause_summary(tally.turns)
    if causes:
        per = causes["per_cause_ms"]
        out.append(BenchResult(
            "voice-to-voice p95 by cause (every answered turn of this run)",
            max(v["p95"] for v in per.values()), "ms",
            "; ".join(f"{c} p95 {v['p95']:.0f} (p50 {v['p50']:.0f})" for c, v in per.items())
            + f"; slowest quarter dominated by {causes['slowest_quarter_dominated_by']}",
            extra=causes,
        ))  # fmt: skip
    return out


def _with_instant_llm(config: Any) -> Any:
    """The same config with ``providers.llm`` pointed at the instant scripted server, whose
    address is filled in by :func:`_fast_set`."""
    return config.model_copy(update={"providers": config.providers.model_copy(
        update={"llm": LlmProvider(name="openai", base_url="instant", model="instant",
                                      api_key=SecretStr("instant"))})})  # fmt: skip


def _turn_row(turn: dict[str, Any]) -> dict[str, Any]:
    """One turn's words, answer and stages (JSON only): a slow turn of a run can be named and
    explained (an answer asked again, a repair)."""
    stages = {k: round(v) for k, v in turn["stages_ms"].items() if isinstance(v, int | float)}
    return {"heard": turn["heard"], "speculative": turn["speculative"], "stages_ms": stages,
            "reply": turn.get("reply"), "repairs": turn.get("repairs") or {}}  # fmt: skip


async def _fast_set(
    config: Any, label: str, tally: _Tally, goals: E2eGoals, *, full_table: bool
) -> list[BenchResult]:
    """Voice-to-voice of the FAST lines said to Bartok of the example campaign (his own tools
    and budget), at 1x, alone or at a full table; ``instant LLM`` measures the floor."""
    from bot.bench.doubles.instant_llm import InstantLlm
    from bot.frontends.rehearsal.runner import rehearse

    where = "at a full table" if full_table else "alone"
    _progress(f"short FAST lines, {label}, {where}")
    scene = fast_scene(EXAMPLE_SCENE.parent, full_table=full_table)
    async with contextlib.AsyncExitStack() as stack:
        if config.providers.llm.base_url == "instant":
            llm = await stack.enter_async_context(InstantLlm())
            llm_config = config.providers.llm.model_copy(update={"base_url": llm.base_url})
            config = config.model_copy(
                update={"providers": config.providers.model_copy(update={"llm": llm_config})}
            )
        with tempfile.TemporaryDirectory(prefix="glyphoxa-e2e-fast-") as folder:
            result = await rehearse(
                scene, config, Path(folder), playout_speed=8.0, progress=_progress
            )
    tally.add(result)
    turns = [t for t in result.turns if t["heard"] and t["tier"] == "fast"]
    v2v = _v2v(turns)
    if not v2v:
        return []
    stats = _stats(v2v)
    early = sum(1 for t in turns if t["speculative"])
    endpoint = [t["stages_ms"]["endpoint"] for t in turns if t["stages_ms"].get("endpoint")]
    method = (
        f"{stats['n']} short lines to Bartok (FAST budget, his tools) through glyphoxa "
        f"rehearse at 1x, {label}, {where}; {early}/{len(turns)} answers started at the pause"
    )
    if full_table:
        method += " (two players talking to each other throughout, a fourth listening)"
    if label == "instant LLM":
        method += " (a local OpenAI-compatible SSE server answering at once: the pipeline's floor)"
    extra = {"p95_ms": stats["p95"], "n": stats["n"],
             "endpoint_p50_ms": percentile(endpoint, 50) if endpoint else None,
             "turns": [_turn_row(t) for t in turns]}  # fmt: skip
    name = f"voice-to-voice p50 (FAST turns, {label}, {where})"
    method += f"; {_judged(goals)}"
    p50_limit = (goals.floor_p50_ms if label == "instant LLM"
                 else None if full_table else goals.fast_p50_ms)  # fmt: skip
    goal = f"<= {p50_limit:.0f} ms" if p50_limit else None
    passed = stats["p50"] <= p50_limit if p50_limit else None
    p95_limit = (None if label == "instant LLM"
                 else goals.full_table_p95_ms if full_table else goals.fast_p95_ms)  # fmt: skip
    p95_goal = f"<= {p95_limit:.0f} ms" if p95_limit else None
    return [
        BenchResult(name, stats["p50"], "ms", method, goal, passed, extra),
        BenchResult(f"voice-to-voice p95 (FAST turns, {label}, {where})", stats["p95"], "ms",
                    method, p95_goal, stats["p95"] <= p95_limit if p95_limit else None),
    ]  # fmt: skip
