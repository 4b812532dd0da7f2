"""The Chat Completions side of a turn: messages, tool-call wire format and cost estimates.

Shared by the cascaded, sentence-cascade and realtime engines; kept apart from the cascaded
engine's control flow (the tool loop) so each reads on its own.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import openai

from campaigns.basics import GlyphoxaError, Tier
from npcs.context import MAX_SCENE_CHARS, build_messages
from npcs.engines.events import TurnRequest
from tools.host.types import ToolCall, ToolResult, TurnToolReport
from tools.selection import selection_for

if TYPE_CHECKING:
    from tools.host import ToolHost

__all__ = [
    "assistant_tool_message",
    "await_confirmation",
    "completion_parts",
    "create_chat",
    "expected_cost_ms",
    "merge_tool_delta",
    "offered_tools",
    "request_messages",
    "run_tool_calls",
    "shorten",
    "speaker_names",
    "stream_error",
    "tool_message",
]

log = logging.getLogger(__name__)

#: Measured latency replaces the declared one once a tool has this many samples.
_MIN_SAMPLES = 5


def expected_cost_ms(
    host: ToolHost | None, calls: Sequence[ToolCall], whitelist: Sequence[str]
) -> float:
    """What a round of parallel calls is expected to cost: its slowest permitted tool.

    Refused calls (unknown or not whitelisted) cost nothing. An undeclared, unmeasured tool is
    expected to take its hard timeout.
    """
    if host is None:
        return 0.0
    selection = selection_for(whitelist)
    worst = 0.0
    for call in calls:
        info = host.get_tool(call.name)
        if info is None or not selection.allows(info.server, info.original_name, info.name):
            continue
        measured = info.measured_p50_ms if info.samples >= _MIN_SAMPLES else None
        estimate = measured or info.latency.estimated_duration_ms or info.timeout_ms
        worst = max(worst, float(estimate))
    return worst


async def await_confirmation(
    host: ToolHost | None, calls: Sequence[ToolCall], request: TurnRequest
) -> None:
    """A speculative turn waits here until it is adopted before a tool with side effects runs
    (one the host knows that is not read-only) or one that would ask the DM for approval (a
    guess must never bother the DM); a dropped guess is cancelled while waiting."""
    if request.confirmed is None or host is None:
        return
    for call in calls:
        info = host.get_tool(call.name)
        if info is None:
            continue
        if not info.latency.read_only or host.needs_approval(request.npc.name, [call.name]):
            await request.confirmed()
            return


def request_messages(
    request: TurnRequest,
    *,
    has_tools: bool = False,
    scene_chars: int = MAX_SCENE_CHARS,
    notes: str = "",
) -> list[dict[str, Any]]:
    """Chat Completions messages for a turn: the NPC's system prompt, then the player's words
    (``notes``: what the table did first, ``npcs.engines.table_actions``)."""
    return build_messages(
        request.npc,
        request.speaker,
        request.text,
        scene=request.scene,
        entity_snapshot=request.entity_snapshot,
        has_tools=has_tools,
        scene_chars=scene_chars,
        direction=request.direction,
        reacting_to=request.reacting_to,
        notes=notes,
    )


def speaker_names(request: TurnRequest) -> list[str]:
    """Everyone whose line the model might write: the NPC (and aliases), the player speaking, the
    NPC a reaction answers and every speaker of the scene."""
    names = [request.npc.name, *request.npc.aliases, request.speaker, request.reacting_to or ""]
    for line in request.scene:
        names.append(line.npc or line.speaker)
    return list(dict.fromkeys(name for name in names if name and name.strip()))


def offered_tools(
    host: ToolHost | None, whitelist: Sequence[str], tier: Tier
) -> list[dict[str, Any]]:
    """The tools an NPC with this whitelist may call at ``tier``, in OpenAI's function format."""
    return host.openai_tools(whitelist, tier) if host is not None and whitelist else []


