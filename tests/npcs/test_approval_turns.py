"""A turn whose tool call needs the DM's approval: the NPC says a filler line first, the call
runs only when approved, and a refusal reaches the model as the tool's result."""

from __future__ import annotations

import asyncio
import contextlib

from openai import AsyncOpenAI

from campaigns.basics import Tier
from campaigns.content import CampaignApproval, ToolApproval
from npcs.engines import CascadedEngine, Filler, ToolsUsed, TurnRequest
from tools.host import ToolHost
from tools.host.approval import ApprovalDecision, ApprovalRequest

from .npcs_fake_openai import FakeOpenAI, Step


class Dm:
    """An approver that waits for the test to answer, so the order of events is observable."""

    def __init__(self) -> None:
        self.asked: asyncio.Queue[ApprovalRequest] = asyncio.Queue()
        self.answer: asyncio.Queue[ApprovalDecision] = asyncio.Queue()

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        self.asked.put_nowait(request)
        return await self.answer.get()


async def run_turn(host: ToolHost, sage, dm: Dm, decision: ApprovalDecision, script: list[Step]):
    seen: list[object] = []
    async with FakeOpenAI(script) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
        engine = CascadedEngine(client, model="scripted", host=host)
        request = TurnRequest(sage, "Alice", "Open the vault.", Tier.STANDARD)

        async def consume() -> None:
            async with contextlib.aclosing(engine.respond(request)) as events:
                async for event in events:
                    seen.append(event)

        turn = asyncio.create_task(consume())
        asked = await asyncio.wait_for(dm.asked.get(), 10)
        # The filler was yielded before the DM was asked, and nothing ran yet.
        assert [type(e).__name__ for e in seen][-1] == "Filler"
        assert not [e for e in seen if isinstance(e, ToolsUsed)]
        dm.answer.put_nowait(decision)
        await asyncio.wait_for(turn, 10)
        return asked, seen, server.requests


async def test_denied_call_never_runs_and_the_model_reads_why(host: ToolHost, sage, tool_log):
    dm = Dm()
    sage = sage.model_copy(update={"tools": ["open_vault"], "approval": "always_ask"})
    host.approvals.configure(rules_for=lambda name: sage.approval, approver=dm)
    script = [Step(tool_calls=[("open_vault", {})]), Step(content="The DM says no.")]
    asked, seen, requests = await run_turn(
        host, sage, dm, ApprovalDecision("denied", by="Dana"), script
    )
    assert (asked.npc, asked.tool, dict(asked.arguments)) == ("Greymantle", "open_vault", {})
    assert [e.text for e in seen if isinstance(e, Filler)] == ["Let me consult my notes..."]
    (used,) = [e for e in seen if isinstance(e, ToolsUsed)]
    (result,) = used.report.results
    assert (result.status, result.approval) == ("refused", "denied by Dana")
    assert tool_log.calls == []
    tool_message = requests[1]["messages"][-1]
    assert tool_message["role"] == "tool" and "the DM refused it" in tool_message["content"]


async def test_ask_mode_remembers_an_approval_for_the_session(host: ToolHost, sage, tool_log):
    dm = Dm()
    sage = sage.model_copy(update={"tools": ["open_vault", "roll_die"]})
    host.approvals.configure(
        campaign=CampaignApproval(enabled=True), rules_for=lambda _npc: None, approver=dm
    )
    assert host.needs_approval("Greymantle", ["open_vault"])  # side effects: ask
    assert not host.needs_approval("Greymantle", ["roll_die"])  # read-only: never by default
    script = [
        Step(tool_calls=[("open_vault", {})]),
        Step(content="The vault door swings open for you."),
    ]
    _, _, _ = await run_turn(host, sage, dm, ApprovalDecision("approved", by="Dana"), script)
    assert tool_log.calls == ["open_vault"]
    assert not host.needs_approval("Greymantle", ["open_vault"])  # remembered ("ask")
    assert host.needs_approval("Someone else", ["open_vault"])  # per NPC


def test_most_specific_setting_wins():
    from tools.host.approval import resolve_mode

    enabled = CampaignApproval(enabled=True, tools={"roll_die": "always_ask"})
    assert resolve_mode(None, enabled, "open_vault", read_only=False) == "ask"
    assert resolve_mode(None, enabled, "lookup", read_only=True) == "never"
    assert resolve_mode(None, enabled, "roll_die", read_only=True) == "always_ask"
    assert resolve_mode("never", enabled, "open_vault", read_only=False) == "never"
    assert resolve_mode("never", enabled, "roll_die", read_only=True) == "always_ask"
    npc = ToolApproval(default="always_ask", tools={"roll_die": "never"})
    assert resolve_mode(npc, enabled, "roll_die", read_only=True) == "never"
    assert resolve_mode(npc, enabled, "lookup", read_only=True) == "always_ask"
    assert resolve_mode(None, CampaignApproval(), "open_vault", read_only=False) == "never"


async def test_realtime_turn_says_a_filler_and_sends_the_refusal(host: ToolHost, tool_log):
    """Speech-to-speech: the filler comes before the DM decides; the Realtime bridge gets the
    refusal as the function call's output."""
    from npcs.engines.realtime import RealtimeEngine

    from .npcs_fake_realtime import FakeRealtime, Reply
    from .test_realtime import ORACLE, function_outputs

    oracle = ORACLE.model_copy(update={"tools": ["open_vault"], "approval": "always_ask"})
    dm = Dm()
    host.approvals.configure(rules_for=lambda name: oracle.approval, approver=dm)

    def script(received: list[dict]) -> Reply:
        if function_outputs(received):
            return Reply(transcript="The vault stays shut.", audio_chunks=2)
        return Reply(function_call=("open_vault", {}))

    seen: list[object] = []
    async with FakeRealtime(script) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
        engine = RealtimeEngine(client, model="gpt-realtime", host=host)
        try:

            async def consume() -> None:
                request = TurnRequest(oracle, "Alice", "Open the vault.", Tier.FAST)
                async with contextlib.aclosing(engine.respond(request)) as events:
                    async for event in events:
                        seen.append(event)

            turn = asyncio.create_task(consume())
            await asyncio.wait_for(dm.asked.get(), 10)
            assert isinstance(seen[-1], Filler) and seen[-1].text
            dm.answer.put_nowait(ApprovalDecision("timeout", detail="no answer in 45 s"))
            await asyncio.wait_for(turn, 10)
        finally:
            await engine.aclose()
    (output,) = function_outputs(server.received)
    assert "the DM did not answer in time" in output["output"]
    assert tool_log.calls == []
