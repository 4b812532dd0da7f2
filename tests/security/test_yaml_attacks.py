"""Hostile YAML: circles, amplification and unreadable scalars end as located issues, never as
a traceback or a runaway expansion."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from campaigns.yamlio import ContentError, parse_yaml

from .security_support import run_check, write_campaign

NPC_HEAD = "name: Mira\npersonality: A nervous herbalist.\n"


@pytest.mark.parametrize(
    "body",
    [
        "voice: &v {<<: *v}\n",  # the reported one: a merge key naming its own mapping
        "voice: &v\n  speed: 1.0\n  <<: [*v]\n",
        "a: &a {b: {<<: *a}}\n",  # through a child
        "knowledge_scope: &l [*l]\n",
        "a: &a {b: [x, {c: *a}]}\n",
    ],
)
def test_alias_circles_are_refused_with_their_line(tmp_path: Path, body: str) -> None:
    with pytest.raises(ContentError, match="a cycle") as raised:
        parse_yaml(NPC_HEAD + body, "mira.yaml")
    assert raised.value.issues[0].line == 3
    run = run_check(write_campaign(tmp_path / "c", {"mira.yaml": NPC_HEAD + body}))
    assert run.code == 1
    assert "mira.yaml:3:" in run.out and "a cycle" in run.out


def test_one_long_string_aliased_many_times_is_refused() -> None:
    """The reported file: 99 aliases to one 900 KB string passed and became a 90-million-
    character system prompt. The expansion budget counts characters, not only nodes."""
    text = (
        "name: Mira\npersonality: &p " + "x" * 900_000 + "\n"
        "behavior_rules: [" + ", ".join(["*p"] * 99) + "]\n"
    )
    started = time.perf_counter()
    with pytest.raises(ContentError, match="alias expansion too large"):
        parse_yaml(text, "mira.yaml")
    assert time.perf_counter() - started < 5.0  # refused while building, not after


def test_reasonable_reuse_of_anchors_still_works() -> None:
    text = (
        "name: Mira\npersonality: &p " + "x" * 10_000 + "\n"
        "secret_knowledge: [*p]\nbehavior_rules: [*p, *p]\n"
        "voice: &v {speed: 1.1}\nllm: {}\ncascade: {}\n"
    )
    doc = parse_yaml(text, "mira.yaml")
    assert doc.data["behavior_rules"] == ["x" * 10_000] * 2


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("2020-13-45", "month must be in 1..12"),  # a timestamp-shaped value that is no date
        ("1" * 5000, "cannot read this value"),  # beyond Python's int-string limit
        ("!!bool maybe", "cannot read this value"),
        ("!!float abc", "cannot read this value"),
        ("!!timestamp yesterday", "cannot read this value"),
    ],
)
def test_unreadable_scalars_are_issues_not_crashes(
    tmp_path: Path, value: str, fragment: str
) -> None:
    text = NPC_HEAD + f"greeting: {value}\n"
    with pytest.raises(ContentError, match=fragment):
        parse_yaml(text, "mira.yaml")
    run = run_check(write_campaign(tmp_path / "c", {"mira.yaml": text}))
    assert run.code == 1 and "mira.yaml:3:" in run.out


def test_very_deep_nesting_is_refused_before_the_stack_runs_out() -> None:
    for text in ("a: " + "[" * 100_000, "a: " + "{b: " * 50_000, "- " * 20_000 + "x"):
        with pytest.raises(ContentError, match="nesting deeper than 64"):
            parse_yaml(text, "deep.yaml")
