"""The real local llama.cpp server with SmolLM2: streaming, a tool call, a follow-up with tool
results. SmolLM2's words are nonsense; the wire protocol is what is checked."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from openai import AsyncOpenAI

from campaigns.basics import Tier
from npcs.engines import CascadedEngine, FirstToken, Sentence, TurnDone, TurnRequest
from npcs.inference.chatml_tools import render_prompt
from npcs.schema import NpcDefinition

pytestmark = pytest.mark.llm

ROLL_TOOL = {
    "type": "function",
    "function": {
        "name": "roll_die",
        "description": "Roll a die.",
        "parameters": {
            "type": "object",
            "properties": {"sides": {"type": "integer"}},
            "required": ["sides"],
        },
    },
}


@pytest.fixture
async def client(local_llm) -> AsyncIterator[AsyncOpenAI]:
    """An SDK client of the local server, closed after the test (no socket left open)."""
    async with AsyncOpenAI(
        base_url=local_llm.base_url, api_key="local", max_retries=0, timeout=60
    ) as client:
        yield client


async def test_streaming_chat_completion(local_llm, client) -> None:
    stream = await client.chat.completions.create(
        model=local_llm.model_id,
        messages=[{"role": "user", "content": "Say hello to the tavern."}],
        stream=True,
        max_tokens=24,
        temperature=0.0,
    )
    pieces = [c.choices[0].delta.content or "" async for c in stream if c.choices]
    assert len(pieces) > 2  # really streamed, token by token
    assert "".join(pieces).strip()


async def test_tool_call_and_follow_up_with_results(local_llm, client) -> None:
    messages = [
        {"role": "system", "content": "You roll dice with the roll_die function."},
        {"role": "user", "content": "Roll a twenty-sided die."},
    ]
    stream = await client.chat.completions.create(
        model=local_llm.model_id,
        messages=messages,
        tools=[ROLL_TOOL],
        tool_choice={"type": "function", "function": {"name": "roll_die"}},
        stream=True,
        max_tokens=32,
        temperature=0.0,
    )
    name, arguments, call_id = "", "", ""
    async for chunk in stream:
        for delta in chunk.choices[0].delta.tool_calls or () if chunk.choices else ():
            call_id = delta.id or call_id
            if delta.function is not None:
                name = delta.function.name or name
                arguments += delta.function.arguments or ""
    assert name == "roll_die"
    assert isinstance(json.loads(arguments), dict)
    messages.append(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": call_id or "call_0",
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
            ],
        }
    )
    messages.append({"role": "tool", "tool_call_id": call_id or "call_0", "content": "17"})
    follow_up = await client.chat.completions.create(
        model=local_llm.model_id, messages=messages, stream=True, max_tokens=24, temperature=0.0
    )
    text = "".join([c.choices[0].delta.content or "" async for c in follow_up if c.choices])
    assert text.strip()


async def test_cascaded_engine_streams_a_spoken_turn(local_llm, client) -> None:
    # Tool rounds are covered above with a forced tool choice: llama.cpp's automatic tool
    # choice runs a grammar sampler that takes minutes on a shared CI core.
    npc = NpcDefinition(
        name="Bartok",
        personality="A gruff dwarf barkeep.",
        llm={"max_tokens": 40, "temperature": 0.0},
    )
    engine = CascadedEngine(client, model=local_llm.model_id)
    request = TurnRequest(npc, "Alice", "Bartok, what's on tap tonight?", Tier.FAST)
    async with contextlib.aclosing(engine.respond(request)) as events:
        seen = await asyncio.wait_for(_all(events), 120)
    assert isinstance(seen[0], FirstToken)
    assert isinstance(seen[-1], TurnDone)
    spoken = [e.text for e in seen if isinstance(e, Sentence)]
    assert spoken
    assert seen[-1].text == " ".join(spoken)


async def _all(events) -> list[object]:
    return [event async for event in events]


def _roll(call_id: str, sides: int) -> list[dict[str, object]]:
    arguments = json.dumps({"sides": sides})
    return [
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": "roll_die", "arguments": arguments}}]},
        {"role": "tool", "tool_call_id": call_id, "content": str(sides - 1)},
    ]  # fmt: skip


async def test_automatic_tool_call_streams_as_a_real_tool_call(local_llm, client) -> None:
    """With tools offered and ``tool_choice`` auto, the model's own call (here copied from two
    earlier exchanges, greedy sampling) arrives as a ``tool_calls`` delta, not as text."""
    messages = [
        {"role": "system", "content": "You roll dice with the roll_die tool."},
        {"role": "user", "content": "Roll a d20."},
        *_roll("c1", 20),
        {"role": "assistant", "content": "You rolled 19."},
        {"role": "user", "content": "Roll a d8."},
        *_roll("c2", 8),
        {"role": "assistant", "content": "You rolled 7."},
        {"role": "user", "content": "Roll a d6."},
    ]
    stream = await client.chat.completions.create(
        model=local_llm.model_id, messages=messages, tools=[ROLL_TOOL], stream=True,
        max_tokens=60, temperature=0.0,
    )  # fmt: skip
    calls, text, finish = [], "", None
    async for chunk in stream:
        delta = chunk.choices[0].delta
        text += delta.content or ""
        calls += [
            (c.function.name, json.loads(c.function.arguments)) for c in delta.tool_calls or ()
        ]
        finish = chunk.choices[0].finish_reason or finish
    assert calls == [("roll_die", {"sides": 6})]
    assert "<tool_call>" not in text and finish == "tool_calls"


async def test_a_round_with_tools_offered_streams_its_text(local_llm, client) -> None:
    stream = await client.chat.completions.create(
        model=local_llm.model_id,
        messages=[{"role": "user", "content": "Describe the tavern in three sentences."}],
        tools=[ROLL_TOOL], stream=True, max_tokens=30, temperature=0.0,
    )  # fmt: skip
    pieces = [c.choices[0].delta.content async for c in stream if c.choices[0].delta.content]
    assert len(pieces) > 5  # token by token, not one block after a tool decision


async def test_a_second_request_waits_instead_of_cutting_the_first_short(local_llm, client) -> None:
    """llama-cpp-python's default ends a streaming answer when another request arrives."""

    async def count(max_tokens: int) -> tuple[int, str | None]:
        stream = await client.chat.completions.create(
            model=local_llm.model_id,
            messages=[{"role": "user", "content": "Tell me a long story about a dragon."}],
            stream=True, max_tokens=max_tokens, temperature=0.0,
        )  # fmt: skip
        tokens, finish = 0, None
        async for chunk in stream:
            tokens += bool(chunk.choices[0].delta.content)
            finish = chunk.choices[0].finish_reason or finish
        return tokens, finish

    first = asyncio.create_task(count(60))
    await asyncio.sleep(0.3)
    second = await count(5)
    tokens, finish = await first
    assert finish in ("length", "stop") and tokens >= 20, (tokens, finish)
    assert second[1] in ("length", "stop")


