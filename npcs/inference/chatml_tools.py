"""ChatML with tool calls for the bundled local model: the prompt we render and the calls we read.

llama-cpp-python's ``chatml-function-calling`` cannot stream a round that offers tools (it first
samples a grammar-constrained "message or function?" choice without streaming, then constrains
the message itself), and its template never shows tool results to the model. The bundled server
(:mod:`npcs.inference.serve`) uses this format instead: tools are described compactly at the end of
the first system message (so the stable prefix, persona plus tools, is cached per NPC), a call
is written as ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (the Hermes/Qwen
convention), results come back as ``<tool_response>`` user turns, and the answer streams token
by token while :class:`ToolCallStream` picks calls out of it.

Pure text in, text out: nothing here imports llama.cpp, so it is tested on its own.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CALL_CLOSE",
    "CALL_OPEN",
    "END_OF_TURN",
    "Call",
    "Text",
    "ToolCallStream",
    "describe_tools",
    "forced_call_prefix",
    "render_prompt",
]

log = logging.getLogger(__name__)

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
END_OF_TURN = "<|im_end|>"
_DESCRIPTION_CHARS = 160


@dataclass(frozen=True, slots=True)
class Text:
    """Answer text that may be spoken."""

    text: str


@dataclass(frozen=True, slots=True)
class Call:
    """One complete tool call; ``arguments`` is a JSON object as text (the wire format)."""

    name: str
    arguments: str


def _content(message: Mapping[str, Any]) -> str:
    """A message's text: a string, content parts (text only) or nothing."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))


def _type_of(schema: Mapping[str, Any]) -> str:
    if "enum" in schema:
        return "|".join(json.dumps(value) for value in schema["enum"])
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    if kind == "array" and isinstance(schema.get("items"), Mapping):
        return f"list of {_type_of(schema['items'])}"
    return str(kind)


def describe_tools(tools: Sequence[Mapping[str, Any]]) -> str:
    """One line per tool, ``name(arg: type, optional?: type): description``, and how to call.

    Far fewer tokens than JSON schemas (the prompt is evaluated on a CPU); arguments are
    still checked against the full schema by the tool host.
    """
    lines = ["You can use these tools when they help your answer:"]
    for tool in tools:
        function = tool.get("function", tool)
        parameters = function.get("parameters") or {}
        required = set(parameters.get("required") or ())
        arguments = ", ".join(
            f"{name}{'' if name in required else '?'}: {_type_of(schema)}"
            for name, schema in (parameters.get("properties") or {}).items()
        )
        description = " ".join(str(function.get("description") or "").split())
        if len(description) > _DESCRIPTION_CHARS:
            description = description[: _DESCRIPTION_CHARS - 3].rstrip() + "..."
        lines.append(f"- {function['name']}({arguments}): {description}".rstrip(": "))
    lines.append(
        f'To use a tool, reply with only {CALL_OPEN}{{"name": "TOOL", "arguments": {{...}}}}'
        f"{CALL_CLOSE}. Otherwise answer in your own words."
    )
    return "\n".join(lines)


def _turn(role: str, text: str) -> str:
    return f"<|im_start|>{role}\n{text}{END_OF_TURN}\n"


def render_prompt(
    messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = ()
) -> str:
    """The ChatML prompt for ``messages``, ending where the assistant's answer begins.

    Tools go at the end of the first system message (one is added when there is none), so
    everything up to the first user turn depends only on the NPC and its visible tools.
    A last assistant message without tool calls is the start of the answer (a prefill, as
    llama.cpp's own server and Anthropic's API take it): the answer continues it.
    """
    parts: list[str] = []
    names_by_id: dict[str, str] = {}
    tools_block = describe_tools(tools) if tools else ""
    if tools_block and not any(m.get("role") == "system" for m in messages):
        parts.append(_turn("system", tools_block))
        tools_block = ""
    for message in messages:
        role = str(message.get("role", "user"))
        text = _content(message)
        if role in ("system", "developer"):
            if tools_block:
                text, tools_block = f"{text}\n\n{tools_block}" if text else tools_block, ""
            parts.append(_turn("system", text))
        elif role == "assistant":
            calls = []
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                name = str(function.get("name", ""))
                names_by_id[str(call.get("id", ""))] = name
                arguments = function.get("arguments") or "{}"
                if not isinstance(arguments, str):
                    arguments = json.dumps(arguments)
                calls.append(f'{CALL_OPEN}{{"name": {json.dumps(name)}, "arguments": {arguments}}}'
                             f"{CALL_CLOSE}")  # fmt: skip
            parts.append(_turn("assistant", "\n".join([t for t in [text.strip()] if t] + calls)))
        elif role in ("tool", "function"):
            name = names_by_id.get(str(message.get("tool_call_id", "")), message.get("name", ""))
            label = f"{name}: " if name else ""
            parts.append(_turn("user", f"<tool_response>\n{label}{text}\n</tool_response>"))
        else:
            parts.append(_turn("user", text))
    last = messages[-1] if messages else {}
    if last.get("role") == "assistant" and not last.get("tool_calls"):
        parts[-1] = parts[-1].removesuffix(f"{END_OF_TURN}\n")  # the answer goes on from it
    else:
        parts.append("<|im_start|>assistant\n")
    return "".join(parts)


def forced_call_prefix(name: str) -> str:
    """What the answer starts with when the caller demands one particular tool."""
    return f'{CALL_OPEN}{{"name": {json.dumps(name)}, "arguments": '


def _holdback(text: str, marker: str) -> int:
    """Length of the longest end of ``text`` that could still grow into ``marker``."""
    for size in range(min(len(text), len(marker) - 1), 0, -1):
        if marker.startswith(text[-size:]):
            return size
    return 0


class ToolCallStream:
    """Split a streamed answer into :class:`Text` and :class:`Call` pieces as tokens arrive.

    Text streams at once (only a possible start of ``<tool_call>`` is held back). After a
    call, further calls may follow; anything else ends the answer (``done``), so generation
    can stop instead of sampling what would be thrown away. Calls to tools that were not
    offered, and calls whose JSON cannot be read, are dropped and counted in ``dropped``.

    Args:
        offered: names of the tools offered this round.
        in_call: start inside a call (the prompt already ends with ``<tool_call>``).
    """

    def __init__(self, offered: Iterable[str], *, in_call: bool = False) -> None:
        self.offered = frozenset(offered)
        self.calls = 0
        self.dropped = 0
        self.done = False
        self._mode = "call" if in_call else "text"
        self._buffer = ""

    def push(self, text: str) -> list[Text | Call]:
        """Add generated text; return the pieces that are complete now."""
        if self.done:
            return []
        self._buffer += text
        pieces: list[Text | Call] = []
        while not self.done:
            if self._mode == "text":
                start = self._buffer.find(CALL_OPEN)
                if start < 0:
                    keep = _holdback(self._buffer, CALL_OPEN)
                    ready = self._buffer[: len(self._buffer) - keep]
                    if ready:
                        pieces.append(Text(ready))
                    self._buffer = self._buffer[len(ready) :]
                    break
                if start:
                    pieces.append(Text(self._buffer[:start]))
                self._buffer, self._mode = self._buffer[start + len(CALL_OPEN) :], "call"
            elif self._mode == "call":
                end = self._buffer.find(CALL_CLOSE)
                if end < 0:
                    break
                pieces.extend(self._parse(self._buffer[:end]))
                self._buffer, self._mode = self._buffer[end + len(CALL_CLOSE) :], "after"
            else:  # after a call: another call, or the end of the answer
                rest = self._buffer.lstrip()
                if rest.startswith(CALL_OPEN):
                    self._buffer, self._mode = rest[len(CALL_OPEN) :], "call"
                elif CALL_OPEN.startswith(rest):
                    self._buffer = rest
                    break
                else:
                    self.done = True
        return pieces

    def finish(self) -> list[Text | Call]:
        """The end of generation: flush held-back text or an unclosed call."""
        if self.done:
            return []
        self.done = True
        if self._mode == "text":
            return [Text(self._buffer)] if self._buffer else []
        if self._mode == "call":
            return self._parse(self._buffer)
        return []

    def _parse(self, body: str) -> list[Text | Call]:
        payload = body.strip()
        try:
            value, _ = json.JSONDecoder().raw_decode(payload)
        except json.JSONDecodeError:
            value = None
        name = value.get("name") if isinstance(value, dict) else None
        if not isinstance(name, str) or name not in self.offered:
            self.dropped += 1
            log.info("dropped a tool call the model wrote: %s", payload[:200])
            return []
        arguments = value.get("arguments", value.get("parameters", {}))
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError:
                pass
        self.calls += 1
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        return [Call(name, text)]
