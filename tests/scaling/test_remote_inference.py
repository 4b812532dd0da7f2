"""Remote inference through the real ``openai`` SDK to local servers speaking OpenAI's protocol.

Each table's requests pass its own :class:`TableGate` into the process's shared connection
pool: retries with backoff on 429/5xx, ``Retry-After`` honoured up to a cap, a per-request
timeout, pooled connections, and a per-table limit so a busy table cannot starve another.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from typing import Any

import numpy as np
import pytest
from aiohttp import web

from bot.audio.speech import OpenAiStt, OpenAiTts
from bot.bench.doubles.instant_audio import InstantAudio
from bot.settings.providers import LlmOptions, LlmProvider, SttOptions, TtsOptions
from campaigns.basics import GlyphoxaError, Tier
from campaigns.providers.voices import VoiceSettings
from npcs.engines import CascadedEngine, Sentence, TurnDone, TurnRequest
from npcs.inference.pools import InferencePool, RemoteOptions, remote_options
from npcs.schema import NpcDefinition

from ..npcs.npcs_fake_openai import FakeOpenAI, Step

SECOND_OF_SPEECH = np.zeros(16_000, dtype=np.float32)
FAST = RemoteOptions(backoff_s=0.1, max_backoff_s=0.5, retries=2)


def _stt(pool: InferencePool, server: InstantAudio, options: RemoteOptions = FAST) -> OpenAiStt:
    client = pool.client("stt", server.base_url, None, options)
    return OpenAiStt(model="whisper-1", client=client)


def _tts(pool: InferencePool, server: InstantAudio, options: RemoteOptions) -> OpenAiTts:
    return OpenAiTts(model="tts-1", client=pool.client("tts", server.base_url, None, options))


def _outcome(pool: InferencePool, service: str, outcome: str) -> float:
    value = pool.registry.get_sample_value(
        "glyphoxa_inference_requests_total", {"service": service, "outcome": outcome}
    )
    return value or 0.0


@contextlib.asynccontextmanager
async def _pool() -> Any:
    pool = InferencePool()
    try:
        yield pool
    finally:
        await pool.aclose()


async def test_429_and_503_are_retried_with_backoff_then_the_answer_arrives() -> None:
    answers = [429, 503]
    arrivals: list[float] = []

    async def gate(route: str, fields: dict[str, Any]) -> int | None:
        arrivals.append(time.monotonic())
        return answers.pop(0) if answers else None

    async with InstantAudio("Bartok, a pint please.", gate=gate) as server, _pool() as pool:
        text = await _stt(pool, server).transcribe(SECOND_OF_SPEECH)

    assert text == "Bartok, a pint please."
    assert server.count("transcriptions") == 3
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    assert gaps[0] >= 0.1 * 0.75 and gaps[1] >= 0.2 * 0.75  # exponential, jittered down <= 25 %
    assert _outcome(pool, "stt", "retried") == 2
    assert _outcome(pool, "stt", "ok") == 1


async def test_retry_after_is_honoured_but_a_long_one_fails_at_once() -> None:
    waits = ["0.3", "30"]
    arrivals: list[float] = []

    async def gate(route: str, fields: dict[str, Any]) -> web.Response | None:
        arrivals.append(time.monotonic())
        if len(arrivals) == 2:
            return None  # the second attempt, after the honoured Retry-After, succeeds
        body = {"error": {"message": "slow down", "type": "rate_limit"}}
        return web.json_response(body, status=429, headers={"Retry-After": waits.pop(0)})

    async with InstantAudio(gate=gate) as server, _pool() as pool:
        stt = _stt(pool, server)
        assert await stt.transcribe(SECOND_OF_SPEECH)
        assert arrivals[1] - arrivals[0] >= 0.3
        started = time.monotonic()
        with pytest.raises(GlyphoxaError, match="transcription service failed"):
            await stt.transcribe(SECOND_OF_SPEECH)  # Retry-After 30 s: not worth waiting
        assert time.monotonic() - started < 1.0
    assert len(arrivals) == 3


async def test_a_server_that_keeps_failing_gives_up_after_the_retries() -> None:
    async def gate(route: str, fields: dict[str, Any]) -> int:
        return 503

    async with InstantAudio(gate=gate) as server, _pool() as pool:
        with pytest.raises(GlyphoxaError, match="speech service failed"):
            tts = _tts(pool, server, FAST)
            async for _chunk in tts.synthesize("Hello there.", VoiceSettings(provider="openai")):
                pass
    assert server.count("speech") == FAST.retries + 1
    assert _outcome(pool, "tts", "failed") == 1


async def test_per_request_timeout_turns_a_hung_server_into_a_clear_error() -> None:
    never = asyncio.Event()

    async def gate(route: str, fields: dict[str, Any]) -> None:
        await never.wait()

    async with InstantAudio(gate=gate) as server, _pool() as pool:
        options = RemoteOptions(timeout_s=0.3, retries=0)
        started = time.monotonic()
        with pytest.raises(GlyphoxaError, match="transcription service failed"):
            await _stt(pool, server, options).transcribe(SECOND_OF_SPEECH)
        elapsed = time.monotonic() - started
        never.set()
    assert 0.3 <= elapsed < 2.0
    assert _outcome(pool, "stt", "error") == 1


async def test_one_busy_table_cannot_starve_another() -> None:
    """Table A asks for eight voices at once from a slow TTS server; the process pool has four
    connections. A may only use two, so table B's request still goes out at once and is answered
    while all of A's wait. (Without the per-table limit A's requests fill the pool and B waits
    behind them.)"""
    release = asyncio.Event()
    b_answered = asyncio.Event()

    async def gate(route: str, fields: dict[str, Any]) -> None:
        if fields["input"].startswith("A"):
            await release.wait()

    options = RemoteOptions(per_table=2, pool_size=4, timeout_s=10)
    async with InstantAudio(gate=gate) as server, _pool() as pool:
        table_a, table_b = _tts(pool, server, options), _tts(pool, server, options)

        async def speak(tts: OpenAiTts, text: str) -> int:
            total = 0
            async for chunk in tts.synthesize(text, VoiceSettings(provider="openai")):
                total += len(chunk.pcm)
            return total

        busy = [asyncio.create_task(speak(table_a, f"A line {i}")) for i in range(8)]
        answer_b = asyncio.create_task(speak(table_b, "B: just one line."))
        answer_b.add_done_callback(lambda _: b_answered.set())
        try:
            await asyncio.wait_for(b_answered.wait(), 5)
            assert answer_b.result() > 0
            held = [fields["input"] for route, fields in server.requests if route == "speech"]
            assert sum(1 for text in held if text.startswith("A")) == 2  # A's limit, not the pool
            assert not any(task.done() for task in busy)
            release.set()
            assert all(n > 0 for n in await asyncio.wait_for(asyncio.gather(*busy), 10))
        finally:
            release.set()
            for task in [*busy, answer_b]:
                task.cancel()
            await asyncio.gather(*busy, answer_b, return_exceptions=True)
    assert server.max_in_flight <= 3


async def test_tables_share_pooled_connections() -> None:
    async with InstantAudio() as server, _pool() as pool:
        tables = [_stt(pool, server) for _ in range(3)]
        for _ in range(5):
            for stt in tables:
                assert await stt.transcribe(SECOND_OF_SPEECH)
        assert len(pool._transports) == 1
    assert server.count("transcriptions") == 15
    assert len(server.connections) == 1  # kept alive and reused by every table


async def test_llm_stream_is_retried_on_503_before_it_starts() -> None:
    npc = NpcDefinition.model_validate({"name": "Bartok", "personality": "A gruff dwarf."})
    script = [Step(status=503), Step(status=429), Step(content="Dark ale tonight. Two coppers.")]
    async with FakeOpenAI(script) as server, _pool() as pool:
        provider = LlmProvider(
            name="openai", base_url=server.base_url, model="scripted", options={"backoff_s": 0.05}
        )
        client = pool.for_provider("llm", provider)
        engine = CascadedEngine(client, model="scripted")
        request = TurnRequest(npc, "Aria", "Bartok, what's on tap?", Tier.FAST)
        async with contextlib.aclosing(engine.respond(request)) as events:
            seen = [event async for event in events]
    assert len(server.requests) == 3
    assert [e.text for e in seen if isinstance(e, Sentence)] == [
        "Dark ale tonight.",
        "Two coppers.",
    ]
    assert isinstance(seen[-1], TurnDone)
    assert _outcome(pool, "llm", "retried") == 2


def test_options_are_read_from_the_provider_section_over_the_service_defaults() -> None:
    options = remote_options(
        "llm", LlmOptions.model_validate({"per_table": 8, "timeout_s": "12.5"})
    )
    assert options.per_table == 8 and options.timeout_s == 12.5 and options.retries == 2
    assert remote_options("stt", SttOptions()).timeout_s == 15.0
    assert remote_options("tts", TtsOptions(retries=0)).retries == 0


async def test_a_client_that_goes_away_mid_upload_leaves_no_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``bench tables`` ends a step's tables while their uploads are in flight: the stand-in
    server printed aiohttp's "Error handling request" traceback for each."""
    async with InstantAudio() as server:
        host, port = server.base_url.split("//")[1].split("/")[0].split(":")
        _reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(
            b"POST /v1/audio/transcriptions HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n"
            b"Content-Type: multipart/form-data; boundary=b\r\n\r\n--b\r\n"
        )
        await writer.drain()
        await asyncio.sleep(0.1)
        writer.transport.abort()
        await asyncio.sleep(0.2)
    assert not [r for r in caplog.records if r.levelname == "ERROR"], caplog.text