async def test_a_whole_completion_counts_its_tokens(local_llm, client) -> None:
    response = await client.chat.completions.create(
        model=local_llm.model_id,
        messages=[{"role": "user", "content": "Name a tavern."}],
        max_tokens=12,
        temperature=0.0,
    )
    text = response.choices[0].message.content or ""
    assert text.strip() and response.choices[0].finish_reason in ("length", "stop")
    usage = response.usage
    assert usage is not None and usage.prompt_tokens > 5
    assert 0 < usage.completion_tokens <= 14
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


async def test_a_warm_up_gives_way_to_a_turn_that_waits(local_llm, client) -> None:
    """A one-token request (the bot's prefill) stops evaluating its prompt as soon as another
    request waits, and answers with no token; alone, it answers with its one token.

    The turn must arrive while the warm-up evaluates its ~1500 tokens, which takes from a few
    tenths of a second to seconds depending on the CPU and its load. A try where the warm-up
    was over before the turn was sent, or had not begun when the turn was answered, proves
    nothing either way: it is tried again with a new ledger (a cached prompt is not evaluated
    again) and a shorter or longer head start."""

    async def warm_up(ledger: str) -> tuple[str | None, int]:
        response = await client.chat.completions.create(
            model=local_llm.model_id,
            messages=[{"role": "user", "content": f"The ledger of the inn: {ledger}"}],
            max_tokens=1,
            temperature=0.0,
        )
        assert response.usage is not None and response.usage.prompt_tokens > 1000
        return response.choices[0].finish_reason, response.usage.completion_tokens

    head_start_s = 0.3
    for attempt in range(4):
        ledger = " ".join(
            f"Guest {i} paid {(i + attempt) % 7 + 1} silver for room {i}." for i in range(110)
        )
        warming = asyncio.create_task(warm_up(ledger))
        await asyncio.sleep(head_start_s)  # the warm-up is evaluating its ~1500 tokens
        over_before = warming.done()
        turn = await client.chat.completions.create(
            model=local_llm.model_id,
            messages=[{"role": "user", "content": "Name a tavern."}],
            max_tokens=8, temperature=0.0,
        )  # fmt: skip
        assert (turn.choices[0].message.content or "").strip()
        begun_after = not warming.done()  # it was queued behind the turn, not under way
        result = await warming
        if over_before:
            head_start_s /= 3
        elif begun_after and result == ("length", 1):
            head_start_s *= 3
        else:
            assert result == ("length", 0)  # it gave way without sampling
            break
    else:
        pytest.fail("the turn never arrived while the warm-up was evaluating")
    finish, sampled = await warm_up(ledger)  # nobody waits now: it evaluates it all and samples
    assert sampled == 1 and finish in ("length", "stop")


