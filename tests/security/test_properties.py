"""Property-based tests (hypothesis) for every parser that takes outside input: dice, YAML,
RTP, tool arguments, web pages and config. Each says what must hold for *any* input: a
result or the parser's own clear error, never another exception."""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from bot.audio.voice.rtp import (
    RtpParseError,
    build_header,
    parse_header,
    strip_padding_and_extension,
)
from bot.frontends.discord_bot.messages import MESSAGE_LIMIT, fit_message
from bot.settings.loader import check_config
from campaigns.basics import Tier
from campaigns.yamlio import ContentError, load_model, parse_yaml
from npcs.schema import NpcDefinition
from tools.builtin import create_server
from tools.builtin.dice_engine import MAX_DICE_PER_TERM, roll_expression
from tools.builtin.html_text import html_to_text
from tools.host import ToolHost
from tools.spec import ToolContext, ToolError

from .security_support import EXAMPLE, run_check, write_campaign

FAST = settings(max_examples=300, deadline=None)
SLOW = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# -- dice ---------------------------------------------------------------------------------------

dice_terms = st.one_of(
    st.integers(0, 10_000).map(str),
    st.builds(
        lambda count, sides, explode, keep: f"{count}d{sides}{explode}{keep}",
        st.sampled_from(["", "0", "1", "3", "100", "101", "99999999999"]),
        st.sampled_from(["%", "0", "1", "2", "6", "20", "1000", "1001"]),
        st.sampled_from(["", "!"]),
        st.sampled_from(["", "kh1", "kl2", "dh", "dl100", "k0", "d5", "kh999"]),
    ),
)
dice_expressions = st.builds(
    lambda first, rest: first + "".join(rest),
    dice_terms,
    st.lists(st.tuples(st.sampled_from(["+", "-", " + ", "--"]), dice_terms).map("".join)),
)


@FAST
@given(dice_expressions)
def test_dice_grammar_rolls_or_explains(expression: str) -> None:
    try:
        result = roll_expression(expression)
    except ToolError as error:
        assert str(error)
        return
    assert result.breakdown.endswith(f"=> {result.total}")
    assert sum(len(t.dice) for t in result.terms) <= 20 * (MAX_DICE_PER_TERM + 100)
    content, attachment = fit_message(f"someone rolls `{result.expression}`: {result.breakdown}")
    assert len(content) <= MESSAGE_LIMIT
    assert (attachment is None) == (len(result.breakdown) + 30 <= MESSAGE_LIMIT) or attachment


# -- YAML and check -----------------------------------------------------------------------------

YAML_PIECES = [
    "name: Mira\n",
    "personality: p\n",
    "aliases: [a, b]\n",
    "voice:\n",
    "  speed: 1.1\n",
    "&a ",
    "*a",
    "<<: *a\n",
    "<<: [*a, *b]\n",
    "&b {x: 1}\n",
    "[",
    "]",
    "{",
    "}",
    ", ",
    ": ",
    "- ",
    "\n",
    "  ",
    "'",
    '"',
    "|\n",
    ">-\n",
    "!!python/object:os.system ",
    "!!binary ",
    "!!set ",
    "!!timestamp ",
    "!!int ",
    "!!bool ",
    "? ",
    "%YAML 1.1\n",
    "---\n",
    "...\n",
    "#",
    "\\u200b",
    "2020-13-45",
    "0x",
    "1e999",
    "9" * 50,
    ".inf",
    "~",
    "null",
    "yes",
    "<<",
    "*",
    "&",
    "\t",
    "\ufeff",
    "\x85",
    "\u2028",
    "é",
    "${X}",
    "{<<: *a}",
    "&a [*a]",
]
yaml_texts = st.lists(st.sampled_from(YAML_PIECES), max_size=40).map("".join)


@FAST
@given(yaml_texts)
def test_yaml_parses_or_reports_located_issues(text: str) -> None:
    try:
        doc = parse_yaml(text, "fuzz.yaml")
    except ContentError as error:
        assert error.issues and all(i.file == "fuzz.yaml" for i in error.issues)
        return
    assert doc.path.name == "fuzz.yaml"


