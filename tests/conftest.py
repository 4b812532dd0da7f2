"""Plugins of the whole test suite: ``isolated`` tests run in a child process (native code
that crashes fails one test, not the run), and with ``GLYPHOXA_NO_SKIP=1`` (CI) a skipped test
is a failure, so a missing model or server can never turn a red run green. The exceptions are
the reasons named in ``GLYPHOXA_SKIP_OK`` (separated by ``;``; ``.ci/run`` names, and
says so, the real Pipecat peer test, which installs Pipecat from PyPI and runs only with
``GLYPHOXA_TEST_PEER=1``, and the SRD 5.1 tests when that dataset, which must not be copied into
the repository, is absent). Every run ends with what was skipped and the exact way to run
each group (``tests/skip_summary.py``)."""

from __future__ import annotations

import os

import pytest

from tests.isolation import pytest_configure, pytest_runtest_protocol
from tests.skip_summary import pytest_terminal_summary

__all__ = [
    "pytest_configure",
    "pytest_runtest_makereport",
    "pytest_runtest_protocol",
    "pytest_terminal_summary",
]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("GLYPHOXA_NO_SKIP") == "1":
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        allowed = [text for text in os.environ.get("GLYPHOXA_SKIP_OK", "").split(";") if text]
        if any(text in str(reason) for text in allowed):
            return
        report.outcome = "failed"
        report.longrepr = f"skipped, but GLYPHOXA_NO_SKIP=1 (CI) allows no skip: {reason}"
