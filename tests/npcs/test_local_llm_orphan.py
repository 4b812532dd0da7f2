"""The local LLM server leaves with the process that started it, even one killed outright."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from npcs.inference.server import llama_cpp_available

pytestmark = [
    pytest.mark.llm,
    pytest.mark.slow,
    pytest.mark.skipif(not llama_cpp_available(), reason="llama-cpp-python[server] missing"),
]

_OWNER = textwrap.dedent(
    """
    import asyncio, sys
    from npcs.inference.server import LocalLlmServer

    async def main():
        async with LocalLlmServer(n_threads=1) as server:
            print(server.pid, flush=True)
            await asyncio.sleep(600)

    asyncio.run(main())
    """
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat") as stat:  # a zombie is gone, just not yet reaped
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (ProcessLookupError, FileNotFoundError):
        return False


def test_a_server_whose_owner_is_killed_outright_exits() -> None:
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert owner.stdout is not None
        line = owner.stdout.readline()  # after the server answered its first request
        assert line.strip().isdigit(), f"the owner printed no server pid: {line!r}"
        server = int(line)
        assert _alive(server)
        owner.send_signal(signal.SIGKILL)  # no cleanup runs: only the server itself can leave
        owner.wait(10)
        deadline = time.monotonic() + 15
        while _alive(server) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(server), "the LLM server outlived the bot that started it"
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait(10)
