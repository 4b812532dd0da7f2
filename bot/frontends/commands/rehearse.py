"""``glyphoxa rehearse SCENE.yaml [--out DIR] [--speed X]``: hear your NPCs before game night.

Synthesized players speak the scene's lines through the real pipeline (VAD, STT, addressing,
tiers, engines, tools, TTS, mixer); the NPCs' audio, a transcript and a latency report land in
``--out``. With ``providers.llm.name: local`` the bundled llama.cpp server runs for the duration.

Before anything else the campaign must pass ``glyphoxa check`` and every configured model
service must answer (a doctor line says which does not, and the fix); ``--anyway`` plays the
scene even so. Campaign memory of the rehearsal is ``--out``/memory.db: ``glyphoxa memory
sessions --url out/memory.db`` reads it afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from bot.frontends.commands._options import (
    Subcommands,
    add_anyway_option,
    add_campaign_option,
    load_config,
    plain,
)

__all__ = ["register"]


def register(sub: Subcommands) -> None:
    parser = sub.add_parser(
        "rehearse",
        help="run a scene script through the whole pipeline offline and report latency",
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("scene", metavar="SCENE.yaml", help="scene script (lines, DM commands)")
    add_campaign_option(parser)
    parser.add_argument("--out", default="out", help="output folder (default: out)")
    parser.add_argument(
        "--speed",
        type=float,
        default=1.0,
        help="play the scene this many times faster than real time (latency numbers need 1)",
    )
    parser.add_argument(
        "--playout-speed",
        type=float,
        default=4.0,
        help="pull NPC speech this much faster while no player talks (latency unaffected; "
        "1 plays everything in real time)",
    )
    parser.add_argument(
        "--console",
        action="store_true",
        help="serve the DM's console and show the table live in it (prints a login link; at a "
        "terminal the scene waits for the login and the console stays open until Ctrl+C)",
    )
    parser.add_argument(
        "--llm-base-url",
        default=None,
        help="use this OpenAI-compatible server instead of the configured LLM",
    )
    add_anyway_option(parser)
    parser.set_defaults(func=_run)


async def _open_console(args: argparse.Namespace, config: Any, out: Path) -> Any:
    """The console for this rehearsal; at a terminal, the scene waits for the DM to log in."""
    from bot.frontends.console import console_for
    from bot.settings.loader import resolve_config_path

    memory = f"sqlite+aiosqlite:///{out / 'memory.db'}"
    console = console_for(config, config_path=resolve_config_path(args.config), memory_url=memory)
    await console.start()
    print(f"DM console: open {console.hub.login_url()}", file=sys.stderr, flush=True)
    if sys.stdin.isatty():
        print("waiting for you to log in (Ctrl+C to stop)...", file=sys.stderr, flush=True)
        await console.hub.logged_in.wait()
    return console


def _with_llm_url(config: Any, url: str | None) -> Any:
    """The config as the rehearsal uses it: ``--llm-base-url`` in place of the LLM's server."""
    if not url:
        return config
    llm = config.providers.llm.model_copy(update={"base_url": url})
    providers = config.providers.model_copy(update={"llm": llm})
    return config.model_copy(update={"providers": providers})


def _two_campaigns(scene_campaign: Path | None, option: str | None) -> bool:
    """The scene file and --campaign name different campaign folders."""
    return bool(option and scene_campaign and scene_campaign != Path(option).resolve())


async def _run(args: argparse.Namespace) -> int:
    from bot.frontends.doctor.preflight import preflight_or_stop
    from bot.frontends.rehearsal.runner import rehearse
    from bot.frontends.rehearsal.scene import load_scene
    from campaigns.basics import GlyphoxaError

    started = time.monotonic()

    def progress(message: str) -> None:
        print(f"[{time.monotonic() - started:6.1f}s] {message}", file=sys.stderr, flush=True)

    from bot.telemetry.logging_setup import configure_logging

    config = load_config(args)
    configure_logging(
        config.logging, verbose=getattr(args, "verbose", False), console_level="WARNING"
    )
    scene = load_scene(args.scene)
    if _two_campaigns(scene.campaign_dir(), args.campaign):
        raise GlyphoxaError(
            f"{args.scene} names campaign {scene.campaign} and --campaign names {args.campaign}; "
            "give one of them"
        )
    stop = await preflight_or_stop(
        "rehearse",
        _with_llm_url(config, args.llm_base_url),
        config_path=args.config,
        campaign_dir=scene.campaign_dir() or args.campaign,
        anyway=args.anyway,
    )
    if stop is not None:
        return stop
    out = Path(args.out)
    console = await _open_console(args, config, out) if args.console else None
    try:
        result = await rehearse(
            scene,
            config,
            out,
            speed=args.speed,
            playout_speed=args.playout_speed,
            progress=progress,
            llm_base_url=args.llm_base_url,
            console=console.hub if console is not None else None,
        )
        if console is not None and sys.stdin.isatty():
            print("the scene is over; the console stays open until Ctrl+C", file=sys.stderr)
            await asyncio.Event().wait()
    finally:
        if console is not None:
            await console.stop()
    summary = result.summary
    v2v = summary["stages"].get("voice_to_voice")
    overhead = summary["overhead_ms"]
    print(
        f"NPC turns: {summary['turns']} ({summary['interrupted']} interrupted, "
        f"{summary['failed']} failed)"
    )
    for turn in result.turns:
        said = " ".join((turn["spoken"] or turn["reply"] or "(silent)").split())
        said = said if len(said) <= 160 else said[:157] + "..."
        cut = " (interrupted)" if turn["interrupted"] else ""
        print(f"  {turn['npc']} [{turn['tier']}]{cut}: {said}")
    if v2v:
        print(f"voice-to-voice: p50 {v2v['p50']:.0f} ms, p95 {v2v['p95']:.0f} ms")
    if overhead:
        print(f"pipeline overhead: p50 {overhead['p50']:.0f} ms, p95 {overhead['p95']:.0f} ms")
    for check in result.checks:
        print(f"  {check}")
    print(f"outputs in {out}/: report.md, transcript.jsonl, session.wav, latency.json, latency.png")
    print(f"its campaign memory: glyphoxa memory sessions --url {out / 'memory.db'}")
    for line in result.verdict:  # last, where it is seen: PASS, or FAIL and what failed
        print(line.replace("**", ""))
    return 1 if result.failed_checks else 0
