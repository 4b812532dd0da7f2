"""``python -m npcs.inference.serve``: llama-cpp-python's OpenAI-compatible server, our chat format.

The same server as ``python -m llama_cpp.server`` (same flags), plus the ``glyphoxa-chatml``
chat handler: tool rounds stream token by token, tool calls arrive as real ``tool_calls``
deltas, and tool results are shown to the model (see :mod:`npcs.inference.chatml_tools`). Only this
subprocess imports llama.cpp; the bot talks to it over HTTP like to any cloud endpoint.

A one-token request is the bot's prompt warm-up (``prefill``): it gives way to any request
that waits, keeping what it evaluated, and then answers with no token (``finish_reason``
"length"). The server answers one request at a time, so without giving way a turn that arrived
while a warm-up of a few hundred tokens ran would wait the whole warm-up out (seconds on a
small CPU).

The server leaves with its parent: a bot or bench that is killed outright (SIGKILL, the OOM
killer) cannot stop it, and an orphan would keep the model's memory and a core's worth of
threads. It watches its parent and exits within a second of losing it.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any, cast

import llama_cpp
from llama_cpp import llama_chat_format, llama_grammar

from npcs.inference.chatml_tools import (
    CALL_OPEN,
    END_OF_TURN,
    Call,
    Text,
    ToolCallStream,
    forced_call_prefix,
    render_prompt,
)
from npcs.inference.prefix_cache import PrefixCache

__all__ = ["CHAT_FORMAT", "chat_handler", "main"]

log = logging.getLogger(__name__)

CHAT_FORMAT = "glyphoxa-chatml"
#: Our own flag (removed before llama-cpp-python parses the rest): snapshot memory, 0 = off.
PREFIX_CACHE_FLAG = "--prefix_cache_mb"

_cache: PrefixCache | None = None

#: A warm-up evaluates its prompt in steps of this many tokens and looks for a waiting request
#: between them: a turn waits at most one step, and steps this size cost little more than
#: one batch.
WARM_STEP = 16

_SAMPLING = (
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "typical_p",
    "presence_penalty",
    "frequency_penalty",
    "repeat_penalty",
    "tfs_z",
    "mirostat_mode",
    "mirostat_tau",
    "mirostat_eta",
    "logits_processor",
    "seed",
    "logit_bias",
)


def _tools_and_choice(
    tools: list[dict[str, Any]] | None,
    tool_choice: Any,
    functions: list[dict[str, Any]] | None,
    function_call: Any,
) -> tuple[list[dict[str, Any]], Any]:
    """OpenAI's legacy ``functions``/``function_call`` as tools; ``auto`` when tools are given."""
    if functions and not tools:
        tools = [{"type": "function", "function": f} for f in functions]
    if tool_choice is None and function_call is not None:
        tool_choice = (
            function_call
            if isinstance(function_call, str)
            else {"type": "function", "function": {"name": function_call.get("name")}}
        )
    tools = list(tools or ())
    if not tools or tool_choice == "none":
        return [], "none"
    return tools, tool_choice or "auto"


def _pieces(
    llama: llama_cpp.Llama,
    prompt: str,
    stream: ToolCallStream,
    settings: dict[str, Any],
) -> Iterator[Text | Call | str]:
    """Generate and split; the last item is the finish reason."""
    _prepare(llama, prompt)
    completion = cast(
        Iterator[dict[str, Any]], llama.create_completion(prompt=prompt, stream=True, **settings)
    )
    finish = "stop"
    try:
        for chunk in completion:
            choice = chunk["choices"][0]
            yield from stream.push(choice["text"])
            if stream.done:
                break
            if choice.get("finish_reason"):
                finish = str(choice["finish_reason"])
    finally:
        completion.close()  # type: ignore[attr-defined]
        if _cache is not None:
            _cache.remember(llama)
    yield from stream.finish()
    yield "tool_calls" if stream.calls else finish


def _forced_pieces(
    llama: llama_cpp.Llama,
    prompt: str,
    tool: dict[str, Any],
    settings: dict[str, Any],
) -> Iterator[Text | Call | str]:
    """A demanded call: its arguments are sampled under the tool's JSON schema grammar."""
    function = tool["function"]
    schema = json.dumps(function.get("parameters") or {"type": "object"})
    try:
        grammar = llama_grammar.LlamaGrammar.from_json_schema(schema, verbose=False)
    except Exception:  # schemas the grammar converter cannot express: any JSON object
        grammar = llama_grammar.LlamaGrammar.from_string(llama_grammar.JSON_GBNF, verbose=False)
    settings = {**settings, "grammar": grammar}
    prompt += forced_call_prefix(function["name"])
    _prepare(llama, prompt)
    completion = llama.create_completion(prompt=prompt, stream=False, **settings)
    if _cache is not None:
        _cache.remember(llama)
    text = completion["choices"][0]["text"]  # type: ignore[index]
    try:
        arguments = json.dumps(json.loads(text))
    except json.JSONDecodeError:  # cut short by max_tokens
        arguments = text
    yield Call(function["name"], arguments)
    yield "tool_calls"


def _someone_waits() -> bool:
    """Another request waits for the model (llama-cpp-python's server holds its outer lock
    while it waits for the inner one, which the running request holds)."""
    from llama_cpp.server import app

    return bool(app.llama_outer_lock.locked())


def _warm(llama: llama_cpp.Llama, prompt: str) -> bool:
    """Evaluate all of ``prompt`` but its last token (what the answer will evaluate with the
    first sample) in steps; False when it stopped early for a waiting request."""
    tokens = _prepare(llama, prompt)
    end = len(tokens) - 1
    start = llama_cpp.Llama.longest_token_prefix(llama._input_ids.tolist(), tokens)
    if start >= end:
        return True
    if start < llama.n_tokens:  # eval() drops the context's cells from here on; the logits
        llama.n_tokens = start  # it holds are no longer those of the last token it keeps
        llama._requires_eval = True
    try:
        for at in range(start, end, WARM_STEP):
            if _someone_waits():
                log.info("warm-up gave way after %d of %d tokens", at - start, end - start)
                return False
            llama.eval(tokens[at : min(end, at + WARM_STEP)])
    finally:
        if _cache is not None:
            _cache.remember(llama)
    return True


def _prepare(llama: llama_cpp.Llama, prompt: str) -> list[int]:
    """The prompt's tokens (as create_completion will evaluate them), with the KV snapshot
    that saves the most restored."""
    tokens = llama.tokenize(prompt.encode("utf-8"), special=True)
    if _cache is not None:
        _cache.prepare(llama, tokens)
    return tokens


def _chunks(pieces: Iterator[Text | Call | str], model: str) -> Iterator[dict[str, Any]]:
    """OpenAI ``chat.completion.chunk`` objects."""
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            **base,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    yield chunk({"role": "assistant", "content": ""})
    index = 0
    for piece in pieces:
        if isinstance(piece, Text):
            yield chunk({"content": piece.text})
        elif isinstance(piece, Call):
            call_id = f"call_{uuid.uuid4().hex[:20]}"
            function = {"name": piece.name, "arguments": piece.arguments}
            yield chunk(
                {
                    "tool_calls": [
                        {"index": index, "id": call_id, "type": "function", "function": function}
                    ]
                }
            )
            index += 1
        else:
            yield chunk({}, piece)


