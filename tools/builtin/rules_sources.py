"""Where rules entries come from: our own summary YAML and the SRD 5.1 JSON (5e-database format).

The SRD files are read from a folder the user supplies and never shipped with the project. Ids get
a category prefix (``spell:shield`` vs ``equipment:shield``) because raw ids clash across files.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

from campaigns.basics import GlyphoxaError
from tools.builtin.rules_index import RuleDoc

__all__ = ["SRD_FILES", "SUMMARY_PATH", "load_srd", "load_summary", "srd_folder_problem"]

log = logging.getLogger(__name__)

SUMMARY_PATH = Path(__file__).parent / "data" / "rules_summary.yaml"
_SRD_SOURCE = "srd5.1"


def load_summary(path: Path = SUMMARY_PATH) -> list[RuleDoc]:
    """Glyphoxa's own compact rules summary (ids ``summary:<slug>``)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    system = data.get("system", "dnd5e")
    return [
        RuleDoc(
            id=f"summary:{entry['id']}",
            name=entry["name"],
            category=entry["category"],
            text=entry["text"],
            system=system,
            source="summary",
            aliases=tuple(entry.get("aliases", ())),
        )
        for entry in data["entries"]
    ]


def _lines(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return "\n".join(str(v) for v in value)
    return str(value)


def _names(items: Any) -> str:
    return ", ".join(i["name"] for i in items or [] if isinstance(i, dict) and "name" in i)


def _condition(item: dict[str, Any]) -> str:
    return _lines(item.get("desc"))


def _rule(item: dict[str, Any]) -> str:
    text = _lines(item.get("desc")).strip("# \n")
    sections = _names(item.get("subsections"))
    return f"{text}. Sections: {sections}" if sections else text


def _spell(item: dict[str, Any]) -> str:
    level = item.get("level", 0)
    school = (item.get("school") or {}).get("name", "")
    kind = f"{school} cantrip" if level == 0 else f"Level {level} {school.lower()} spell"
    components = ", ".join(item.get("components", []))
    if item.get("material"):
        components += f" ({item['material']})"
    duration = item.get("duration", "")
    if item.get("concentration"):
        duration = f"Concentration, {duration}"
    head = (
        f"{kind}{' (ritual)' if item.get('ritual') else ''}. Casting time: "
        f"{item.get('casting_time', '')}. Range: {item.get('range', '')}. Components: "
        f"{components}. Duration: {duration}. Classes: {_names(item.get('classes'))}."
    )
    higher = _lines(item.get("higher_level"))
    return "\n".join(p for p in (head, _lines(item.get("desc")), higher) if p)


def _equipment(item: dict[str, Any]) -> str:
    parts = [(item.get("equipment_category") or {}).get("name", "Equipment")]
    if item.get("category_range"):
        parts.append(item["category_range"])
    cost = item.get("cost")
    if cost:
        parts.append(f"Cost {cost.get('quantity')} {cost.get('unit')}")
    if item.get("weight"):
        parts.append(f"Weight {item['weight']} lb")
    damage = item.get("damage")
    if damage:
        kind = (damage.get("damage_type") or {}).get("name", "")
        parts.append(f"Damage {damage.get('damage_dice')} {kind.lower()}")
    armor = item.get("armor_class")
    if armor:
        bonus = " + Dex" if armor.get("dex_bonus") else ""
        parts.append(f"AC {armor.get('base')}{bonus}")
    if item.get("properties"):
        parts.append(f"Properties: {_names(item['properties'])}")
    desc = _lines(item.get("desc"))
    return ". ".join(parts) + (f".\n{desc}" if desc else ".")


def _magic_item(item: dict[str, Any]) -> str:
    rarity = (item.get("rarity") or {}).get("name", "")
    category = (item.get("equipment_category") or {}).get("name", "")
    return f"{category}, {rarity}.\n{_lines(item.get('desc'))}"


def _monster(item: dict[str, Any]) -> str:
    ac = ", ".join(str(a.get("value")) for a in item.get("armor_class", []))
    speed = ", ".join(f"{k} {v}" for k, v in (item.get("speed") or {}).items())
    scores = " ".join(
        f"{k[:3].upper()} {item.get(k)}"
        for k in ("strength", "dexterity", "constitution", "intelligence", "wisdom", "charisma")
    )
    lines = [
        f"{item.get('size', '')} {item.get('type', '')}, {item.get('alignment', '')}. "
        f"AC {ac}. HP {item.get('hit_points')} ({item.get('hit_points_roll', '')}). "
        f"Speed {speed}. {scores}. Challenge {item.get('challenge_rating')} "
        f"({item.get('xp')} XP). Languages: {item.get('languages') or 'none'}."
    ]
    for label, key in (
        ("Resistances", "damage_resistances"),
        ("Immunities", "damage_immunities"),
        ("Vulnerabilities", "damage_vulnerabilities"),
    ):
        if item.get(key):
            lines.append(f"{label}: {', '.join(map(str, item[key]))}.")
    for section in ("special_abilities", "actions", "legendary_actions"):
        for entry in item.get(section) or []:
            lines.append(f"{entry.get('name')}: {entry.get('desc', '')}")
    return "\n".join(lines)


def _plain(item: dict[str, Any]) -> str:
    return _lines(item.get("desc"))


#: file name -> (id prefix / category, text builder)
SRD_FILES: dict[str, tuple[str, Callable[[dict[str, Any]], str]]] = {
    "5e-SRD-Conditions.json": ("condition", _condition),
    "5e-SRD-Rules.json": ("rule", _rule),
    "5e-SRD-Rule-Sections.json": ("rule-section", _plain),
    "5e-SRD-Spells.json": ("spell", _spell),
    "5e-SRD-Equipment.json": ("equipment", _equipment),
    "5e-SRD-Magic-Items.json": ("magic-item", _magic_item),
    "5e-SRD-Monsters.json": ("monster", _monster),
    "5e-SRD-Ability-Scores.json": ("ability-score", _plain),
    "5e-SRD-Skills.json": ("skill", _plain),
    "5e-SRD-Damage-Types.json": ("damage-type", _plain),
    "5e-SRD-Magic-Schools.json": ("magic-school", _plain),
}

_REQUIRED = ("5e-SRD-Conditions.json", "5e-SRD-Spells.json")


def _records(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise GlyphoxaError(f"cannot read SRD file {path}: {error}") from None
    if not isinstance(data, list):
        raise GlyphoxaError(f"{path}: expected a JSON array of records (5e-database format)")
    return [r for r in data if isinstance(r, dict) and "index" in r and "name" in r]


def srd_folder_problem(folder: str | Path) -> str | None:
    """Why ``folder`` is not an SRD 5.1 dataset :func:`load_srd` can read, or None: ``glyphoxa
    check`` asks before a session, so a wrong ``tools.srd_path`` is not met by the rules server."""
    root = Path(folder).expanduser()
    if not root.is_dir():
        return (
            f"SRD folder {root} does not exist; download the 5e-database JSON files "
            "(https://github.com/5e-bits/5e-database, src/2014/en) and pass that folder"
        )
    missing = [name for name in _REQUIRED if not (root / name).is_file()]
    if missing:
        return f"{root} does not look like the 5e-database SRD folder: missing {', '.join(missing)}"
    return None


def load_srd(folder: str | Path) -> Iterator[RuleDoc]:
    """Entries of an SRD 5.1 dataset in the 5e-database JSON format (``src/2014/en``)."""
    root = Path(folder).expanduser()
    problem = srd_folder_problem(root)
    if problem is not None:
        raise GlyphoxaError(problem)
    for file_name, (category, build) in SRD_FILES.items():
        path = root / file_name
        if not path.is_file():
            log.info("SRD file %s not found; skipping %s entries", path, category)
            continue
        for record in _records(path):
            yield RuleDoc(
                id=f"{category}:{record['index']}",
                name=str(record["name"]),
                category=category,
                text=build(record),
                system="dnd5e",
                source=_SRD_SOURCE,
                aliases=(str(record["full_name"]),) if record.get("full_name") else (),
            )
