"""DM approval through Discord: the DM gets a private message with buttons, and a real
``discord.Interaction`` built from a button-press payload (gateway INTERACTION_CREATE, type 3)
decides whether a side-effecting tool call runs. The REST edge is the local Discord API."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import pytest

from bot.frontends.discord_bot.approval import DiscordApprover
from campaigns.basics import Tier
from campaigns.content import CampaignApproval
from campaigns.memory import MemoryStore
from tools.host import Invocation, ToolHost
from tools.host.persistence import store_invocation_logger
from tools.spec import BuiltinServer, LatencyMeta, ToolDef

from .discord_api import APP_ID, user
from .discord_api import message as api_message
from .test_commands import DM_USER, PLAYER, Harness, harness

_ids = itertools.count(90_000)


class Quill:
    """A side-effecting tool (not read-only) that counts what it wrote."""

    def __init__(self) -> None:
        self.written: list[str] = []

    def server(self) -> BuiltinServer:
        async def scribble(text: str) -> str:
            self.written.append(text)
            return f"wrote {len(text)} characters"

        schema = {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        }
        return BuiltinServer(
            "quill", [ToolDef("scribble", "Write.", schema, scribble, LatencyMeta(5, 500))]
        )


def press(message: dict[str, Any], custom_id: str, presser: int) -> dict[str, Any]:
    """The INTERACTION_CREATE payload Discord sends when ``presser`` clicks a button in a DM."""
    return {
        "id": str(next(_ids)),
        "application_id": str(APP_ID),
        "type": 3,
        "token": f"button-{next(_ids)}",
        "version": 1,
        "channel_id": message["channel_id"],
        "channel": {"id": message["channel_id"], "type": 1},
        "user": user(presser, "dm" if presser == DM_USER else "player"),
        "message": message,
        "data": {"custom_id": custom_id, "component_type": 2},
        "app_permissions": "0",
        "attachment_size_limit": 10_485_760,
        "locale": "en-US",
        "entitlements": [],
        "authorizing_integration_owners": {},
        "context": 1,
    }


class Questions:
    """The private messages the DM got, as ``DiscordApprover`` reports them once sent."""

    def __init__(self) -> None:
        self.sent: asyncio.Queue[Any] = asyncio.Queue()

    def __call__(self, request: Any, message: Any) -> None:
        self.sent.put_nowait(message)

    async def next(self, harness: Harness) -> tuple[dict[str, Any], dict[str, str]]:
        """The next question as Discord stored it (a message payload) and its buttons."""
        message = await asyncio.wait_for(self.sent.get(), 10)
        channel = str(message.channel.id)
        _, _, body = next(
            c
            for c in harness.api.calls
            if c[0] == "POST" and c[1] == f"channels/{channel}/messages"
        )
        buttons = {
            item["label"]: item["custom_id"]
            for row in body["components"]
            for item in row["components"]
        }
        payload = {
            **api_message(channel, body["content"], message.id),
            "components": body["components"],
        }
        return payload, buttons


async def host_for(
    quill: Quill,
    harness: Harness,
    invocations: list[Invocation],
    questions: Questions,
    timeout_s: float = 30,
) -> ToolHost:
    host = ToolHost(builtins=[quill.server()], on_invocation=invocations.append)
    dm = harness.bot._connection.store_user(user(DM_USER, "dm"))
    host.approvals.configure(
        campaign=CampaignApproval(enabled=True, timeout_s=timeout_s),
        approver=DiscordApprover(dm, on_sent=questions),
    )
    await host.start()
    return host


async def call(host: ToolHost) -> Any:
    return await host.call(
        "scribble",
        {"text": "The cellar key is under the bar."},
        whitelist=["*"],
        tier=Tier.DEEP,
        npc="Bartok",
    )


async def test_dm_approves_from_the_private_message(harness: Harness):
    quill, invocations, questions = Quill(), [], Questions()
    host = await host_for(quill, harness, invocations, questions)
    try:
        pending = asyncio.create_task(call(host))
        message, buttons = await questions.next(harness)
        assert "**Bartok** wants to use the tool `scribble`" in message["content"]
        assert '"text": "The cellar key is under the bar."' in message["content"]
        assert set(buttons) == {"Approve", "Deny"} and not pending.done() and quill.written == []
        # Someone else pressing the button changes nothing.
        harness.bot._connection.parse_interaction_create(press(message, buttons["Approve"], PLAYER))
        await harness.api.wait_for_call(lambda c: c[2] and "Only the DM" in str(c[2]))
        assert not pending.done()
        harness.bot._connection.parse_interaction_create(
            press(message, buttons["Approve"], DM_USER)
        )
        result = await asyncio.wait_for(pending, 10)
        assert result.status == "ok" and quill.written == ["The cellar key is under the bar."]
        assert result.approval == "approved by dm"
        update = await harness.api.wait_for_call(
            lambda c: c[2] and "**Approved** by dm" in str(c[2])
        )
        assert update[2]["type"] == 7 and update[2]["data"]["components"] == []  # buttons gone
        assert [(i.status, i.approval) for i in invocations] == [("ok", "approved by dm")]
    finally:
        await host.close()


async def test_dm_denies_and_the_model_reads_a_refusal(harness: Harness, tmp_path: Path):
    quill, invocations, questions = Quill(), [], Questions()
    host = await host_for(quill, harness, invocations, questions)
    memory = await MemoryStore.open(f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}")
    log_to_memory = store_invocation_logger(memory)
    try:
        pending = asyncio.create_task(call(host))
        message, buttons = await questions.next(harness)
        harness.bot._connection.parse_interaction_create(press(message, buttons["Deny"], DM_USER))
        result = await asyncio.wait_for(pending, 10)
        assert (result.status, result.is_error) == ("refused", True)
        assert "the DM refused it" in result.model_text() and quill.written == []
        for invocation in invocations:
            await log_to_memory(invocation)
        (row,) = await memory.tool_calls()
        assert (row["tool"], row["status"], row["approval"]) == (
            "scribble",
            "refused",
            "denied by dm",
        )
    finally:
        await memory.close()
        await host.close()


async def test_no_answer_in_time_is_a_refusal_and_the_buttons_go(harness: Harness):
    quill, invocations, questions = Quill(), [], Questions()
    host = await host_for(quill, harness, invocations, questions, timeout_s=0.5)
    try:
        pending = asyncio.create_task(call(host))
        message, buttons = await questions.next(harness)
        result = await asyncio.wait_for(pending, 10)
        assert result.status == "refused" and "did not answer in time" in result.content
        assert invocations[-1].approval.startswith("timeout")
        edit = await harness.api.wait_for_call(
            lambda c: c[0] == "PATCH" and "No answer in time" in str(c[2])
        )
        assert edit[2]["components"] == []
        # A late press cannot run the call any more.
        harness.bot._connection.parse_interaction_create(
            press(message, buttons["Approve"], DM_USER)
        )
        await asyncio.sleep(0)
        assert quill.written == []
    finally:
        await host.close()


@pytest.fixture(autouse=True)
def _keep_fixture_import() -> None:
    assert harness is not None
