"""A capable model, scripted: a local OpenAI-compatible chat-completions server (stdlib asyncio,
real HTTP and SSE) that calls the tools a table needs when they are offered and speaks from
their results, as a strong cloud or local model does.

``glyphoxa bench words`` runs its corpus against it beside the embedded model, so the table's
guarantees (rolls, retrieval, clean and bounded speech) are measured on a model that uses tools
properly too, and a capable model's own calls are shown to keep working with table actions.
What it answers:

- offered a dice tool and asked to roll ("roll a d20"): it calls the tool; offered a search
  tool and asked a question: it searches with the question's words;
- given tool results: one sentence from the first result (the roll's total, a fact's text);
- told what the NPC recalls (the table searched first): one sentence from the first fact;
- told a roll was made: one short reaction;
- otherwise one short line of its own, in the NPC's name.

Every request body is recorded.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from bot.bench.doubles.chat_server import ScriptedChatServer, sse_chunk

__all__ = ["CapableLlm"]

_ASKED = re.compile(r"says to you:\s*(?P<line>.*)$", re.DOTALL)
_DICE = re.compile(r"\b\d*d\d+(?:[+-]\d+)?\b", re.IGNORECASE)
_RECALL = re.compile(r"What you recall about this[^\n]*\n- (?P<fact>[^\n]+)")
_SEARCHES = ("search_facts", "search_rules", "search_sessions")
_STOP = frozenset(
    "a an and the of to in on at for is are was were what who where when how do does did you "
    "your me my tell about know remember recall please".split()
)


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return sse_chunk(delta, finish, model="capable")


class CapableLlm(ScriptedChatServer):
    """``async with CapableLlm() as llm:`` serves ``llm.base_url`` until the block ends."""

    model = "capable"

    def stream(self, body: dict[str, Any]) -> list[bytes]:
        return self.answer(body)

    def completion(self, body: dict[str, Any]) -> dict[str, Any]:
        return _completion(self.answer(body))

    def answer(self, body: dict[str, Any]) -> list[bytes]:
        """The streamed chunks answering ``body``."""
        messages = body.get("messages", [])
        offered = [t["function"]["name"] for t in body.get("tools", [])]
        results = [m for m in messages if m.get("role") == "tool"]
        prompt = str(messages[-1].get("content") or "") if messages else ""
        line = _player_line(messages)
        start = [_chunk({"role": "assistant", "content": ""})]
        if not results:
            call = _tool_for(line, offered)
            if call is not None:
                function = {"name": call[0], "arguments": json.dumps(call[1])}
                delta = {"index": 0, "id": "call_capable", "type": "function", "function": function}
                return [*start, _chunk({"tool_calls": [delta]}), _chunk({}, "tool_calls")]
        text = _words_for(prompt, results)
        words = [_chunk({"content": word + " "}) for word in text.split(" ")]
        return [*start, *words, _chunk({}, "stop")]


def _player_line(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            found = _ASKED.search(str(message.get("content") or ""))
            return found.group("line").strip() if found else ""
    return ""


def _tool_for(line: str, offered: list[str]) -> tuple[str, dict[str, Any]] | None:
    lowered = line.lower()
    if "roll" in offered and re.search(r"\broll\b", lowered) and "don't" not in lowered:
        dice = _DICE.search(line)
        return "roll", {"expression": dice.group(0) if dice else "1d20"}
    search = next((name for name in _SEARCHES if name in offered), None)
    if search is not None and "?" in line:
        words = [w for w in re.findall(r"[a-z]+", lowered) if w not in _STOP and len(w) > 2]
        if words:
            return search, {"query": " ".join(words[-4:])}
    return None


def _words_for(prompt: str, results: list[dict[str, Any]]) -> str:
    if results:
        return _from_result(str(results[-1].get("content") or ""))
    recalled = _RECALL.search(prompt)
    if recalled is not None:
        fact = recalled.group("fact").split(" — ", 1)[-1].rstrip(".")
        return f"From what I recall, {fact[:1].lower()}{fact[1:]}."
    if "You just rolled" in prompt:
        return "Not bad at all, friend."
    return "Aye, I can help with that. Ask away."


def _from_result(content: str) -> str:
    try:
        payload = json.loads(content)
    except ValueError:
        return "I found nothing worth telling."
    if isinstance(payload, dict) and isinstance(payload.get("total"), int):
        return f"You rolled {payload['total']}."
    rows = payload.get("results") if isinstance(payload, dict) else None
    for row in rows or ():
        text = str(row.get("text") or row.get("snippet") or "").strip()
        if text:
            fact = text.split(": ", 1)[-1].rstrip(".")
            return f"I have read that {fact[:1].lower()}{fact[1:]}."
    return "I found nothing about that."


def _completion(pieces: list[bytes]) -> dict[str, Any]:
    """An unstreamed answer built from the streamed one (its text and tool calls)."""
    content = ""
    calls: list[dict[str, Any]] = []
    for piece in pieces:
        delta = json.loads(piece.decode()[len("data: ") :])["choices"][0]["delta"]
        content += delta.get("content") or ""
        calls += delta.get("tool_calls") or []
    message: dict[str, Any] = {"role": "assistant", "content": content.strip()}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": "chatcmpl-capable",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "capable",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }
