"""Run every doctor check in order, time it, and turn its outcome into one line with a fix.

A check is an async function of the shared :class:`DoctorContext`; it returns what it found
(the detail of a PASS), raises :class:`Problem` (a FAIL with its fix) or :class:`Skip` (not
needed by this configuration). Anything else it raises is a FAIL too, never a traceback.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from bot.settings.config import GlyphoxaConfig
from campaigns.basics import GlyphoxaError

__all__ = ["Check", "DoctorContext", "Outcome", "Problem", "Skip", "run_checks"]

Status = Literal["PASS", "FAIL", "SKIP"]


class Problem(Exception):
    """A check failed: ``message`` says what, ``fix`` what to do about it."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.fix = fix


class Skip(Exception):
    """This configuration does not need the part; the message says why."""


@dataclass(slots=True)
class DoctorContext:
    """What the checks share: the configuration and what earlier checks produced."""

    config_path: str | None
    config: GlyphoxaConfig = field(default_factory=GlyphoxaConfig)
    config_ok: bool = True
    campaign: Any = None
    """``npcs.campaign.Campaign`` once the campaign check loaded it."""
    sample: Any = None
    """A synthesized player line, 16 kHz mono float32, for the VAD and STT checks."""
    discord: bool = False
    """The Discord bot is about to run: a missing token fails instead of being skipped."""
    online: bool = False
    """Also ask Discord's API about the token, the application and the servers."""
    campaign_dir: str | None = None
    """``--campaign``: this folder instead of the config's ``campaign.path``."""
    warnings: list[str] = field(default_factory=list)
    """What checks found that works but probably not as meant (the campaign's YAML warnings);
    each outcome carries those of its own check."""


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    run: Callable[[DoctorContext], Awaitable[str]]
    timeout_s: float = 60.0


@dataclass(frozen=True, slots=True)
class Outcome:
    name: str
    status: Status
    seconds: float
    detail: str
    fix: str = ""
    warnings: tuple[str, ...] = ()
    """``file:line:column: warning: ...`` lines found by this check (printed on stderr)."""

    def line(self) -> str:
        fix = f" -> fix: {self.fix}" if self.fix else ""
        return f"{self.status}  {self.name:<14} {self.seconds:6.2f} s  {self.detail}{fix}"

    def as_dict(self) -> dict[str, Any]:
        return {"check": self.name, "status": self.status, "seconds": round(self.seconds, 3),
                "detail": self.detail, "fix": self.fix,
                "warnings": list(self.warnings)}  # fmt: skip


async def run_checks(
    checks: Sequence[Check],
    context: DoctorContext,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Run ``checks`` one after another (later ones use what earlier ones found)."""
    outcomes: list[Outcome] = []
    for check in checks:
        started = time.perf_counter()
        seen = len(context.warnings)
        try:
            async with asyncio.timeout(check.timeout_s):
                detail = await check.run(context)
            status: Status = "PASS"
            fix = ""
        except Skip as skip:
            status, detail, fix = "SKIP", str(skip), ""
        except Problem as problem:
            status, detail, fix = "FAIL", str(problem), problem.fix
        except TimeoutError:
            status, detail = "FAIL", f"did not finish within {check.timeout_s:.0f} s"
            fix = "the machine may be overloaded; run glyphoxa doctor -v for details"
        except GlyphoxaError as error:
            status, detail, fix = "FAIL", str(error), "see the message"
        except Exception as error:  # a check must never end the doctor with a traceback
            status, detail = "FAIL", f"{type(error).__name__}: {error}"
            fix = "unexpected: run glyphoxa doctor -v and report it"
        found = tuple(context.warnings[seen:])
        outcome = Outcome(check.name, status, time.perf_counter() - started, detail, fix, found)
        outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
    return outcomes


def config_label(path: str | None) -> str:
    return str(Path(path)) if path else "built-in defaults"