def _collect(
    chunks: Iterator[dict[str, Any]], llama: llama_cpp.Llama, prompt: str
) -> dict[str, Any]:
    """A whole ``chat.completion`` from the chunks (non-streamed requests)."""
    content: list[str] = []
    calls: list[dict[str, Any]] = []
    finish, first = "stop", None
    for chunk in chunks:
        first = first or chunk
        choice = chunk["choices"][0]
        delta = choice["delta"]
        content.append(delta.get("content") or "")
        for call in delta.get("tool_calls") or ():
            calls.append({k: v for k, v in call.items() if k != "index"})
        finish = choice["finish_reason"] or finish
    assert first is not None
    text = "".join(content)
    written = text + "".join(c["function"]["name"] + c["function"]["arguments"] for c in calls)
    prompt_tokens = len(llama.tokenize(prompt.encode(), special=True))
    completion_tokens = len(llama.tokenize(written.encode(), add_bos=False)) if written else 0
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": first["id"],
        "object": "chat.completion",
        "created": first["created"],
        "model": first["model"],
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {  # completion tokens re-counted from the text (calls: name + arguments)
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def chat_handler(
    llama: llama_cpp.Llama,
    messages: list[dict[str, Any]],
    functions: list[dict[str, Any]] | None = None,
    function_call: Any = None,
    tools: list[dict[str, Any]] | None = None,
    tool_choice: Any = None,
    stream: bool = False,
    stop: str | list[str] | None = None,
    response_format: dict[str, Any] | None = None,
    max_tokens: int | None = None,
    model: str | None = None,
    grammar: Any = None,
    **kwargs: Any,
) -> Any:
    """llama-cpp-python chat handler (its registry calls it with the request's fields)."""
    offered, choice = _tools_and_choice(tools, tool_choice, functions, function_call)
    stops = [stop] if isinstance(stop, str) else list(stop or ())
    settings: dict[str, Any] = {
        key: kwargs[key] for key in _SAMPLING if kwargs.get(key) is not None
    }
    settings.update(stop=[*stops, END_OF_TURN], max_tokens=max_tokens, grammar=grammar)
    if response_format and not offered:
        settings["grammar"] = llama_chat_format._grammar_for_response_format(
            cast(Any, response_format)
        )
    prompt = render_prompt(messages, offered)
    names = [tool["function"]["name"] for tool in offered]
    pieces: Iterator[Text | Call | str]
    if max_tokens == 1 and not _warm(llama, prompt):
        pieces = iter(["length"])  # gave way: nothing sampled
    elif isinstance(choice, dict):
        wanted = (choice.get("function") or {}).get("name")
        tool = next((t for t in offered if t["function"]["name"] == wanted), None)
        if tool is None:
            raise ValueError(f"tool_choice names {wanted!r}, which is not among the tools")
        pieces = _forced_pieces(llama, prompt, tool, settings)
    elif choice == "required":
        stream_ = ToolCallStream(names, in_call=True)
        pieces = _pieces(llama, prompt + CALL_OPEN, stream_, settings)
    else:
        pieces = _pieces(llama, prompt, ToolCallStream(names), settings)
    chunks = _chunks(pieces, model or llama.model_path)
    if stream:
        return chunks
    return _collect(chunks, llama, prompt)


_PARENT_POLL_S = 0.5


def _leave_with_parent(parent: int) -> None:
    """Exit once ``parent`` is gone (this process was handed to another parent)."""
    while os.getppid() == parent:
        time.sleep(_PARENT_POLL_S)
    logging.getLogger(__name__).warning("the bot that started this server is gone: exiting")
    os._exit(0)  # nothing to save: the prompt cache lives in memory only


def main() -> None:
    """Register the chat format, then run llama-cpp-python's own server entry point."""
    global _cache
    threading.Thread(
        target=_leave_with_parent, args=(os.getppid(),), name="parent-watch", daemon=True
    ).start()
    megabytes = 512
    if PREFIX_CACHE_FLAG in sys.argv:
        at = sys.argv.index(PREFIX_CACHE_FLAG)
        megabytes = int(sys.argv[at + 1])
        del sys.argv[at : at + 2]
    _cache = PrefixCache(capacity_bytes=megabytes << 20) if megabytes > 0 else None
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    llama_chat_format.register_chat_completion_handler(CHAT_FORMAT)(chat_handler)
    from llama_cpp.server.__main__ import main as serve

    serve()  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    main()
