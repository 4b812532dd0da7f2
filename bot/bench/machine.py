"""The machine a benchmark ran on, and two reference figures measured in the same run.

Latency and CPU figures only compare between runs on the same kind of machine: the same
pipeline's voice-to-voice latency differs several-fold between two small VMs. Every
``glyphoxa bench`` run therefore starts with the CPU model, its cores, the instruction sets
that decide which kernels the models run (AVX2, FMA, AVX-512, AMX; NEON on arm64), and two
reference figures taken right there: a fixed CPython loop (the interpreter's speed: lanes,
routing, asyncio) and SmolLM2's decode time per token on the bundled llama.cpp server (the
speed of the matrix kernels the models share). Two runs are comparable when their reference
figures are; a figure is best quoted as a ratio to another measured in the same run.
"""

from __future__ import annotations

import os
import platform
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from campaigns.cores import cpu_quota_cores

__all__ = [
    "Machine",
    "Reference",
    "describe_machine",
    "measure_reference",
    "python_loop_seconds",
]

_INTERESTING = (
    "sse4_2", "avx", "avx2", "fma", "f16c", "bmi2", "avx_vnni", "avx512f", "avx512bw",
    "avx512_vnni", "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16",
    "asimd", "asimddp", "sve", "sve2", "i8mm", "bf16",
)  # fmt: skip
"""Instruction sets that decide which kernels onnxruntime, CTranslate2, numpy and llama.cpp
pick (x86-64 and arm64 flag names as /proc/cpuinfo spells them)."""

_LOOP_ADDITIONS = 10_000_000


@dataclass(frozen=True, slots=True)
class Machine:
    """What a figure was measured on."""

    cpu: str
    cores: int
    """Logical CPUs this process may run on (its affinity), not the host's."""
    arch: str
    flags: tuple[str, ...]
    cpu_quota: float | None = None
    """Cores' worth of CPU the cgroup allows (``cpu.max``), None when unlimited."""
    system: str = field(default_factory=lambda: f"{platform.system()} {platform.release()}")
    python: str = field(default_factory=lambda: platform.python_version())

    def describe(self) -> str:
        """One line: ``AMD EPYC, 2 cores, x86_64 (avx avx2 fma ...; no avx512f), ...``."""
        missing = [f for f in ("avx2", "avx512f", "amx_tile") if f not in self.flags]
        isa = " ".join(self.flags) or "unknown"
        if self.arch in ("x86_64", "amd64") and missing:
            isa += f"; no {', '.join(missing)}"
        quota = f", CPU quota {self.cpu_quota:g} cores" if self.cpu_quota else ""
        return (
            f"{self.cpu}, {self.cores} cores{quota}, {self.arch} ({isa}), {self.system}, "
            f"Python {self.python}"
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Reference:
    """Reference figures of this run: compare runs only when these are alike."""

    python_loop_s: float
    """Wall seconds of a plain CPython loop of ten million additions."""
    python_loop_cpu_s: float
    """Its CPU seconds: above the wall figure's share, another process took the core."""
    llm_ms_per_token: float | None = None
    """SmolLM2 decode per token on the bundled server, one thread (None: not installed)."""
    llm_first_token_ms: float | None = None
    llm_note: str = ""

    def describe(self) -> str:
        loop = f"CPython loop of 10M additions {self.python_loop_s:.2f} s"
        if self.python_loop_cpu_s < self.python_loop_s * 0.9:
            loop += f" (CPU {self.python_loop_cpu_s:.2f} s: the core was shared)"
        if self.llm_ms_per_token is None:
            llm = f"SmolLM2 decode: {self.llm_note or 'not measured'}"
        else:
            llm = (
                f"SmolLM2 decode {self.llm_ms_per_token:.1f} ms/token, first token "
                f"{self.llm_first_token_ms:.0f} ms (1 thread)"
            )
        return f"{loop}; {llm}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _cpu_model(arch: str) -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or arch
    for key in ("model name", "Hardware", "Processor", "cpu model"):
        for line in text.splitlines():
            name, _, value = line.partition(":")
            if name.strip() == key and value.strip():
                return value.strip()
    return platform.processor() or arch


def _cpu_flags() -> tuple[str, ...]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return ()
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() in ("flags", "Features"):
            present = set(value.split())
            return tuple(f for f in _INTERESTING if f in present)
    return ()


def describe_machine() -> Machine:
    """This machine, read from /proc (and the platform module where there is no /proc)."""
    arch = platform.machine().lower()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return Machine(_cpu_model(arch), int(cores or 1), arch, _cpu_flags(), cpu_quota_cores())


def python_loop_seconds() -> tuple[float, float]:
    """(wall, CPU) seconds of ten million additions in a plain CPython loop."""
    wall, cpu = time.perf_counter(), time.process_time()
    total = 0
    for value in range(_LOOP_ADDITIONS):
        total += value
    assert total > 0
    return time.perf_counter() - wall, time.process_time() - cpu


async def measure_reference(*, llm: bool = True) -> Reference:
    """The reference figures: the loop always, SmolLM2's decode when llama.cpp is installed."""
    wall, cpu = python_loop_seconds()
    if not llm:
        return Reference(wall, cpu, llm_note="skipped")
    from bot.bench.llm import decode_reference
    from npcs.inference.model import llama_cpp_available

    if not llama_cpp_available():
        return Reference(wall, cpu, llm_note="llama.cpp not installed (./scripts/setup)")
    per_token, first = await decode_reference()
    return Reference(wall, cpu, per_token, first)
