"""No crash on exit: a process that ran a model ends with its own exit code.

Python 3.11 ends a daemon thread still running at interpreter finalization with
``pthread_exit``; inside C++ (CTranslate2 freeing Whisper, onnxruntime) that aborts the process
("terminate called without an active exception", exit 134) after its work is done.
``glyphoxa doctor --only stt`` did so every time. Each test runs a real child process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from npcs.inference.server import llama_cpp_available

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "campaigns" / "example"
ABORTED = "terminate called"


def run_child(
    args: list[str], tmp_path: Path, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("GLYPHOXA_CONFIG", None)
    return subprocess.run(
        args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=timeout
    )


def test_a_model_thread_still_working_at_exit_is_stopped_and_joined(tmp_path: Path) -> None:
    """The exit hook asks a live model thread to stop and waits for it: the thread's last
    words are printed before the process ends, and the exit code is the program's."""
    script = textwrap.dedent(
        """
        import sys, threading, time
        from bot.audio.speech.model_threads import start_model_thread

        stop = threading.Event()
        started = threading.Event()

        def work():
            started.set()
            while not stop.wait(0.01):
                pass
            time.sleep(0.2)  # the work in hand, finished after the stop
            print("finished before the interpreter ended", flush=True)

        start_model_thread(work, name="test-model-thread", stop=stop.set)
        started.wait(10)
        sys.exit(3)
        """
    )
    done = run_child([sys.executable, "-c", script], tmp_path)
    assert done.returncode == 3, done.stderr
    assert "finished before the interpreter ended" in done.stdout


def test_whisper_closed_then_freed_at_exit_does_not_abort(tmp_path: Path) -> None:
    """The pattern that aborted: a recognizer used, closed and let go as the program ends (its
    worker thread freed the model while the interpreter finalized)."""
    script = textwrap.dedent(
        """
        import asyncio
        import numpy as np
        from bot.audio.speech.stt_whisper import FasterWhisperStt

        async def main():
            stt = await FasterWhisperStt.load(None)
            await stt.transcribe(np.zeros(16000, np.float32))
            stt.close()

        asyncio.run(main())
        print("done", flush=True)
        """
    )
    for _ in range(3):  # it aborted every time; three runs leave no luck in it
        done = run_child([sys.executable, "-c", script], tmp_path)
        assert done.returncode == 0 and ABORTED not in done.stderr, done.stderr
        assert done.stdout.strip() == "done"


def _subsets() -> list[str]:
    from bot.frontends.doctor import CHECK_NAMES

    offline = [name for name in CHECK_NAMES if name not in ("discord-api", "mcp")]
    return [name for name in offline if name != "llm" or llama_cpp_available()]


@pytest.mark.slow
@pytest.mark.parametrize("only", _subsets())
def test_every_doctor_subset_exits_with_its_own_code(tmp_path: Path, only: str) -> None:
    """``glyphoxa doctor --only NAME`` for every check ends with 0 (every check passed) or 1,
    never 134; the models each one runs are the ones left behind at exit."""
    config = tmp_path / "glyphoxa.yaml"
    config.write_text(
        f"campaign: {{path: {EXAMPLE}, hot_reload: false}}\n"
        f"memory: {{url: 'sqlite+aiosqlite:///{tmp_path / 'memory.db'}'}}\n"
        f"tools: {{sandbox_dir: {tmp_path / 'files'}, "
        f"calibration_path: {tmp_path / 'calibration.json'}}}\n"
    )
    glyphoxa = [sys.executable, "-m", "bot.cli", "-c", str(config)]
    done = run_child([*glyphoxa, "doctor", "--only", only], tmp_path)
    assert ABORTED not in done.stderr, done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith("doctor: ")
