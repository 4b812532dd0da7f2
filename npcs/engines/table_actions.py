"""Table actions: the tools a table needs every night, run before the model speaks.

A player who says "roll a d20 for me, Bartok" expects a die to roll, and one who asks the sage
"what happened at the old mill?" expects the sage to know what the campaign knows. A small
model rarely thinks of its tools, so the engine does not wait for it to: a roll asked of the NPC
(``npcs.table_intents.dice_request``) runs the dice tool with the parsed expression, and the NPC
opens its answer with the number; a question at STANDARD or DEEP searches campaign memory (and
the rules, for a rules question) first, and the best results join the prompt.

Everything goes through the tool host like a call the model made: the NPC's whitelist, the
tier's budget and the DM's approval apply, and the calls appear in the turn's tools, the
report and the console. A capable model keeps its own tool calls on top (only the dice tool is
withheld from a turn whose roll was made, so it is not rolled twice).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from textwrap import shorten
from typing import TYPE_CHECKING, Any

from campaigns.basics import Tier
from npcs.context import nothing_recalled_note, recall_note, roll_failed_note, roll_note
from npcs.engines.chat_wire import run_tool_calls
from npcs.engines.events import TurnRequest
from npcs.table_intents import (
    DiceRequest,
    asks_for_knowledge,
    dice_request,
    is_rules_question,
    knowledge_query,
)
from tools.host.types import ToolCall, ToolResult, TurnToolReport

if TYPE_CHECKING:
    from tools.host import ToolHost
    from tools.host.types import ToolInfo

__all__ = ["TableActions", "TablePlan", "plan_table_actions", "roll_line", "run_table_actions"]

log = logging.getLogger(__name__)

#: Memory searches of a knowledge question, in the order their results are shown.
_MEMORY_TOOLS = ("search_facts", "search_sessions")
_RULES_TOOL = "search_rules"
_DICE_TOOL = "roll"
#: Facts a prompt carries, and the characters of each.
_MAX_FACTS = 4
_FACT_CHARS = 220


@dataclass(frozen=True, slots=True)
class TableActions:
    """What the table did before the model spoke.

    Attributes:
        report: the calls made (None: nothing ran).
        opening: a line the NPC says first ("That's a 14."), or None.
        note: what the model is told of it (the roll, what the NPC recalls), or "".
        roll_total: the roll's total when a die was rolled.
        unsaid_note: ``note`` for a model that must say the roll's number itself (realtime).
        withheld: tools not offered to the model this turn (the dice tool after a roll).
        facts: the recalled texts (how the words benchmark judges grounding).
    """

    report: TurnToolReport | None = None
    opening: str | None = None
    note: str = ""
    roll_total: int | None = None
    unsaid_note: str = ""
    withheld: tuple[str, ...] = ()
    facts: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TablePlan:
    """The table's own calls for one turn, before they run (the engine says a filler first
    when one waits for the DM's approval)."""

    calls: tuple[ToolCall, ...] = ()
    roll: DiceRequest | None = None
    dice_tool: str | None = None


def plan_table_actions(host: ToolHost | None, request: TurnRequest) -> TablePlan:
    """What the table does for ``request`` before the model speaks: a roll asked of the NPC
    (when it may use the dice tool), else at STANDARD or DEEP a search of campaign memory (and
    the rules, for a rules question) with the words worth searching. Nothing for a reaction."""
    if host is None or not request.npc.tools or request.reacting_to:
        return TablePlan()
    visible = {info.original_name or info.name: info for info in _visible(host, request)}
    roll = dice_request(request.text, tuple(request.npc.names()))
    if roll is not None and _DICE_TOOL in visible:
        tool = visible[_DICE_TOOL].name
        call = ToolCall("table_roll", tool, {"expression": roll.expression})
        return TablePlan((call,), roll, tool)
    if request.tier < Tier.STANDARD or not asks_for_knowledge(request.text):
        return TablePlan()
    query = knowledge_query(request.text, tuple(request.npc.names()))
    if not query:
        return TablePlan()
    wanted = [*_MEMORY_TOOLS, _RULES_TOOL] if is_rules_question(request.text) else _MEMORY_TOOLS
    calls = tuple(
        ToolCall(f"table_{name}", visible[name].name, {"query": query})
        for name in wanted
        if name in visible
    )
    return TablePlan(calls)


