"""Dice: parser, limits, keep/drop, explosions, tables; in-process and over MCP stdio."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools.builtin import create_server
from tools.builtin.dice_engine import (
    MAX_EXPLOSIONS_PER_TERM,
    parse_expression,
    roll_expression,
)
from tools.builtin.tables import roll_on_table
from tools.spec import ToolContext, ToolError

from .conftest import result_text, stdio_session


def test_breakdown_shows_each_die_and_dropped_ones() -> None:
    result = roll_expression("4d6kh3+2", random.Random(7))
    term = result.terms[0]
    assert len(term.dice) == 4 and len(term.kept) == 3
    assert sum(term.dice[i] for i in term.kept) == term.subtotal
    dropped = min(term.dice)
    assert f"~{dropped}~" in result.breakdown
    assert result.total == term.subtotal + 2
    assert result.breakdown.endswith(f"=> {result.total}")


def test_disadvantage_keeps_lowest_and_percentile_die() -> None:
    result = roll_expression("2d20kl1", random.Random(1))
    assert result.total == min(result.terms[0].dice)
    for seed in range(50):
        assert 1 <= roll_expression("d%", random.Random(seed)).total <= 100


def test_exploding_die_rolls_again_on_max() -> None:
    rng = random.Random(3)
    saw_explosion = False
    for _ in range(200):
        term = roll_expression("d6!", rng).terms[0]
        chain = term.rolls[0]
        assert (all(r == 6 for r in chain[:-1]) and chain[-1] != 6) or len(chain) == 1
        saw_explosion |= len(chain) > 1
        assert term.dice[0] == sum(chain)
    assert saw_explosion


def test_explosions_are_capped() -> None:
    class AlwaysMax(random.Random):
        def randint(self, a: int, b: int) -> int:
            return b

    term = roll_expression("3d4!", AlwaysMax()).terms[0]
    assert term.explosion_capped
    assert sum(len(chain) - 1 for chain in term.rolls) == MAX_EXPLOSIONS_PER_TERM
    assert "explosions capped" in term.describe()


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("", "empty"),
        ("101d6", "at most 100 dice"),
        ("1d1001", "at most 1000 sides"),
        ("+".join(["1"] * 21), "at most 20 terms"),
        ("1" * 201, "longer than 200"),
        ("4d6kh5", "keep between 1 and 4"),
        ("4d6dl4", "drop between 0 and 3"),
        ("1d0", "at least one side"),
        ("0d6", "at least one die"),
        ("d1!", "cannot explode"),
        ("2d6++3", "two signs"),
        ("2d6 3", "missing [+] or -"),
        ("fireball", "cannot read dice term"),
        ("2d6-", "ends without a term"),
    ],
)
def test_bad_expressions_give_clear_errors(expression: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        roll_expression(expression)


@settings(max_examples=200, deadline=None)
@given(
    count=st.integers(1, 100),
    sides=st.integers(2, 1000),
    keep=st.sampled_from(["", "kh", "kl", "dh", "dl"]),
    modifier=st.integers(-50, 50),
    rng=st.randoms(use_true_random=False),
)
def test_totals_stay_within_bounds(
    count: int, sides: int, keep: str, modifier: int, rng: random.Random
) -> None:
    n = 0
    if keep in ("kh", "kl"):
        n = max(1, count // 2)
    elif keep in ("dh", "dl"):
        n = count // 2
    suffix = f"{keep}{n}" if keep else ""
    sign = "+" if modifier >= 0 else "-"
    result = roll_expression(f"{count}d{sides}{suffix}{sign}{abs(modifier)}", rng)
    counted = n if keep in ("kh", "kl") else count - n if keep else count
    term = result.terms[0]
    assert len(term.dice) == count
    assert len(term.kept) == counted
    assert counted + modifier <= result.total <= counted * sides + modifier
    assert all(1 <= d <= sides for d in term.dice)
    kept_values = sorted(term.dice[i] for i in term.kept)
    others = sorted(term.dice[i] for i in range(count) if i not in term.kept)
    if keep in ("kh", "dl") and others:
        assert min(kept_values) >= max(others)
    if keep in ("kl", "dh") and others:
        assert max(kept_values) <= min(others)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=250))
def test_arbitrary_text_never_crashes(text: str) -> None:
    try:
        result = roll_expression(text, random.Random(0))
    except ToolError:
        return
    assert isinstance(result.total, int)
    assert len(parse_expression(text)) <= 20


@settings(max_examples=100, deadline=None)
@given(count=st.integers(101, 10_000), sides=st.integers(1, 10_000))
def test_too_many_dice_always_refused(count: int, sides: int) -> None:
    with pytest.raises(ToolError):
        roll_expression(f"{count}d{sides}")


def test_campaign_tables_ranged_and_weighted(campaign_dir: Path) -> None:
    seen = {
        roll_on_table("tavern_rumours", campaign_dir, random.Random(s))["result"] for s in range(40)
    }
    assert seen == {
        "The mayor owes the thieves guild money.",
        "A dragon was seen over the old mill.",
    }
    ranged = roll_on_table("Tavern Rumours", campaign_dir, random.Random(1))
    assert ranged["dice"] == "d6" and 1 <= ranged["roll"] <= 6
    assert roll_on_table("only_one", campaign_dir)["result"] == "always this"


@pytest.mark.parametrize("name", ["wild_magic", "treasure_hoard", "random_encounter"])
def test_builtin_tables_roll(name: str) -> None:
    result = roll_on_table(name, None, random.Random(5))
    assert result["table"] == name and result["result"]


def test_unknown_table_lists_available(campaign_dir: Path) -> None:
    with pytest.raises(ToolError) as info:
        roll_on_table("loot", campaign_dir)
    message = str(info.value)
    for name in ("tavern_rumours", "only_one", "wild_magic", "treasure_hoard", "random_encounter"):
        assert name in message


def test_broken_campaign_table_names_the_file(campaign_dir: Path) -> None:
    (campaign_dir / "tables" / "bad.yaml").write_text("name: Bad Name\nentries: []\n")
    assert roll_on_table("wild_magic", campaign_dir)["table"] == "wild_magic"
    with pytest.raises(ToolError, match=r"could not be read: .*bad\.yaml:1:7: name"):
        roll_on_table("bad_name", campaign_dir)


async def test_tools_in_process(campaign_dir: Path) -> None:
    server = create_server("dice", ToolContext(campaign_dir=campaign_dir))
    tools = {t.name: t for t in server.tools}
    rolled = await tools["roll"].handler(expression="2d6+1d4+3")
    assert 6 <= rolled["total"] <= 19 and len(rolled["terms"]) == 3
    table = await tools["roll_table"].handler(table_name="tavern_rumours")
    assert table["table"] == "tavern_rumours"
    with pytest.raises(ToolError, match="missing argument"):
        await tools["roll"].handler()
    with pytest.raises(ToolError, match="expression"):
        await tools["roll"].handler(expression=42)
    with pytest.raises(ToolError, match="unexpected"):
        await tools["roll_table"].handler(table_name="x", extra=1)


async def test_tools_over_stdio(campaign_dir: Path) -> None:
    async with stdio_session("tools.builtin", "dice", "--campaign", str(campaign_dir)) as session:
        listing = {t.name: t for t in (await session.list_tools()).tools}
        assert set(listing) == {"roll", "roll_table"}
        meta = listing["roll"].meta["io.glyphoxa/latency"]
        assert meta["idempotent"] is False and meta["estimated_duration_ms"] <= 50
        assert listing["roll"].input_schema["required"] == ["expression"]
        result = await session.call_tool("roll", {"expression": "4d6kh3"})
        assert not result.is_error
        body = json.loads(result_text(result))
        assert (
            3 <= body["total"] <= 18
            and len(body["kept"] if "kept" in body else body["terms"][0]["kept"]) == 3
        )
        assert result.structured_content["total"] == body["total"]
        table = await session.call_tool("roll_table", {"table_name": "tavern_rumours"})
        assert not table.is_error and "tavern_rumours" in result_text(table)
        bad = await session.call_tool("roll", {"expression": "500d6"})
        assert bad.is_error and "at most 100 dice" in result_text(bad)
        missing = await session.call_tool("roll_table", {"table_name": "loot"})
        assert missing.is_error and "wild_magic" in result_text(missing)
        wrong = await session.call_tool("roll", {})
        assert wrong.is_error and "missing argument" in result_text(wrong)
        unknown = await session.call_tool("nope", {})
        assert unknown.is_error and "unknown tool" in result_text(unknown)


@settings(max_examples=150, deadline=None)
@given(count=st.integers(1, 100), sides=st.integers(2, 20), rng=st.randoms(use_true_random=False))
def test_exploding_totals_and_cap(count: int, sides: int, rng: random.Random) -> None:
    term = roll_expression(f"{count}d{sides}!", rng).terms[0]
    extra = sum(len(chain) - 1 for chain in term.rolls)
    assert extra <= MAX_EXPLOSIONS_PER_TERM
    assert term.subtotal >= count
    assert term.subtotal <= (count + extra) * sides
    for chain in term.rolls:
        assert all(r == sides for r in chain[:-1])
        assert chain[-1] != sides or term.explosion_capped