@SLOW
@given(text=yaml_texts, tmp=st.just(None))
@example(text="? ---\n", tmp=None)  # an unknown key whose empty value ends the file
def test_check_never_prints_a_traceback(text: str, tmp: None) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = write_campaign(Path(folder) / "c", {"mira.yaml": text})
        (root / "tables").mkdir()
        (root / "tables" / "t.yaml").write_text(text, encoding="utf-8")
        (root / "entities.yaml").write_text(text, encoding="utf-8")
        run = run_check(root, config_text=text)  # asserts no traceback, no escaped exception
        assert run.code in (0, 1)


@SLOW
@given(
    file=st.sampled_from(sorted((EXAMPLE / "npcs").glob("*.yaml"))),
    edits=st.lists(
        st.tuples(st.floats(0, 1), st.sampled_from([*YAML_PIECES, ""]), st.integers(0, 8)),
        min_size=1,
        max_size=6,
    ),
)
def test_check_survives_mutated_example_npcs(
    file: Path, edits: list[tuple[float, str, int]]
) -> None:
    text = file.read_text(encoding="utf-8")
    for where, insert, cut in edits:
        at = int(where * len(text))
        text = text[:at] + insert + text[at + cut :]
    with tempfile.TemporaryDirectory() as folder:
        run = run_check(write_campaign(Path(folder) / "c", {file.name: text}))
        assert run.code in (0, 1)
        loaded = load_model(Path(folder) / "c" / "npcs" / file.name, NpcDefinition)
        assert loaded.ok or loaded.issues


# -- config ---------------------------------------------------------------------------------------

SECRET = "s3cr3t-T0KEN-value"


