"""Tests marked ``isolated`` run in a child pytest process.

Native code loaded in-process (llama.cpp) can die with a signal: a build using an instruction
the CPU advertises but cannot run took the whole test run down at 64 %. In a child, that crash
is one failed test whose message names the signal, its cause and the fix, and the run goes on.
The child's fixtures are its own, so the parent never loads the native code at all.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import pytest
from _pytest.reports import TestReport

from npcs.inference.probe import REBUILD_HINT, describe_exit

__all__ = ["pytest_configure", "pytest_runtest_protocol"]

CHILD = "GLYPHOXA_ISOLATED_CHILD"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "isolated: run in a child process, so a crash in native code fails only it"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    if item.get_closest_marker("isolated") is None or os.environ.get(CHILD):
        return None
    hook = item.ihook
    hook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for report in _run_in_child(item):
        hook.pytest_runtest_logreport(report=report)
    hook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


def _run_in_child(item: pytest.Item) -> list[TestReport]:
    timeout = float(item.config.getini("timeout") or 300)
    command = [sys.executable, "-m", "pytest", item.nodeid, "-q", "-rs", "-p", "no:cacheprovider",
               "--rootdir", str(item.config.rootpath)]  # fmt: skip
    try:
        done = subprocess.run(
            command, cwd=item.config.rootpath, env={**os.environ, CHILD: "1"},
            capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
        code, output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as expired:
        code, output = None, str(expired.stdout or "")
    tail = "\n".join(output.strip().splitlines()[-60:])
    if code == 0 and re.search(r"\b1 skipped\b", output):
        reason = re.search(r"SKIPPED \[\d+\] [^:]+:\d+: (.*)", output)
        location = (str(item.path), item.location[1] or 0, reason[1] if reason else "skipped")
        return _reports(item, "skipped", location, when="setup")
    if code == 0:
        return _reports(item, "passed", None)
    if code is None:
        return _reports(item, "failed", f"the isolated test ran over {timeout:.0f} s\n{tail}")
    if code < 0 or code > 128:
        why = describe_exit(code)
        return _reports(item, "failed", f"the test process {why}: {REBUILD_HINT}\n{tail}")
    return _reports(item, "failed", tail or f"the isolated test exited with code {code}")


def _reports(
    item: pytest.Item, outcome: str, longrepr: Any, when: str = "call"
) -> list[TestReport]:
    keywords = {name: 1 for name in item.keywords}
    phases = ["setup"] if when == "setup" else ["setup", "call", "teardown"]
    reports = []
    for phase in phases:
        ours = phase == when
        reports.append(
            TestReport(
                item.nodeid,
                item.location,
                keywords,
                outcome if ours else "passed",  # type: ignore[arg-type]
                longrepr if ours else None,
                phase,  # type: ignore[arg-type]
            )
        )
    return reports
