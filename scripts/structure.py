"""Print the shape of the code: each package's rooms (sizes), their floors and who imports whom.

Run from the repository root: ``python scripts/structure.py`` (add ``--rooms`` for the
room-to-room imports inside and across packages). A room is a first-level subpackage
(``bot/audio/``) or a top-level module (``bot/cli.py``). A room's floor is one above the highest
room of its package that it imports (floor 1 imports none); rooms that import one another in a
circle have no floor, and are listed. Imports are read from the source with ``ast``, imports
inside functions and ``TYPE_CHECKING`` ones included; nothing is imported or run, so the script
works on any checkout without installing it.
"""

from __future__ import annotations

import argparse
import ast
from collections import Counter
from pathlib import Path

__all__ = ["main"]

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bot", "npcs", "tools", "campaigns")


def _room(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2])


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {n for n in names if n.split(".")[0] in PACKAGES}


def _floors(rooms: set[str], edges: set[tuple[str, str]]) -> tuple[dict[str, int], set[str]]:
    """Each room's floor, and the rooms left in (or above) a circle, which have none."""
    floors: dict[str, int] = {}
    pending = set(rooms)
    while pending:
        ready = {
            room
            for room in pending
            if all(t in floors for s, t in edges if s == room and t != room)
        }
        if not ready:
            return floors, pending
        for room in ready:
            below = [floors[t] for s, t in edges if s == room and t in floors]
            floors[room] = 1 + max(below, default=0)
        pending -= ready
    return floors, set()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rooms", action="store_true", help="also print room-to-room imports")
    args = parser.parse_args()
    modules = _modules()
    lines = {
        name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules.items()
    }
    print("package    files   lines")
    for package in PACKAGES:
        mine = [n for n in modules if n.split(".")[0] == package]
        print(f"{package:<10} {len(mine):>5} {sum(lines[n] for n in mine):>7}")
    print(f"{'total':<10} {len(modules):>5} {sum(lines.values()):>7}")
    rooms: Counter[str] = Counter()
    room_files: Counter[str] = Counter()
    for name in modules:
        rooms[_room(name)] += lines[name]
        room_files[_room(name)] += 1
    print("\nrooms (lines, files)")
    for package in PACKAGES:
        inside = sorted((r for r in rooms if r.split(".")[0] == package), key=lambda r: -rooms[r])
        print(f"  {package}: " + ", ".join(f"{r} {rooms[r]}/{room_files[r]}" for r in inside))
    packages: Counter[tuple[str, str]] = Counter()
    room_edges: Counter[tuple[str, str]] = Counter()
    for name, path in modules.items():
        for target in _imports(path):
            source_pkg, target_pkg = name.split(".")[0], target.split(".")[0]
            if source_pkg != target_pkg:
                packages[(source_pkg, target_pkg)] += 1
            if _room(name) != _room(target):
                room_edges[(_room(name), _room(target))] += 1
    print("\nfloors inside each package (rooms, top floor first)")
    for package in PACKAGES:
        mine = {r for r in rooms if r.split(".")[0] == package}
        inner = {(a, b) for a, b in room_edges if a in mine and b in mine}
        floors, stuck = _floors(mine, inner)
        top = max(floors.values(), default=0)
        by_floor = [
            f"{f}: " + " ".join(sorted(r for r in floors if floors[r] == f))
            for f in range(top, 0, -1)
        ]
        print(f"  {package}: {top} floors" + (f"; in a circle: {sorted(stuck)}" if stuck else ""))
        if args.rooms:
            print("\n".join(f"    {line}" for line in by_floor))
    print("\ncross-package imports (import statements)")
    for (source, target), count in sorted(packages.items()):
        print(f"  {source} -> {target}: {count}")
    if args.rooms:
        print("\nroom -> room imports")
        for (source, target), count in sorted(room_edges.items()):
            print(f"  {source} -> {target}: {count}")


if __name__ == "__main__":
    main()