@FAST
@given(
    tail=st.lists(
        st.sampled_from(
            [
                "logging: {level: LOUD}\n",
                "metrics: {port: 0}\n",
                "discord: {guild_ids: x}\n",
                "tools: {fetch_allow_hosts: 3}\n",
                "mcp: {servers: [{name: a}]}\n",
                "x: 1\n",
                "memory: {url: ${MISSING}}\n",
                "tiers: {ceilings_ms: {fast: -1}}\n",
                "- a\n",
                "speech: {vad: {threshold: 2}}\n",
                "providers: {llm: {name: ${TOKEN}}}\n",
            ]
        ),
        max_size=5,
    )
)
def test_config_errors_never_echo_secrets(tail: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "glyphoxa.yaml"
        path.write_text("discord:\n  token: ${TOKEN}\n" + "".join(tail), encoding="utf-8")
        loaded = check_config(path, environ={"TOKEN": SECRET})
    assert all(SECRET not in str(issue) for issue in loaded.issues)
    if loaded.value is not None:
        assert SECRET not in repr(loaded.value)


# -- RTP ------------------------------------------------------------------------------------------


@FAST
@given(st.binary(max_size=120), st.one_of(st.none(), st.integers(0, 2**32 - 1)))
def test_rtp_header_parses_or_names_the_reason(data: bytes, own: int | None) -> None:
    try:
        header = parse_header(data, own)
    except RtpParseError as error:
        assert error.reason in {"short", "not_rtp", "payload_type", "own_ssrc", "bad_extension"}
        return
    assert header.aad_size + 16 + 4 <= len(data)


@FAST
@given(
    st.integers(0, 65535),
    st.integers(0, 2**32 - 1),
    st.integers(0, 2**32 - 1),
    st.lists(st.integers(0, 2**32 - 1), max_size=15),
    st.integers(0, 65535),
    st.booleans(),
    st.booleans(),
    st.binary(max_size=300),
)
def test_rtp_round_trip_and_payload_slicing(
    sequence: int,
    timestamp: int,
    ssrc: int,
    csrcs: list[int],
    words: int,
    extension: bool,
    padded: bool,
    plaintext: bytes,
) -> None:
    header_bytes = build_header(
        sequence,
        timestamp,
        ssrc,
        csrcs=tuple(csrcs),
        extension=extension,
        extension_words=words,
        padded=padded,
    )
    header = parse_header(header_bytes + bytes(20))
    assert (header.sequence, header.timestamp, header.ssrc) == (sequence, timestamp, ssrc)
    assert header.aad_size == len(header_bytes) and header.padded == padded
    try:
        payload = strip_padding_and_extension(header, plaintext)
    except RtpParseError as error:
        assert error.reason in {"bad_padding", "bad_extension"}
        return
    assert payload in plaintext and len(payload) <= len(plaintext)


# -- web pages ------------------------------------------------------------------------------------

HTML_PIECES = [
    "<p>",
    "</p>",
    "<div>",
    "<br>",
    "<li>",
    "<a href='x>y'>",
    "<b>",
    "</b>",
    "<script>",
    "</script>",
    "<style>",
    "</style>",
    "<!--",
    "-->",
    "<![CDATA[",
    "]]>",
    "<!doctype html>",
    "<?xml?>",
    "<",
    ">",
    "&amp;",
    "&#0;",
    "&#x110000;",
    "&notanentity;",
    "</",
    "<a ",
    '"',
    "'",
    "=",
    "word",
    " ",
    "\n",
    "<title>",
    "</title>",
    "<svg/>",
    "<svg>",
    "</svg>",
    "<head>",
    "<body>",
    "<textarea>",
    "</textarea>",
    "\x00",
    "é",
]


@FAST
@given(st.lists(st.sampled_from(HTML_PIECES), max_size=60).map("".join))
def test_html_to_text_never_fails_and_drops_markup(page: str) -> None:
    title, text = html_to_text(page)
    assert isinstance(title, str) and isinstance(text, str)
    assert len(text) <= len(page)
    assert "<script>" not in text.lower() or "<script>" in page.lower()


WORDS = st.text(alphabet="abcdefgh", min_size=1, max_size=6)


@st.composite
def html_trees(draw: Any, depth: int = 0) -> tuple[str, list[str]]:
    """A well-formed fragment and the words a reader should see in it, in order."""
    parts: list[str] = []
    words: list[str] = []
    for _ in range(draw(st.integers(0, 4))):
        if depth < 4 and draw(st.booleans()):
            tag = draw(st.sampled_from(["p", "div", "span", "b", "li", "script", "style"]))
            inner, inner_words = draw(html_trees(depth + 1))
            attrs = draw(st.sampled_from(["", ' class="x>y"', " data-a='1' hidden"]))
            if tag in ("script", "style"):
                inner, inner_words = " ".join(inner_words) or "x", []
            parts.append(f"<{tag}{attrs}>{inner}</{tag}>")
            words += inner_words
        else:
            word = draw(WORDS)
            parts.append(f" {word} ")
            words.append(word)
    return "".join(parts), words


@FAST
@given(html_trees())
def test_html_to_text_keeps_every_visible_word_in_order(tree: tuple[str, list[str]]) -> None:
    page, words = tree
    seen = html_to_text(f"<html><body>{page}</body></html>")[1].split()
    assert [w for w in seen if w != "-"] == words  # "-" marks list items


# -- tool arguments -------------------------------------------------------------------------------

json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False),
        st.text(max_size=40),
        st.sampled_from(["../x", "/etc/passwd", "a\x00b", "x" * 300]),
    ),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=8,
)
arguments = st.one_of(
    st.dictionaries(
        st.sampled_from(["expression", "table", "path", "content", "dir", "x", ""]), json_values
    ),
    st.text(max_size=60),  # raw text, as a model may send instead of JSON
    json_values.map(json.dumps),
)


@SLOW
@given(
    calls=st.lists(
        st.tuples(
            st.sampled_from(
                ["roll", "roll_table", "read_file", "write_file", "list_files", "nope"]
            ),
            arguments,
        ),
        min_size=1,
        max_size=8,
    )
)
def test_any_tool_arguments_come_back_as_results(calls: list[tuple[str, Any]]) -> None:
    """Whatever an LLM sends, the host answers with a result; no built-in crashes on it."""

    async def run(sandbox: Path) -> None:
        ctx = ToolContext(sandbox_dir=sandbox, campaign_dir=EXAMPLE)
        servers = [create_server("dice", ctx), create_server("files", ctx)]
        async with ToolHost(builtins=servers, autosave_s=0) as host:
            for name, args in calls:
                result = await host.call(name, args, whitelist=["*"], tier=Tier.DEEP, npc="n")
                assert result.status in {"ok", "error", "invalid", "refused"}, result
                assert "crashed" not in result.content, result

    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(run(Path(folder)))
    assume(True)


def test_pieces_are_plain_strings() -> None:
    assert all(isinstance(p, str) for p in YAML_PIECES + HTML_PIECES)
    assert re.compile("x")
