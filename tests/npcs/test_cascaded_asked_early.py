"""A FAST answer whose first sample has nothing clean is asked again early, not after the whole
sample (the cascaded engine against a scripted OpenAI-compatible SSE server and the real
ToolHost)."""

from __future__ import annotations

from campaigns.basics import Tier
from npcs.engines import Sentence, TurnDone, TurnRequest

from .npcs_fake_openai import FakeOpenAI, Step
from .test_cascaded import collect, engine_for


async def test_a_sample_with_nothing_clean_early_is_asked_again_before_its_end(host, sage) -> None:
    """An echo that runs on is not read to its end (a whole sample, the slowest FAST turns):
    about 25 tokens in with nothing to say, the turn asks again, and what came late in that
    sample is never said."""
    heard = "What news from the north?"
    script = [Step(content=f"{' '.join([heard] * 8)} Snow, late."), Step(content="Wolves.")]
    async with FakeOpenAI(script) as server:
        events = await collect(
            engine_for(server, host), TurnRequest(sage, "Alice", heard, Tier.FAST)
        )
    assert [e.text for e in events if isinstance(e, Sentence)] == ["Wolves."]
    assert len(server.requests) == 2
    done = events[-1]
    assert isinstance(done, TurnDone) and dict(done.repairs)["regenerated"] == 1


async def test_a_clean_line_after_a_short_echo_is_said_from_the_same_sample(host, sage) -> None:
    """Only a long run of nothing clean is cut: an echo, then the answer, is one sample, and
    the answer's first piece is as short as an answer's first piece may be (the echo that
    opened the sample was never said, so the voice starts at the first clause)."""
    heard = "What news from the north?"
    script = [Step(content=f"{heard} Snow on the passes, and wolves behind it."),
              Step(content="Never asked.")]  # fmt: skip
    async with FakeOpenAI(script) as server:
        request = TurnRequest(sage, "Alice", heard, Tier.FAST)
        events = await collect(engine_for(server, host), request)
    spoken = [e.text for e in events if isinstance(e, Sentence)]
    assert spoken == ["Snow on the passes,", "and wolves behind it."]
    assert len(server.requests) == 1


async def test_a_tool_call_written_as_long_text_is_read_to_its_end(host, sage, tool_log) -> None:
    """Nothing spoken, but a call on its way (written as text): never cut for its length."""
    call = 'roll_die({"sides": 20, "why": "' + "a long reason for the roll " * 5 + '"})'
    script = [Step(content=call), Step(content="A fine roll.")]
    async with FakeOpenAI(script) as server:
        request = TurnRequest(sage, "Alice", "Roll for me.", Tier.FAST)
        events = await collect(engine_for(server, host, stream_tool_rounds=True), request)
    assert tool_log.calls == ["roll_die"]
    assert [e.text for e in events if isinstance(e, Sentence)][-1:] == ["A fine roll."]