async def run_table_actions(
    host: ToolHost | None, request: TurnRequest, plan: TablePlan | None = None
) -> TableActions:
    """Run the table's own actions for ``request`` (``plan``: as planned already); a failed
    call is the tool's own result, never the turn's end."""
    plan = plan if plan is not None else plan_table_actions(host, request)
    if host is None or not plan.calls:
        return TableActions()
    report = await run_tool_calls(host, list(plan.calls), request)
    if plan.roll is not None and plan.dice_tool is not None:
        return _rolled(request, plan.roll, plan.dice_tool, report)
    facts = _recalled(report.results, exclude=request.text)
    note = recall_note(facts) if facts else nothing_recalled_note()
    log.debug("%s: looked things up before answering (%d facts)", request.npc.name, len(facts))
    return TableActions(report=report, note=note, facts=tuple(facts))


def roll_line(roll: DiceRequest, total: int) -> str:
    """The NPC's opening line for a roll: the number first, so nobody waits for the model."""
    article = "an" if str(total).startswith(("8", "11", "18")) else "a"
    if roll.purpose and roll.purpose not in ("check", "advantage", "disadvantage"):
        return f"{total} for {roll.purpose}."
    if roll.expression == "1d20":
        return f"That's {article} {total}."
    if roll.purpose in ("advantage", "disadvantage"):
        return f"With {roll.purpose}, {article} {total}."
    return f"{total} on {roll.expression}."


def _rolled(
    request: TurnRequest, roll: DiceRequest, tool: str, report: TurnToolReport
) -> TableActions:
    result = report.results[0]
    total = _roll_total(result)
    if total is None:  # refused by the DM, or failed: the model is told why, and names no number
        why = shorten(result.model_text(), 160, placeholder="...")
        note = roll_failed_note(roll.expression, request.speaker, why)
        return TableActions(report=report, note=note, unsaid_note=note, withheld=(tool,))
    return TableActions(
        report=report,
        opening=roll_line(roll, total),
        note=roll_note(roll.expression, roll.purpose, request.speaker, total),
        unsaid_note=roll_note(roll.expression, roll.purpose, request.speaker, total, said=False),
        roll_total=total,
        withheld=(tool,),
    )


def _visible(host: ToolHost, request: TurnRequest) -> list[ToolInfo]:
    return host.visible_tools(request.npc.tools, request.tier)


def _payload(result: ToolResult) -> Any:
    if result.is_error:
        return None
    if isinstance(result.structured, dict):
        return result.structured
    try:
        return json.loads(result.content)
    except ValueError:
        return None


def _roll_total(result: ToolResult) -> int | None:
    payload = _payload(result)
    total = payload.get("total") if isinstance(payload, dict) else None
    return total if isinstance(total, int) else None


def _recalled(results: list[ToolResult], *, exclude: str) -> list[str]:
    """The best texts of the searches, best first, without repeats or the question itself."""
    facts: list[str] = []
    seen = {" ".join(exclude.lower().split())}
    for result in results:
        payload = _payload(result)
        rows = payload.get("results") if isinstance(payload, dict) else None
        for row in rows or ():
            if not isinstance(row, dict):
                continue
            text = _row_text(row)
            key = " ".join(text.lower().split())
            if not text or key in seen:
                continue
            seen.add(key)
            facts.append(text if len(text) <= _FACT_CHARS else text[: _FACT_CHARS - 1] + "…")
            if len(facts) >= _MAX_FACTS:
                return facts
    return facts


def _row_text(row: dict[str, Any]) -> str:
    """One search hit as a line: a fact or chunk's text, an utterance with its speaker, a rule
    with its name."""
    text = str(row.get("text") or row.get("snippet") or row.get("summary") or "").strip()
    if not text:
        return ""
    if row.get("snippet") and row.get("name"):
        return f"{row['name']}: {text}"
    speaker = row.get("npc") or row.get("speaker")
    if speaker and "session_id" in row and "kind" not in row:
        return f"(heard from {speaker}) {text}"
    name, colon, rest = text.partition(": ")
    if colon and row.get("kind") in ("entity", "fact") and len(name) <= 60:
        return f"{name} — {rest}"  # "Name: ..." is a label small models copy into speech
    return text
