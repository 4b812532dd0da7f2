"""Run the model-verdict tests as another CPU would: other kernels, or perturbed audio.

The same ONNX, numpy and CTranslate2 models score the same audio differently on other CPUs
(AVX2 against AVX-512 kernels, another BLAS path, fused or unfused graphs): Smart Turn scored one
espeak line 0.886 on one machine and under 0.5 on another. A test that asserts a model's verdict
must hold on any of them. ``GLYPHOXA_TEST_VARIANT`` names one variant for a whole test run:

- ``kernels``: every model on a second kernel path: CTranslate2 (Whisper) forced to another
  instruction set, numpy's SIMD dispatch and OpenBLAS's core type lowered (Silero's numpy kernel,
  Smart Turn's features), Smart Turn's graph left unfused.
- ``quiet`` / ``loud``: synthesized speech at half / 1.8 times the gain (clipped).
- ``noisy``: white noise at -50 dBFS under the speech.
- ``shifted``: 10 ms of the synthesizer's own lead-in kept, so every 20 ms frame and 32 ms VAD
  window falls elsewhere.
- ``perturbed``: the last three at once, at 0.6 times the gain.
- ``elsewhere``: ``kernels`` and ``perturbed`` together: the suite's own child run, one run
  rather than two so CI stays within its time (each variant alone stays available).

:func:`child_env` gives the environment for a child pytest running one variant (the kernel
settings must be in place before numpy and CTranslate2 load); :func:`perturb` and
:func:`lead_in_samples` are applied by the speech helpers to every synthesized line.
"""

from __future__ import annotations

import os
import platform

import numpy as np

__all__ = [
    "CI_VARIANTS",
    "VARIANTS",
    "child_env",
    "lead_in_samples",
    "optimize_turn_graph",
    "perturb",
    "variant",
]

VARIANTS = ("kernels", "quiet", "loud", "noisy", "shifted", "perturbed", "elsewhere")
CI_VARIANTS = tuple(
    name for name in os.environ.get("GLYPHOXA_CHILD_VARIANTS", "elsewhere").split(",") if name
)
"""The variants the suite runs its ``model_verdict`` tests under (``test_other_machines.py``;
``GLYPHOXA_CHILD_VARIANTS=kernels,quiet`` picks others)."""
_ENV = "GLYPHOXA_TEST_VARIANT"


def variant() -> str:
    """The variant this test run uses ("" for none)."""
    name = os.environ.get(_ENV, "")
    if name and name not in VARIANTS:
        raise ValueError(f"{_ENV}={name!r}: choose one of {', '.join(VARIANTS)}")
    return name


def _numpy_dispatch_off() -> str:
    """numpy's dispatched SIMD features that this CPU has (disabling one it lacks is an error)."""
    from numpy._core._multiarray_umath import (  # type: ignore[attr-defined]
        __cpu_baseline__,
        __cpu_dispatch__,
        __cpu_features__,
    )

    baseline = set(__cpu_baseline__)
    return " ".join(f for f in __cpu_dispatch__ if __cpu_features__.get(f) and f not in baseline)


def child_env(name: str) -> dict[str, str]:
    """The environment of a child test run of variant ``name``."""
    env = {**os.environ, _ENV: name}
    if name in ("kernels", "elsewhere"):
        x86 = platform.machine().lower() in ("x86_64", "amd64")
        env["CT2_FORCE_CPU_ISA"] = "AVX" if x86 else "GENERIC"
        if x86:
            env["OPENBLAS_CORETYPE"] = "Sandybridge"  # AVX without FMA: neither AVX2 nor AVX-512
        off = _numpy_dispatch_off()
        if off:
            env["NPY_DISABLE_CPU_FEATURES"] = off
    return env


def optimize_turn_graph() -> bool:
    """Whether Smart Turn runs fused (False on the ``kernels`` path)."""
    return variant() not in ("kernels", "elsewhere")


def perturb(samples: np.ndarray) -> np.ndarray:
    """Synthesized speech (float32, int16 scale) as the variant hears it."""
    name = variant()
    if name == "elsewhere":
        name = "perturbed"
    if name == "quiet":
        return samples * 0.5
    if name == "loud":
        return np.clip(samples * 1.8, -32768, 32767)
    if name in ("noisy", "perturbed"):
        # Under the speech only: the synthesizer's silence around it stays silent, so a test
        # that trims it still decides how long each pause is.
        loud = np.nonzero(np.abs(samples) > 500)[0]
        noisy = samples * (0.6 if name == "perturbed" else 1.0)
        if loud.size:
            span = slice(loud[0], loud[-1] + 1)
            noise = np.random.default_rng(7).normal(
                0.0, 32768 * 10 ** (-50 / 20), span.stop - span.start
            )
            noisy[span] += noise.astype(np.float32)
        return noisy
    return samples


def lead_in_samples() -> int:
    """Samples of the synthesizer's lead-in kept before the first loud one (16 kHz)."""
    return 160 if variant() in ("shifted", "perturbed", "elsewhere") else 0
