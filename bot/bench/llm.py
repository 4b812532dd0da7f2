"""``glyphoxa bench llm``: the bundled llama.cpp server's own speed, apart from the pipeline.

Per server set-up (one thread, the default; every core up to four; every core under the plain
PASSIVE wait policy the server ran with before it was given a spin count) it streams fresh
prompts of about 40 tokens and reports the time to the first token (the prompt's evaluation;
each prompt differs at its start so no KV prefix is reused) and the decode time per token, then
the server's CPU use while idle, which must stay near zero because Whisper and TTS share the
cores. Wall clock, ``perf_counter`` around streamed chunks; the model's words are not judged.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path

import httpx

from bot.bench.result import BenchResult
from campaigns.basics import GlyphoxaError, percentile
from npcs.inference.server import LocalLlmServer

__all__ = ["decode_reference", "run_bench"]

_PROMPT = (
    "Request {n}. You are Bartok, the barkeep of the Prancing Pony. A traveller asks what is on "
    "tap tonight and whether the stew is any good. Answer in two friendly sentences."
)
_MAX_TOKENS = 48
_IDLE_S = 1.0


async def _one_turn(
    client: httpx.AsyncClient, server: LocalLlmServer, n: int
) -> tuple[float, float]:
    """(ms to the first token, ms per later token) of one streamed completion."""
    body = {
        "model": server.model_id,
        "messages": [{"role": "user", "content": _PROMPT.format(n=n)}],
        "max_tokens": _MAX_TOKENS,
        "temperature": 0.0,
        "stream": True,
    }
    start = time.perf_counter()
    stamps: list[float] = []
    async with client.stream("POST", f"{server.base_url}/chat/completions", json=body) as reply:
        reply.raise_for_status()
        async for line in reply.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            delta = json.loads(line[6:])["choices"][0].get("delta") or {}
            if delta.get("content"):
                stamps.append(time.perf_counter())
    if len(stamps) < 2:
        raise GlyphoxaError(
            f"the local LLM streamed {len(stamps)} tokens where {_MAX_TOKENS} were asked: "
            "check the model file (glyphoxa doctor --only llm)"
        )
    return (stamps[0] - start) * 1000, (stamps[-1] - stamps[0]) * 1000 / (len(stamps) - 1)


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU of a process from /proc (None where there is no /proc)."""
    stat = Path(f"/proc/{pid}/stat")
    try:
        fields = stat.read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _measure(
    label: str, threads: int, env: Mapping[str, str] | None, turns: int
) -> list[BenchResult]:
    async with LocalLlmServer(n_threads=threads, env=env) as server:
        async with httpx.AsyncClient(timeout=60.0) as client:
            await _one_turn(client, server, 0)  # warm-up: first allocations, page faults
            samples = [await _one_turn(client, server, n) for n in range(1, turns + 1)]
            assert server.pid is not None
            before = _cpu_seconds(server.pid)
            await asyncio.sleep(_IDLE_S)
            after = _cpu_seconds(server.pid)
    method = f"{turns} streamed completions of {_MAX_TOKENS} tokens, fresh ~40-token prompts"
    first = [s[0] for s in samples]
    decode = [s[1] for s in samples]
    results = [
        BenchResult(f"decode per token, {label}", percentile(decode, 50), "ms", method),
        BenchResult(f"first token, {label}", percentile(first, 50), "ms", method),
    ]
    if before is not None and after is not None:
        idle = (after - before) / _IDLE_S * 100
        results.append(
            BenchResult(
                f"idle CPU, {label}",
                idle,
                "% of a core",
                f"/proc CPU time over {_IDLE_S:.0f} s after the last answer",
                goal="<= 5 %",
                passed=idle <= 5.0,
            )
        )
    return results


async def decode_reference(turns: int = 3) -> tuple[float, float]:
    """(ms per token, ms to the first token), medians, of the bundled server on one thread: the
    reference figure every ``glyphoxa bench`` run prints beside its machine."""
    async with LocalLlmServer(n_threads=1) as server:
        async with httpx.AsyncClient(timeout=60.0) as client:
            await _one_turn(client, server, 0)  # warm-up
            samples = [await _one_turn(client, server, n) for n in range(1, turns + 1)]
    return percentile([s[1] for s in samples], 50), percentile([s[0] for s in samples], 50)


async def run_bench(quick: bool = False) -> list[BenchResult]:
    turns = 2 if quick else 6
    cores = max(1, min(4, os.cpu_count() or 1))
    results = await _measure("1 thread (default)", 1, None, turns)
    if cores > 1:
        results += await _measure(f"{cores} threads", cores, None, turns)
        # GOMP_SPINCOUNT=0 is PASSIVE's own: every barrier sleeps (the set-up before the fix)
        results += await _measure(
            f"{cores} threads, no spin", cores, {"GOMP_SPINCOUNT": "0"}, turns
        )
    return results
