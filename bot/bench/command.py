"""``glyphoxa bench [target ...] [--json]``: one benchmark suite over every hot path.

Each target is a module of the harness room :mod:`bot.bench` exposing
``async def run_bench(quick: bool) -> list[BenchResult]``; this command dispatches and prints,
first the machine and two reference figures measured in the same run (``bot.bench.machine``),
so that any two runs can be compared.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import TYPE_CHECKING, Any

from bot.frontends.commands._options import Subcommands, plain

if TYPE_CHECKING:
    from bot.bench.result import BenchResult

__all__ = ["TARGETS", "register"]

#: target name -> module holding ``run_bench``.
TARGETS: dict[str, str] = {
    "tiers": "bot.bench.tiers",
    "address": "bot.bench.address",
    "words": "bot.bench.words",
    "llm": "bot.bench.llm",
    "tools": "bot.bench.tool_host",
    "speech": "bot.bench.speech",
    "receive": "bot.bench.receive",
    "memory": "bot.bench.memory",
    "e2e": "bot.bench.e2e",
    "soak": "bot.bench.soak.run",
    "tables": "bot.bench.tables.run",
    "console": "bot.bench.console_cost",
}
_ON_REQUEST = ("e2e", "soak", "tables", "console", "words")
"""Long runs: only when named."""


def register(sub: Subcommands) -> None:
    parser = sub.add_parser(
        "bench",
        help="run benchmarks of the hot paths (for developers)",
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "targets",
        nargs="*",
        metavar="TARGET",
        help=f"one or more of: {', '.join(TARGETS)} (default: all but {', '.join(_ON_REQUEST)})",
    )
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    parser.add_argument("--quick", action="store_true", help="fewer iterations (smoke run)")
    parser.add_argument(
        "--hours", type=float, default=4.0, help="soak: simulated hours of the game night (4)"
    )
    parser.add_argument(
        "--idle-min",
        type=float,
        metavar="MIN",
        help="soak: wall-clock minutes of the idle stretch, nobody talking (20; --quick: 0.5)",
    )
    parser.add_argument(
        "--peer",
        metavar="NAME",
        help="e2e: also run the same FAST lines through another voice framework, alternated "
        "line by line with ours, with the same models (known: pipecat; its own virtualenv is "
        "created on first use)",
    )
    parser.add_argument(
        "--sweep",
        action="store_true",
        help="words: also play the corpus once per prompt and sampling variant of the embedded "
        "model, side by side (slow)",
    )
    parser.add_argument(
        "--no-reference",
        action="store_true",
        help="skip the SmolLM2 reference figure (the CPython loop and the machine are printed "
        "always)",
    )
    parser.set_defaults(func=_run)


async def _run(args: argparse.Namespace) -> int:
    from campaigns.basics import GlyphoxaError

    targets = args.targets or [t for t in TARGETS if t not in _ON_REQUEST]
    unknown = [t for t in targets if t not in TARGETS]
    if unknown:
        raise GlyphoxaError(
            f"unknown bench target {unknown[0]!r}; choose from {', '.join(TARGETS)}"
        )
    if args.peer is not None:
        from bot.bench.peer import check_peer

        check_peer(args.peer)
        if "e2e" not in targets:
            raise GlyphoxaError(
                f"--peer compares the e2e bench; name it: glyphoxa bench e2e --peer {args.peer}"
            )
    if args.sweep and "words" not in targets:
        raise GlyphoxaError("--sweep plays the words corpus; name it: glyphoxa bench words --sweep")
    from bot.bench.machine import describe_machine, measure_reference

    machine = describe_machine()
    reference = await measure_reference(llm=not args.no_reference)
    if not args.json:
        print(f"machine: {machine.describe()}")
        print(f"reference (this run): {reference.describe()}")
        sys.stdout.flush()
    report: dict[str, list[dict[str, Any]]] = {}
    for target in targets:
        try:
            module = importlib.import_module(TARGETS[target])
        except ModuleNotFoundError as error:
            raise GlyphoxaError(f"bench target {target!r} is not available: {error}") from None
        options: dict[str, Any] = (
            {"hours": args.hours, "idle_min": args.idle_min} if target == "soak" else {}
        )
        if target == "e2e" and args.peer is not None:
            options["peer"] = args.peer
        results: list[BenchResult] = await module.run_bench(quick=args.quick, **options)
        if target == "words" and args.sweep:
            sweep = importlib.import_module("bot.bench.words_sweep")
            results += await sweep.run_sweep(args.quick)
        report[target] = [r.as_dict() for r in results]
        if not args.json:
            print(f"== {target}")
            for result in results:
                print("  " + result.describe())
            sys.stdout.flush()
    if args.json:
        whole = {"machine": machine.as_dict(), "reference": reference.as_dict(), "results": report}
        print(json.dumps(whole, indent=2))
    missed = [r["name"] for rs in report.values() for r in rs if r["passed"] is False]
    if missed and "soak" in targets:  # a soak that misses a goal must not look like a pass
        print(f"soak: goal missed: {', '.join(missed)}", file=sys.stderr)
        return 1
    return 0
