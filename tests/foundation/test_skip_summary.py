"""The test command tells the truth: a run ends with every skipped test, grouped by what it
needs, with the exact command or package that runs the group; and ``./scripts/test`` itself
gets (or names) what the tests need."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from .foundation_support import REPO

SKIPPING = """
import pytest

@pytest.mark.skipif(True, reason="GLYPHOXA_TEST_POSTGRES_URL is not set")
@pytest.mark.parametrize("n", [1, 2])
def test_on_postgres(n):
    pass

def test_in_a_browser():
    pytest.skip("/usr/bin/chromium is missing: apt-get install chromium")

def test_something_odd():
    pytest.skip("the moon is not full")

def test_runs():
    pass
"""


def run_pytest(tmp_path: Path, text: str) -> list[str]:
    test = tmp_path / "test_skips.py"
    test.write_text(text)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
         "tests.skip_summary", "--rootdir", str(tmp_path), str(test)],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip().splitlines()


def test_the_run_ends_with_each_skip_group_and_how_to_run_it(tmp_path: Path) -> None:
    lines = run_pytest(tmp_path, SKIPPING)
    assert lines[-1].startswith("1 passed, 4 skipped")
    heading = next(i for i, line in enumerate(lines) if "skipped: 4 tests; how to run them" in line)
    assert lines[heading + 1 : -1] == [
        "    2  PostgreSQL: run ./scripts/test with PostgreSQL installed (apt-get install "
        "postgresql; as root ./scripts/test installs it): it starts a throwaway server for the "
        "run; or export GLYPHOXA_TEST_POSTGRES_URL=postgresql+asyncpg://USER@HOST:PORT/DB",
        "    1  the console in a real browser: apt-get install chromium (Debian's; as root "
        "./scripts/test installs it), or set GLYPHOXA_CHROMIUM=/path/to/chromium",
        "    1  the moon is not full",  # a reason no group knows is shown as it is
    ]


def test_a_run_without_skips_says_so(tmp_path: Path) -> None:
    lines = run_pytest(tmp_path, "def test_runs():\n    pass\n")
    assert "skipped: nothing" in lines[-2] and lines[-1].startswith("1 passed")


def test_every_skip_reason_of_the_suite_belongs_to_a_group() -> None:
    """Each reason written in the suite is matched by a group, so its way to run is known."""
    from tests.skip_summary import group_of

    reasons = [
        "llama-cpp-python[server] missing",
        "espeak-ng missing",
        "espeak-ng not installed (apt-get install espeak-ng)",
        "SRD 5.1 test data not present",
        "the real Pipecat peer runs only with GLYPHOXA_TEST_PEER=1",
        "needs Linux /proc",
        "no /proc on this system",
        "GLYPHOXA_TEST_POSTGRES_URL is not set",
        "/usr/bin/chromium is missing: apt-get install chromium",
        "llama-cpp-python[server] is not installed (pip install llama-cpp-python)",
        "could not import 'llama_cpp': No module named 'llama_cpp'",
    ]
    assert all(group_of(reason) is not None for reason in reasons), [
        reason for reason in reasons if group_of(reason) is None
    ]


def test_the_test_command_starts_a_throwaway_postgresql_or_says_how(tmp_path: Path) -> None:
    """``./scripts/test`` (here only collecting one file) starts PostgreSQL for its run when
    the Debian package is there and removes it afterwards, or names the package to install."""
    env = {key: value for key, value in os.environ.items() if key != "GLYPHOXA_TEST_POSTGRES_URL"}
    env["GLYPHOXA_TEST_NO_INSTALL"] = "1"
    done = subprocess.run(
        ["./scripts/test", "--co", "-q", "tests/foundation/test_skip_summary.py"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    installed = any(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if not installed:
        assert "sudo apt-get install" in done.stderr and "postgresql" in done.stderr
        return
    found = re.search(r"test: a throwaway PostgreSQL for this run on port (\d+)", done.stderr)
    assert found, done.stderr[-3000:]
    with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
        sock.connect(("127.0.0.1", int(found[1])))  # stopped when the run ended
