"""Random tables for ``roll_table``: the campaign's ``tables/*.yaml`` plus three built-ins.

One table per file, loaded with ``campaigns.yamlio`` so a broken file is named with its line.

A campaign table with the same name as a built-in replaces it. Files are re-read when they change
so a DM editing a table mid-session sees the new entries on the next roll.
"""

from __future__ import annotations

import logging
import random
from pathlib import Path
from typing import Any

from campaigns.basics import GlyphoxaError
from campaigns.content import RandomTable
from campaigns.yamlio import load_model
from tools.builtin.dice_engine import roll_expression
from tools.spec import ToolError

__all__ = ["BUILTIN_TABLES_DIR", "available_tables", "load_tables", "roll_on_table"]

log = logging.getLogger(__name__)

BUILTIN_TABLES_DIR = Path(__file__).parent / "data" / "tables"

_cache: dict[Path, tuple[float, list[RandomTable]]] = {}


def _read_table_file(path: Path) -> list[RandomTable]:
    try:
        mtime = path.stat().st_mtime
    except OSError as error:
        raise ToolError(f"cannot read table file {path}: {error.strerror}") from None
    cached = _cache.get(path)
    if cached is not None and cached[0] == mtime:
        return cached[1]
    try:
        tables = [load_model(path, RandomTable).unwrap()]
    except GlyphoxaError as error:
        raise ToolError(str(error).replace("\n", "; ")) from None
    _cache[path] = (mtime, tables)
    return tables


def load_tables(campaign_dir: Path | None) -> tuple[dict[str, RandomTable], list[str]]:
    """Built-in tables overlaid with the campaign's ``tables/*.yaml`` (by table name), and the
    problems of files that could not be loaded (a broken file does not hide the others)."""
    tables: dict[str, RandomTable] = {}
    problems: list[str] = []
    folders = [BUILTIN_TABLES_DIR]
    if campaign_dir is not None:
        folders.append(Path(campaign_dir) / "tables")
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.y*ml")):
            try:
                loaded = _read_table_file(path)
            except ToolError as error:
                problems.append(str(error))
                continue
            for table in loaded:
                tables[table.name] = table
    return tables, problems


def available_tables(campaign_dir: Path | None) -> list[str]:
    return sorted(load_tables(campaign_dir)[0])


def _pick_ranged(table: RandomTable, rng: random.Random) -> tuple[int, Any]:
    dice = table.dice or "d100"
    roll = roll_expression(dice, rng).total
    for entry in table.entries:
        bounds = entry.bounds()
        assert bounds is not None
        low, high = (100 if b == 0 else b for b in bounds)
        if low <= roll <= high:
            return roll, entry
    raise ToolError(f"table {table.name!r} has no entry for a roll of {roll} on {dice}")


def roll_on_table(
    name: str, campaign_dir: Path | None, rng: random.Random | None = None
) -> dict[str, Any]:
    """Roll on the named table; an unknown name lists the available tables."""
    tables, problems = load_tables(campaign_dir)
    key = name.strip().lower().replace(" ", "_").replace("-", "_")
    table = tables.get(key)
    if table is None:
        broken = f"; some table files could not be read: {' | '.join(problems)}" if problems else ""
        raise ToolError(
            f"no table named {name!r}; available tables: {', '.join(sorted(tables))}{broken}"
        )
    source = rng if rng is not None else random.SystemRandom()
    result: dict[str, Any] = {"table": table.name}
    if table.entries[0].range is not None:
        roll, entry = _pick_ranged(table, source)
        result.update(dice=table.dice or "d100", roll=roll)
    else:
        weights = [e.weight if e.weight is not None else 1.0 for e in table.entries]
        entry = source.choices(table.entries, weights=weights, k=1)[0]
    result["result"] = entry.text
    if table.description:
        result["description"] = table.description
    return result
