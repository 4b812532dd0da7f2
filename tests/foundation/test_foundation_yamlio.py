"""Safe YAML loading: the defences hold and marks point at the right place."""

from __future__ import annotations

import time
import tracemalloc

import pytest

from campaigns.yamlio import MAX_ALIASES, ContentError, parse_yaml, validate_document
from npcs.schema import NpcDefinition


def _bomb(levels: int) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels):
        refs = ", ".join([f"*a{level - 1}"] * 9)
        lines.append(f"a{level}: &a{level} [{refs}]")
    return "\n".join(lines) + "\n"


def test_billion_laughs_is_refused_fast_and_small() -> None:
    tracemalloc.start()
    started = time.perf_counter()
    with pytest.raises(ContentError, match="alias bomb"):
        parse_yaml(_bomb(10), "bomb.yaml")
    elapsed = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert elapsed < 0.5
    assert peak < 20 * 1024 * 1024


def test_too_many_aliases_is_refused_before_building() -> None:
    text = "base: &b x\nitems: [" + ", ".join(["*b"] * (MAX_ALIASES + 1)) + "]\n"
    with pytest.raises(ContentError, match=f"more than {MAX_ALIASES} aliases"):
        parse_yaml(text, "many.yaml")


def test_modest_anchors_and_merge_keys_still_work() -> None:
    doc = parse_yaml(
        "voice_defaults: &v {provider: piper, speed: 1.1}\n"
        "voice:\n  <<: *v\n  speed: 0.9\n"
        "rules: &r [one, two]\nmore: *r\n"
    )
    assert doc.data["voice"] == {"provider": "piper", "speed": 0.9}
    assert doc.data["more"] == ["one", "two"]
    # a location inside a merged mapping resolves to the anchor's line
    assert doc.issue(("voice", "provider"), "x").line == 1


def test_no_object_construction_for_any_python_tag() -> None:
    for tag in ("!!python/object/apply:os.system", "!!python/name:os.system", "!custom"):
        with pytest.raises(ContentError, match="unsupported tag"):
            parse_yaml(f"a: {tag} [x]\n", "tag.yaml")


def test_deep_nesting_is_refused() -> None:
    with pytest.raises(ContentError, match="nesting"):
        parse_yaml("a: " + "[" * 200 + "]" * 200 + "\n", "deep.yaml")


def test_nul_in_text_and_bytes_is_binary() -> None:
    for content in ("name: a\x00\n", b"name: a\x00\n"):
        with pytest.raises(ContentError, match="binary data"):
            parse_yaml(content, "bin.yaml")


def test_tabs_inside_values_are_fine_but_not_in_indentation() -> None:
    assert parse_yaml("a: 'x\ty'\n").data == {"a": "x\ty"}
    with pytest.raises(ContentError) as raised:
        parse_yaml("a:\n\t- 1\n  b: 2\n\t\tc: 3\n", "t.yaml")
    assert [issue.line for issue in raised.value.issues] == [2, 4]


def test_every_duplicate_key_is_reported_with_both_lines() -> None:
    doc = parse_yaml("name: a\nname: b\nvoice:\n  speed: 1\n  speed: 2\n", "d.yaml")
    messages = [str(issue) for issue in doc.issues]
    assert messages == [
        "d.yaml:2:1: duplicate key 'name' (first defined on line 1)",
        "d.yaml:5:3: duplicate key 'speed' (first defined on line 4)",
    ]


def test_norway_problem_gets_a_hint() -> None:
    doc = parse_yaml("name: Mira\npersonality: x\naliases: [no, Mi]\n", "n.yaml")
    value, issues = validate_document(doc, NpcDefinition)
    assert value is None
    assert issues[0].line == 3
    assert "booleans in YAML" in issues[0].message


def test_bom_is_accepted() -> None:
    doc = parse_yaml("\ufeffname: Mira\npersonality: x\n".encode(), "bom.yaml")
    value, issues = validate_document(doc, NpcDefinition)
    assert issues == [] and value is not None and value.name == "Mira"