def stream_error(client: Any, error: Exception) -> GlyphoxaError:
    """A broken response stream (connection lost, server error mid-answer) as a clear error."""
    return GlyphoxaError(
        f"LLM stream broke at {client.base_url}: {shorten(str(error))}: the server stopped "
        "mid-answer; check that it runs and has memory to spare (providers.llm.base_url; "
        "glyphoxa doctor)"
    )


def shorten(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def merge_tool_delta(slots: dict[int, dict[str, str]], delta: Any) -> None:
    """Accumulate one streamed tool-call fragment (id and name once, arguments in pieces)."""
    index = delta.index if delta.index is not None else len(slots)
    slot = slots.setdefault(index, {"id": "", "name": "", "arguments": ""})
    if delta.id:
        slot["id"] = delta.id
    function = delta.function
    if function is None:
        return
    if function.name:
        name = function.name
        slot["name"] = (
            name if not slot["name"] or name.startswith(slot["name"]) else slot["name"] + name
        )
    if function.arguments:
        slot["arguments"] += function.arguments


def assistant_tool_message(content: str, calls: Sequence[ToolCall]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": content,  # a string even when empty: llama.cpp rejects null
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": call.arguments
                    if isinstance(call.arguments, str)
                    else json.dumps(call.arguments),
                },
            }
            for call in calls
        ],
    }


def tool_message(result: ToolResult) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": result.call_id, "content": result.model_text()}


async def create_chat(client: Any, **params: Any) -> Any:
    """One chat-completions request; API failures become one clear line with a fix."""
    try:
        return await client.chat.completions.create(**params)
    except openai.APIStatusError as error:
        fix = _STATUS_FIXES.get(error.status_code, "run glyphoxa doctor")
        raise GlyphoxaError(
            f"LLM request failed ({error.status_code}) at {client.base_url}: "
            f"{shorten(error.message)}: {fix}"
        ) from None
    except openai.APITimeoutError:
        raise GlyphoxaError(
            f"LLM request timed out at {client.base_url}: the server is overloaded or stuck "
            "(providers.llm.options.timeout_s; run glyphoxa doctor)"
        ) from None
    except openai.APIConnectionError:
        raise GlyphoxaError(
            f"LLM server unreachable at {client.base_url}: check providers.llm.base_url and "
            "that the server runs (glyphoxa doctor)"
        ) from None
    except openai.APIError as error:
        raise GlyphoxaError(
            f"LLM request failed at {client.base_url}: {shorten(str(error))}"
        ) from None


_STATUS_FIXES = {
    401: "check providers.llm.api_key",
    403: "check providers.llm.api_key and the account's access to the model",
    404: "check providers.llm.model and base_url",
    429: "rate limited or out of credit; try again or raise the account's limits",
}


def completion_parts(response: Any) -> tuple[str, list[ToolCall]]:
    """A non-streamed round's answer as its text and its tool calls."""
    if not response.choices:
        return "", []
    message = response.choices[0].message
    calls = [
        ToolCall(call.id or f"call_{i}", call.function.name, call.function.arguments or "{}")
        for i, call in enumerate(message.tool_calls or ())
        if getattr(call, "function", None) is not None
    ]
    return message.content or "", calls


async def run_tool_calls(
    host: ToolHost | None, calls: list[ToolCall], request: TurnRequest
) -> TurnToolReport:
    """One round's calls in parallel through the host (whitelist and tier re-checked there);
    without a host every call is refused. A speculative turn first waits for adoption."""
    npc = request.npc
    if host is None:
        results = [
            ToolResult(c.id, c.name, f"tool {c.name!r} is not available", None, True, "refused")
            for c in calls
        ]
        return TurnToolReport(results=results, cost_ms=0.0)
    await await_confirmation(host, calls, request)
    report = await host.call_many(calls, whitelist=npc.tools, tier=request.tier, npc=npc.name)
    for result in report.results:
        log.debug(
            "%s: tool %s -> %s in %.0f ms", npc.name, result.name, result.status, result.duration_ms
        )
    return report