async def test_a_last_assistant_message_is_continued(local_llm, client) -> None:
    """The bundled server takes a final assistant message as the start of the answer: greedy,
    the answer is what the raw prompt ending inside that message continues with."""
    messages = [
        {"role": "system", "content": "You are Bartok, a dwarf barkeep."},
        {"role": "user", "content": "Arin says to you: what is on tap tonight?"},
    ]
    chat = await client.chat.completions.create(
        model=local_llm.model_id,
        messages=[*messages, {"role": "assistant", "content": 'Bartok: "'}],
        max_tokens=12, temperature=0.0, stop=['"'],
    )  # fmt: skip
    raw = await client.completions.create(
        model=local_llm.model_id,
        prompt=render_prompt(messages) + 'Bartok: "',
        max_tokens=12, temperature=0.0, stop=['"', "<|im_end|>"],
    )  # fmt: skip
    answer = chat.choices[0].message.content or ""
    assert answer.strip() and answer == raw.choices[0].text
    assert not answer.startswith("Bartok")  # the prefill is not echoed back


def _nice_of_every_thread(pid: int) -> set[int]:
    """The nice value of each of ``pid``'s threads (field 19 of /proc/PID/task/TID/stat)."""
    values = set()
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        fields = stat.read_text().rsplit(")", 1)[1].split()
        values.add(int(fields[16]))  # fields after "(comm)" start at field 3
    return values


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
async def test_the_server_runs_below_the_bot_on_every_thread() -> None:
    """``nice``: the server's process, and every thread it starts (the request that generates
    too), runs that many steps below us, so Piper and Whisper win the cores beside it."""
    from npcs.inference.server import LocalLlmServer

    ours = os.getpriority(os.PRIO_PROCESS, 0)
    async with LocalLlmServer(n_ctx=512, n_threads=1, nice=5) as server:
        assert server.pid is not None
        async with AsyncOpenAI(base_url=server.base_url, api_key="local", max_retries=0) as client:
            await client.completions.create(model="local", prompt="The tavern", max_tokens=4)
        assert _nice_of_every_thread(server.pid) == {min(19, ours + 5)}
