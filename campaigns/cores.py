"""How many cores this process may really use, for sizing every inference thread pool.

``os.cpu_count()`` (and onnxruntime's default pool) counts the host's cores: in a container
limited to two CPUs on a 64-core host, or a process pinned to one core, a pool sized that way
runs dozens of threads that take turns on the cores the process has, and every answer's tail
grows. The limit is the smaller of the process's CPU affinity and its cgroup's CPU quota
(``cpu.max``, rounded up: a quota of 1.5 cores still runs two threads at once). It lives in
the lowest layer because speech (Piper, Whisper), the bundled LLM server and the benchmarks'
machine line all size themselves by it.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

__all__ = ["cpu_quota_cores", "usable_cores"]


def cpu_quota_cores(
    proc: Path = Path("/proc"), cgroups: Path = Path("/sys/fs/cgroup")
) -> float | None:
    """The cgroup v2 CPU limit of this process in cores (``cpu.max``), None when unlimited or
    unknown (no cgroup v2). ``proc`` and ``cgroups`` are the mount points to read."""
    try:
        group = (proc / "self" / "cgroup").read_text().strip().split("::", 1)[-1]
        limit, period = (cgroups / group.lstrip("/") / "cpu.max").read_text().split()
        if limit == "max":
            return None
        return int(limit) / int(period)
    except (OSError, ValueError, ZeroDivisionError):
        return None


def usable_cores() -> int:
    """Cores this process may run on at once: its affinity, capped by its CPU quota; at least 1."""
    if hasattr(os, "sched_getaffinity"):
        cores = len(os.sched_getaffinity(0))
    else:  # pragma: no cover - macOS and Windows have no affinity call
        cores = os.cpu_count() or 1
    quota = cpu_quota_cores()
    if quota is not None:
        cores = min(cores, math.ceil(quota))
    return max(1, cores)
