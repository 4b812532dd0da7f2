"""No input tried makes a built-in tool exceed its declared maximum time or 256 MB of extra
memory: the worst inputs we know for dice, tables, rules and files, each measured in a child
process (``tool_probe.py``). fetch_page's are in ``test_web_attacks``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools.builtin.files import MAX_FILE_BYTES

from .security_support import EXAMPLE, probe_tools

WORST_DICE = [
    "+".join(["100d2!"] * 20),  # every die explodes as often as allowed
    "+".join(["100d%!"] * 20),
    "+".join(["100d1000kh99"] * 20),
    "1" * 200,  # a 200-digit constant
    "-" * 199 + "1",
    "d" * 200,
    "100d1000dl99-" * 15 + "1",
]
WORST_RULE_QUERIES = [
    '"',
    "*",
    "NEAR(a b",
    "a AND",
    "a OR " * 60,
    "(((",
    "a NOT",
    "\x00",
    "é" * 300,
    "grapple*" * 30,
    "fireball" * 37,
]


def _calls(tool: str, key: str, values: list[str]) -> list[dict[str, object]]:
    return [{"tool": tool, "label": v[:40], "args": {key: v}} for v in values]


@pytest.mark.slow
def test_dice_and_tables_worst_cases() -> None:
    calls = _calls("roll", "expression", WORST_DICE)
    calls += _calls(
        "roll_table", "table_name", ["tavern_rumors", "wild_magic", "../../etc/passwd", "x" * 64]
    )
    probe = probe_tools({"server": "dice", "campaign_dir": str(EXAMPLE), "calls": calls})
    assert len(probe.calls) == len(calls)
    probe.assert_within_limits()


@pytest.mark.slow
def test_rules_worst_queries() -> None:
    calls = _calls("search_rules", "query", WORST_RULE_QUERIES)
    calls += _calls("get_rule", "id", ['"', "../x", "*", "a" * 120])
    probe_tools({"server": "rules", "calls": calls}).assert_within_limits()


@pytest.mark.slow
def test_files_worst_cases(tmp_path: Path) -> None:
    sandbox = tmp_path / "sandbox"
    (sandbox / "crowd").mkdir(parents=True)
    for index in range(5000):  # listing shows 500 of them
        (sandbox / "crowd" / f"f{index:05}").touch()
    (sandbox / "full.txt").write_text("é" * (MAX_FILE_BYTES // 2), encoding="utf-8")
    deep = sandbox.joinpath(*["d"] * 60)
    deep.mkdir(parents=True)
    os.symlink("../" * 60 + "full.txt", deep / "far-link")
    calls = [
        {"tool": "read_file", "label": "1 MiB", "args": {"path": "full.txt"}},
        {
            "tool": "write_file",
            "label": "1 MiB",
            "args": {"path": "w/x.txt", "content": "é" * (MAX_FILE_BYTES // 2)},
        },
        {
            "tool": "write_file",
            "label": "too big",
            "args": {"path": "big.txt", "content": "x" * (MAX_FILE_BYTES + 1)},
        },
        {"tool": "list_files", "label": "5000 entries", "args": {"dir": "crowd"}},
        {
            "tool": "read_file",
            "label": "60 levels up a link",
            "args": {"path": "/".join(["d"] * 60) + "/far-link"},
        },
        {
            "tool": "write_file",
            "label": "60 new folders",
            "args": {"path": "n/" * 60 + "x", "content": "x"},
        },
    ]
    probe = probe_tools({"server": "files", "sandbox_dir": str(sandbox), "calls": calls})
    probe.assert_within_limits()
    assert [c.outcome for c in probe.calls] == ["ok", "ok", "tool_error", "ok", "ok", "ok"]
