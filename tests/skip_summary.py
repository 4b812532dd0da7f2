"""The end of every test run says what was skipped and the exact way to run each group.

A skipped test is a part of the product nobody checked on this machine. ``./scripts/test``
ended with "69 skipped" and nothing more; now its last lines group the skips by what they need
(PostgreSQL, Debian's chromium, the local LLM, espeak-ng, the SRD data, the real Pipecat peer)
with the command or package that enables each, and say when nothing was skipped. A reason no
group knows is listed as it is, so no skip is ever hidden.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest

__all__ = ["SKIP_GROUPS", "SkipGroup", "group_of", "pytest_terminal_summary", "skip_reason"]


@dataclass(frozen=True, slots=True)
class SkipGroup:
    """Skips that need the same thing: ``pattern`` matches their reason."""

    name: str
    pattern: str
    enable: str
    """The exact command, package or setting that runs them."""


SKIP_GROUPS = (
    SkipGroup(
        "PostgreSQL",
        r"GLYPHOXA_TEST_POSTGRES_URL",
        "run ./scripts/test with PostgreSQL installed (apt-get install postgresql; as root "
        "./scripts/test installs it): it starts a throwaway server for the run; or export "
        "GLYPHOXA_TEST_POSTGRES_URL=postgresql+asyncpg://USER@HOST:PORT/DB",
    ),
    SkipGroup(
        "the console in a real browser",
        r"chromium",
        "apt-get install chromium (Debian's; as root ./scripts/test installs it), or set "
        "GLYPHOXA_CHROMIUM=/path/to/chromium",
    ),
    SkipGroup(
        "the local LLM (llama.cpp)",
        r"llama.cpp|llama_cpp|llama-cpp",
        "./scripts/setup (without --no-llm): it builds llama-cpp-python and installs SmolLM2",
    ),
    SkipGroup(
        "espeak-ng",
        r"espeak",
        "apt-get install espeak-ng (as root ./scripts/setup installs it)",
    ),
    SkipGroup(
        "the SRD 5.1 rules import",
        r"SRD 5\.1",
        "put the SRD 5.1 dataset (5e-database's src/2014/en JSON files) at ../shared/data/srd5.1 "
        "beside the checkout, or export GLYPHOXA_SRD_DATA=DIR (it is never copied into the "
        "repository)",
    ),
    SkipGroup(
        "the real Pipecat peer",
        r"GLYPHOXA_TEST_PEER",
        "GLYPHOXA_TEST_PEER=1 ./scripts/test tests/bench/test_peer_real.py (installs Pipecat "
        "1.14 from PyPI into its own virtualenv, minutes)",
    ),
    SkipGroup("Linux only", r"/proc", "run on Linux (these read /proc)"),
)


def skip_reason(report: Any) -> str:
    """The reason a skipped test report gives (``Skipped: `` prefix removed)."""
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return str(text).removeprefix("Skipped: ").strip()


def group_of(reason: str) -> SkipGroup | None:
    return next((g for g in SKIP_GROUPS if re.search(g.pattern, reason, re.IGNORECASE)), None)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Last in the output: every skip, grouped, with the way to run it."""
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if getattr(r, "skipped", 0)]
    write = terminalreporter.write_line
    if not skipped:
        terminalreporter.section("skipped: nothing", sep="-")
        return
    groups: Counter[SkipGroup] = Counter()
    unknown: Counter[str] = Counter()
    for report in skipped:
        reason = skip_reason(report)
        group = group_of(reason)
        if group is None:
            unknown[reason] += 1
        else:
            groups[group] += 1
    terminalreporter.section(
        f"skipped: {len(skipped)} test{'s' if len(skipped) != 1 else ''}; how to run them",
        sep="-",
    )
    for group, count in groups.most_common():
        write(f"{count:>5}  {group.name}: {group.enable}")
    for reason, count in unknown.most_common():
        write(f"{count:>5}  {reason}")
