"""The bundled server's chat format: the prompt it renders and the tool calls it reads from a
token stream (pure text, no model)."""

from __future__ import annotations

import json

import pytest

from npcs.inference.chatml_tools import (
    Call,
    Text,
    ToolCallStream,
    describe_tools,
    forced_call_prefix,
    render_prompt,
)

ROLL = {
    "type": "function",
    "function": {
        "name": "roll",
        "description": "Roll dice in standard notation.",
        "parameters": {
            "type": "object",
            "properties": {
                "expression": {"type": "string"},
                "mood": {"enum": ["calm", "tense"]},
                "faces": {"type": "array", "items": {"type": "integer"}},
            },
            "required": ["expression"],
        },
    },
}


def test_tools_close_the_first_system_message_and_results_come_back_named() -> None:
    messages = [
        {"role": "system", "content": "You are Bartok."},
        {"role": "user", "content": [{"type": "text", "text": "Roll for me."}]},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "roll", "arguments": '{"expression": "1d20"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "1d20 = 17"},
        {"role": "system", "content": "Be brief."},
    ]
    prompt = render_prompt(messages, [ROLL])
    system, user, assistant, tool, late, answer = prompt.split("<|im_start|>")[1:]
    assert system.startswith("system\nYou are Bartok.\n\nYou can use these tools")
    assert '- roll(expression: string, mood?: "calm"|"tense", faces?: list of integer)' in system
    assert system.endswith("<|im_end|>\n")
    assert user == "user\nRoll for me.<|im_end|>\n"
    call = assistant.removeprefix("assistant\n<tool_call>").removesuffix("</tool_call><|im_end|>\n")
    assert json.loads(call) == {"name": "roll", "arguments": {"expression": "1d20"}}
    assert tool == "user\n<tool_response>\nroll: 1d20 = 17\n</tool_response><|im_end|>\n"
    assert late == "system\nBe brief.<|im_end|>\n"  # tools only once, in the stable prefix
    assert answer == "assistant\n"


def test_the_prompt_prefix_depends_only_on_the_system_message_and_tools() -> None:
    first = render_prompt([{"role": "system", "content": "S"}, {"role": "user", "content": "a"}])
    second = render_prompt([{"role": "system", "content": "S"}, {"role": "user", "content": "b"}])
    cut = first.index("<|im_start|>user")
    assert first[:cut] == second[:cut]
    alone = render_prompt([{"role": "user", "content": "hi"}], [ROLL])
    assert alone.startswith("<|im_start|>system\nYou can use these tools")


def test_a_last_assistant_message_is_the_start_of_the_answer() -> None:
    """A prefill: the answer goes on from it (no end of turn, no new assistant turn)."""
    prompt = render_prompt(
        [{"role": "user", "content": "Hi!"}, {"role": "assistant", "content": 'Bartok: "'}]
    )
    assert prompt == '<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\nBartok: "'
    called = render_prompt(
        [
            {"role": "user", "content": "Roll."},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "function": {"name": "roll", "arguments": "{}"}}]},
        ]
    )  # fmt: skip
    assert called.endswith("</tool_call><|im_end|>\n<|im_start|>assistant\n")  # a new answer


def test_long_descriptions_are_cut() -> None:
    long = {"function": {"name": "x", "description": "word " * 100, "parameters": {}}}
    line = describe_tools([long]).splitlines()[1]
    assert line.startswith("- x(): word") and line.endswith("...") and len(line) < 200


def parse(
    pieces: list[str], offered=("roll",), **kwargs
) -> tuple[list[Text | Call], ToolCallStream]:  # type: ignore[no-untyped-def]
    stream = ToolCallStream(offered, **kwargs)
    out: list[Text | Call] = []
    for piece in pieces:
        out += stream.push(piece)
    return out + stream.finish(), stream


def test_text_streams_at_once_and_only_a_possible_marker_is_held() -> None:
    stream = ToolCallStream(["roll"])
    assert stream.push("Aye, ") == [Text("Aye, ")]
    assert stream.push("a pint <") == [Text("a pint ")]  # "<" may start <tool_call>
    assert stream.push("3 coppers.") == [Text("<3 coppers.")]
    assert stream.finish() == []


@pytest.mark.parametrize("size", [1, 3, 7, 1000])
def test_a_call_split_anywhere_across_tokens(size: int) -> None:
    text = 'Let me see. <tool_call>{"name": "roll", "arguments": {"expression": "2d6"}}</tool_call>'
    out, stream = parse([text[i : i + size] for i in range(0, len(text), size)])
    texts = "".join(p.text for p in out if isinstance(p, Text))
    assert texts == "Let me see. "
    assert [p for p in out if isinstance(p, Call)] == [Call("roll", '{"expression": "2d6"}')]
    assert stream.calls == 1


def test_several_calls_then_anything_else_ends_the_answer() -> None:
    one = '<tool_call>{"name": "roll", "arguments": {"expression": "1d4"}}</tool_call>'
    two = '<tool_call>{"name": "roll", "parameters": "{\\"expression\\": \\"1d6\\"}"}</tool_call>'
    stream = ToolCallStream(["roll"])
    out = stream.push(one + "\n" + two + "\nAnd then the model rambles")
    assert out == [Call("roll", '{"expression": "1d4"}'), Call("roll", '{"expression": "1d6"}')]
    assert stream.done and stream.push("more") == [] and stream.finish() == []


def test_unknown_tools_and_unreadable_calls_are_dropped_not_spoken() -> None:
    out, stream = parse(['<tool_call>{"name": "open_vault", "arguments": {}}</tool_call>'])
    assert out == [] and stream.dropped == 1
    out, stream = parse(["<tool_call>roll(1d20)</tool_call>"])
    assert out == [] and stream.dropped == 1


def test_an_unclosed_call_is_read_at_the_end() -> None:
    out, _ = parse(['<tool_call>{"name": "roll", "arguments": {"expression": "1d8"}}'])
    assert out == [Call("roll", '{"expression": "1d8"}')]


def test_a_required_call_starts_inside_the_call() -> None:
    out, _ = parse(['{"name": "roll", "arguments": {}}</tool_call>'], in_call=True)
    assert out == [Call("roll", "{}")]
    assert forced_call_prefix("roll") == '<tool_call>{"name": "roll", "arguments": '
