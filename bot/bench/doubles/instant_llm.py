"""An instant LLM: a local OpenAI-compatible chat-completions server (stdlib asyncio, real HTTP
and SSE) with scripted answers, for measuring the pipeline's own floor (``glyphoxa bench e2e``)
and for deterministic tests. With tools offered and no tool result yet it calls ``roll`` (an
NPC offered ``propose_memory`` but no ``roll`` proposes :data:`PROPOSED_FACT` instead);
otherwise it streams a fixed line per NPC (``answers``, which a test may change). Every request
body is recorded. Like OpenAI, it lists its one model at ``GET /v1/models`` and
reports a response's ``usage`` (the prompt's tokens counted as its JSON's length / 4, one token
per word written), in a streamed answer's last chunk when ``stream_options.include_usage``
asks for it."""

from __future__ import annotations

import json
import time
from typing import Any

from bot.bench.doubles.chat_server import ScriptedChatServer, sse_chunk

__all__ = ["ANSWERS", "DEFAULT_ANSWER", "PROPOSED_FACT", "InstantLlm"]

DEFAULT_ANSWER = "Right away, friend. Here you go."
ANSWERS = {
    "Bartok": "The dark ale is on tap tonight. It costs two copper coins.",
    "Greymantle": "The candle burns in the dark. I have read of it in old books. "
    "It is a secret society of smugglers. They meet under the old mill at night.",
}

#: What an NPC offered ``propose_memory`` (and no ``roll``) proposes, about the Black Candle.
PROPOSED_FACT = "The Black Candle meets under the old mill at night."


def _npc(body: dict[str, Any], names: Any) -> str:
    system = body["messages"][0]["content"]
    return next((name for name in names if f"You are {name}" in system), "")


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return sse_chunk(delta, finish, model="scripted")


def usage(body: dict[str, Any], written: int) -> dict[str, int]:
    """The usage reported for a request: its prompt's tokens and ``written`` tokens."""
    prompt = len(json.dumps(body.get("messages", [])) + json.dumps(body.get("tools", []))) // 4
    return {"prompt_tokens": prompt, "completion_tokens": written,
            "total_tokens": prompt + written}  # fmt: skip


def _usage_chunk(body: dict[str, Any], written: int) -> bytes:
    payload = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": "scripted",
        "choices": [],
        "usage": usage(body, written),
    }
    return f"data: {json.dumps(payload)}\n\n".encode()


class InstantLlm(ScriptedChatServer):
    """``async with InstantLlm() as llm:`` serves ``llm.base_url`` until the block ends."""

    model = "instant"
    piece_delay_s = 0.01

    def __init__(self) -> None:
        super().__init__()
        self.answers = dict(ANSWERS)
        """NPC name -> the line it streams (others get ``DEFAULT_ANSWER``)."""

    def stream(self, body: dict[str, Any]) -> list[bytes]:
        return self._answer(body)

    def stream_tail(self, body: dict[str, Any], pieces: list[bytes]) -> bytes:
        if (body.get("stream_options") or {}).get("include_usage"):
            return _usage_chunk(body, len(pieces) - 2)  # without role and finish
        return b""

    def completion(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._completion(body)

    def _answer(self, body: dict[str, Any]) -> list[bytes]:
        tools = [t["function"]["name"] for t in body.get("tools", [])]
        answered_tool = any(m["role"] == "tool" for m in body["messages"])
        out = [_chunk({"role": "assistant", "content": ""})]
        if "roll" in tools and not answered_tool:
            arguments = json.dumps({"expression": "1d20"})
            call = {"index": 0, "id": "call_roll", "type": "function",
                    "function": {"name": "roll", "arguments": arguments}}  # fmt: skip
            return [*out, _chunk({"tool_calls": [call]}), _chunk({}, "tool_calls")]
        if "propose_memory" in tools and not answered_tool:
            arguments = json.dumps({"entity": "Black Candle", "fact": PROPOSED_FACT})
            call = {"index": 0, "id": "call_propose", "type": "function",
                    "function": {"name": "propose_memory", "arguments": arguments}}  # fmt: skip
            return [*out, _chunk({"tool_calls": [call]}), _chunk({}, "tool_calls")]
        for word in self.answers.get(_npc(body, self.answers), DEFAULT_ANSWER).split(" "):
            out.append(_chunk({"content": word + " "}))
        return [*out, _chunk({}, "stop")]

    def _completion(self, body: dict[str, Any]) -> dict[str, Any]:
        """Unstreamed requests (session summaries): one plain answer."""
        return {
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": "scripted",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "The party visited the tavern."},
                    "finish_reason": "stop",
                }
            ],
            "usage": usage(body, 5),
        }
