"""``glyphoxa bench receive``: what one talking player costs the process, at Discord's pace.

The single-thread rows of :mod:`bot.bench.receive` count the work done on a packet in a hot loop.
A live table pays more: each packet arrives 20 ms after the last, to cold caches, and handing
work between threads wakes them (a wake-up can cost more CPU than a VAD window). So
here a player says a line again and again as Discord sends it (a packet every 20 ms, five
silence frames after the words, then nothing for a second) through a real receiver on a socket
thread into a real ``SpeakerLane``, and the CPU of the whole process is counted, less that of a
socket thread that only keeps the pace. Each measurement is its own process
(:mod:`bot.bench.paced_player`), in turns with the baseline receive path (``BEFORE_COMMIT``:
48 kHz decode, every frame through the event loop), which git gives.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bot.bench.result import BenchResult

__all__ = ["paced_cpu"]

BEFORE_COMMIT = "c0faa4f"
"""The baseline the paced figure is compared with: the last commit whose receive path decoded
at 48 kHz stereo and pushed every frame through the event loop (before the end-of-turn model,
the 16 kHz decode and hearing on the socket thread)."""

_ROOT = Path(__file__).resolve().parents[2]
_PLAYER = Path(__file__).with_name("paced_player.py")
_PATHS = {
    "before": "before issue 18: 48 kHz stereo, every frame through the loop and a worker hop, "
    "Silero on onnxruntime",
    "loop": "16 kHz mono, every frame through the loop, Silero as the lane runs it",
    "now": "now: 16 kHz mono, packets in pairs heard on the socket thread, Silero as the lane "
    "runs it",
}


def _before_tree(folder: Path) -> str | None:
    """The baseline's code into ``folder``, from this checkout's git history; else why not."""
    packages = ["bot", "campaigns", "npcs", "tools"]
    try:
        archive = subprocess.run(
            ["git", "-C", str(_ROOT), "archive", BEFORE_COMMIT, *packages],
            capture_output=True,
            check=False,
        )
        if archive.returncode != 0:
            return archive.stderr.decode(errors="replace").strip() or "git archive failed"
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    except (OSError, subprocess.CalledProcessError) as error:
        return f"git or tar failed: {error}"
    return None


async def _run(root: Path, path: str, seconds: float, line_file: Path) -> dict[str, Any]:
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        str(_PLAYER),
        str(root),
        path,
        str(seconds),
        str(line_file),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await child.communicate()
    if child.returncode != 0:
        tail = err.decode(errors="replace").strip().splitlines()[-3:]
        raise RuntimeError(f"paced player ({path}) failed: {' | '.join(tail)}")
    result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return result


async def paced_cpu(rounds: int, seconds: float) -> list[BenchResult]:
    """Before, through the loop, and now, in turns over ``rounds``: the medians."""
    from bot.bench.tables.sim_world import player_line

    line, voiced = await player_line()
    with tempfile.TemporaryDirectory(prefix="glyphoxa-paced-") as tmp:
        folder = Path(tmp)
        line_file = folder / "line.json"
        line_file.write_text(json.dumps({"opus": [f.hex() for f in line], "voiced": voiced}))
        before = folder / "before"
        before.mkdir()
        missing = await asyncio.to_thread(_before_tree, before)
        paths = [p for p in _PATHS if not (p == "before" and missing)]
        runs: dict[str, list[dict[str, Any]]] = {p: [] for p in paths}
        for _round in range(rounds):
            for path in paths:
                root = before if path == "before" else _ROOT
                runs[path].append(await _run(root, path, seconds, line_file))
    net = {p: statistics.median(r["used"] - r["idle"] for r in runs[p]) for p in paths}
    lines = len(range(0, int(seconds * 1000), (voiced + 5) * 20 + 1000))
    method = (
        f"one player saying a {voiced * 20 / 1000:.1f} s line about {lines} times ({seconds:.0f} "
        "s) at Discord's pace -> receiver on a socket thread -> SpeakerLane (real Silero), each "
        "in its own process; its CPU (getrusage) per second less an idle socket thread keeping "
        f"the pace; median of {rounds} rounds in turns"
    )

    def row(path: str, **goal: Any) -> BenchResult:
        done = runs[path]
        extra = {
            "rounds": [round(r["used"] - r["idle"], 3) for r in done],
            "idle": [round(r["idle"], 3) for r in done],
            "turns_ended": done[-1]["ended"],
            "silero": done[-1]["engine"],
        }
        extra.update(goal.pop("extra", {}))
        return BenchResult(
            f"receive + lane CPU per talking player, at pace ({_PATHS[path]})",
            net[path],
            "% of one core",
            method,
            extra=extra,
            **goal,
        )

    rows = [row(p) for p in paths if p != "now"]
    if missing:
        verdict: dict[str, Any] = {
            "passed": None,
            "extra": {
                "before": f"not measured ({missing}); in a shallow clone: git fetch --unshallow"
            },
        }
    else:
        ratio = net["now"] / net["before"]
        verdict = {
            "passed": ratio <= 0.5 and runs["now"][-1]["ended"] >= lines - 1,
            "extra": {"ratio_now_to_before": round(ratio, 3)},
        }
    rows.append(row("now", goal="<= half of before issue 18", **verdict))
    rows.append(
        BenchResult(
            "talking players per core, at pace (the hot-loop 'speakers per core' overstates it)",
            100 / net["now"],
            "players",
            "1 / the CPU of one talking player heard on the socket thread, above",
        )
    )
    return rows
