"""Before a table starts: the campaign passes ``glyphoxa check`` and every configured model
service can be reached, in seconds.

``glyphoxa rehearse`` and ``glyphoxa run`` ask this before anything else. A campaign with
problems stops them with every problem, as ``glyphoxa check`` prints them (a bot would
otherwise connect to Discord and only find out at ``/session start``); its warnings are printed
and do not stop them. A model service that cannot be reached (``bot.frontends.doctor.reach_checks``)
stops them with the doctor line of that service, what is wrong and the fix, unless the DM asks
to go on anyway (``--anyway``): a rehearsal against a model that is not there would play the
whole scene with every turn failing, and a bot would fail each player's line at the table.
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from bot.frontends.doctor.reach_checks import REACH_CHECKS
from bot.frontends.doctor.runner import DoctorContext, Outcome, run_checks

if TYPE_CHECKING:
    from bot.frontends.checking import CheckReport
    from bot.settings.config import GlyphoxaConfig

__all__ = ["Preflight", "preflight", "preflight_or_stop"]


@dataclass(slots=True)
class Preflight:
    """What was found before the table started."""

    report: CheckReport
    """``glyphoxa check`` of the config and the campaign."""
    outcomes: list[Outcome] = field(default_factory=list)
    """One per model service (SKIP for those not configured)."""
    seconds: float = 0.0

    @property
    def unreachable(self) -> list[Outcome]:
        return [outcome for outcome in self.outcomes if outcome.status == "FAIL"]

    @property
    def reached(self) -> list[str]:
        return [outcome.name for outcome in self.outcomes if outcome.status == "PASS"]


async def preflight(
    config: GlyphoxaConfig, *, config_path: str | Path | None, campaign_dir: str | Path | None
) -> Preflight:
    """Check the campaign; if it passes, ask every configured model service, side by side.

    ``config`` is the one the table will use (``--campaign``, ``--llm-base-url`` applied);
    ``campaign_dir`` None means its ``campaign.path``.
    """
    from bot.frontends.checking import run_check

    started = time.monotonic()
    folder = campaign_dir if campaign_dir is not None else config.campaign.path
    report = await asyncio.to_thread(run_check, folder, config_path=config_path)
    result = Preflight(report)
    if report.issues:
        result.seconds = time.monotonic() - started
        return result
    context = DoctorContext(str(config_path) if config_path else None, config=config)
    context.campaign = report.campaign
    found = await asyncio.gather(*(run_checks([check], context) for check in REACH_CHECKS))
    result.outcomes = [outcome for outcomes in found for outcome in outcomes]
    result.seconds = time.monotonic() - started
    return result


async def preflight_or_stop(
    command: str,
    config: GlyphoxaConfig,
    *,
    config_path: str | Path | None,
    campaign_dir: str | Path | None,
    anyway: bool,
    out: TextIO | None = None,
) -> int | None:
    """Run :func:`preflight` and print what it found on ``out`` (stderr); the exit code to
    stop ``command`` with (1), or None to go on."""
    stream = out if out is not None else sys.stderr
    found = await preflight(config, config_path=config_path, campaign_dir=campaign_dir)
    report = found.report

    def say(line: str) -> None:
        print(line, file=stream, flush=True)

    for issue in report.issues:
        say(str(issue))
    for warning in report.warnings:
        say(str(warning))
    if report.issues:
        count = len(report.issues)
        say(
            f"{command}: stopped: the campaign has {count} problem{'s' if count != 1 else ''} "
            "(above; glyphoxa check lists them too)"
        )
        return 1
    if report.warnings:
        say(f"{command}: the warnings above do not stop it (glyphoxa check --strict fails on them)")
    failed = found.unreachable
    for outcome in failed:
        say(outcome.line())
    if failed and not anyway:
        names = ", ".join(outcome.name for outcome in failed)
        say(
            f"{command}: stopped before starting: {names} cannot be reached (fix it and see "
            f"glyphoxa doctor, or add --anyway to {command} without it)"
        )
        return 1
    reached = ", ".join(found.reached) or "nothing to reach"
    going = "going on anyway" if failed else "ok"
    say(f"{command}: campaign ok; model services: {reached} ({found.seconds:.1f} s): {going}")
    return None
