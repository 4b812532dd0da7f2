"""The bundled server's OpenMP environment and ``glyphoxa bench llm`` over real servers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bot.bench.llm import run_bench

pytestmark = pytest.mark.llm

_HAS_PROC = Path("/proc/self/stat").exists()


def _environ(pid: int) -> dict[str, str]:
    path = Path(f"/proc/{pid}/environ")
    if not path.exists():
        pytest.skip("no /proc on this system")
    items = path.read_bytes().decode(errors="replace").split("\0")
    return dict(item.split("=", 1) for item in items if "=" in item)


async def test_the_server_spins_briefly_at_barriers_and_sleeps_when_idle(local_llm) -> None:
    environ = _environ(local_llm.pid)
    assert environ["OMP_WAIT_POLICY"] == os.environ.get("OMP_WAIT_POLICY", "PASSIVE")
    # without a spin count PASSIVE makes every barrier a futex sleep: 2.5x slower decode
    assert int(environ["GOMP_SPINCOUNT"]) > 0


async def test_quick_llm_bench_reports_decode_first_token_and_idle_cpu() -> None:
    from npcs.inference.server import llama_cpp_available

    if not llama_cpp_available():
        pytest.skip("llama-cpp-python[server] is not installed")
    results = {r.name: r for r in await run_bench(quick=True)}
    setups = ["1 thread (default)"]
    cores = max(1, min(4, os.cpu_count() or 1))
    if cores > 1:
        setups += [f"{cores} threads", f"{cores} threads, no spin"]
    for setup in setups:
        assert 0 < results[f"decode per token, {setup}"].value < 1000
        assert results[f"first token, {setup}"].value > 0
        if _HAS_PROC:
            assert results[f"idle CPU, {setup}"].passed, results[f"idle CPU, {setup}"]
