"""Thread pools are sized by the cores the process may use, not the host's.

A process pinned to one core (as a container's CPU set or ``taskset`` pins it) is run as a
child, so the test's own process keeps its cores; the quota is read from a cgroup tree laid
out as Linux lays it out.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from campaigns.cores import cpu_quota_cores

ROOT = Path(__file__).resolve().parents[2]

needs_affinity = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity"), reason="CPU affinity is Linux's"
)


def _pinned_to_one_core(code: str) -> dict[str, int]:
    """Run ``code`` in a child pinned to one core; it prints a JSON object."""
    program = "import os\nos.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n"
    program += textwrap.dedent(code)
    done = subprocess.run(
        [sys.executable, "-c", program],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@needs_affinity
def test_a_process_pinned_to_one_core_uses_one() -> None:
    seen = _pinned_to_one_core(
        "import json\nfrom campaigns.cores import usable_cores\n"
        "print(json.dumps({'cores': usable_cores(), 'host': os.cpu_count()}))"
    )
    assert seen["cores"] == 1


@needs_affinity
def test_piper_runs_no_pool_threads_on_one_core() -> None:
    """onnxruntime's default pool counts the host's cores; Piper's is sized by the process's,
    so pinned to one core its session starts no threads of its own (the real voice model)."""
    seen = _pinned_to_one_core(
        """
        import json
        import onnxruntime, piper  # their imports start threads of their own
        from bot.audio.speech.tts_piper import _load_voice, default_piper_model
        path = default_piper_model()
        before = len(os.listdir("/proc/self/task"))
        voice = _load_voice(path)
        print(json.dumps({"added": len(os.listdir("/proc/self/task")) - before}))
        """
    )
    assert seen["added"] == 0


@pytest.mark.parametrize(
    ("cpu_max", "cores"),
    [("max 100000", None), ("150000 100000", 1.5), ("200000 100000", 2.0), ("junk", None)],
)
def test_the_cgroup_quota_is_read_in_cores(
    tmp_path: Path, cpu_max: str, cores: float | None
) -> None:
    proc, cgroups = tmp_path / "proc", tmp_path / "cgroup"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "cgroup").write_text("0::/bot.slice/glyphoxa.service\n")
    group = cgroups / "bot.slice" / "glyphoxa.service"
    group.mkdir(parents=True)
    (group / "cpu.max").write_text(cpu_max + "\n")
    assert cpu_quota_cores(proc, cgroups) == cores


def test_no_cgroup_v2_means_no_quota(tmp_path: Path) -> None:
    assert cpu_quota_cores(tmp_path / "proc", tmp_path / "cgroup") is None
