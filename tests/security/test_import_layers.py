"""The modules that read outside input import one another in one direction only: the YAML
loader (yamldoc <- yamlsafe <- yamlparse <- yamlvalidate <- yamlio) and the campaign modules
(campaign_model <- campaign_checks, campaign_watch <- campaign) used to form circles, which
hid which layer guarded what; so did llm_probe and llm_server (llm_model now holds what both
need); so did the Discord bot and its table cog (the cog now sees the bot as ``TableHost``).
Every import counts, including ``TYPE_CHECKING`` ones. The package-level contracts (layers,
Discord only in ``bot``, the product never reaching the harness room ``bot.bench``, commands as
leaves, audio (``bot.audio.speech``, ``bot.audio.voice``) reaching nothing in ``npcs``, the rooms
inside ``bot`` and ``npcs``) are written in pyproject.toml for ``lint-imports``, run here too."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _graph(packages: list[str]) -> dict[str, set[str]]:
    modules: dict[str, Path] = {}
    for package in packages:
        for path in (REPO / package).rglob("*.py"):
            name = ".".join(path.relative_to(REPO).with_suffix("").parts)
            modules[name.removesuffix(".__init__")] = path
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    found.add(full if full in modules else node.module)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


PACKAGES = ["bot", "npcs", "tools", "campaigns"]
"""The layers, top to bottom: a module imports only its own layer and the ones below."""


@pytest.mark.parametrize("prefix", [f"{p}." for p in PACKAGES])
def test_no_import_circles(prefix: str) -> None:
    circles = _circles(_graph(PACKAGES))
    assert [c for c in circles if any(m.startswith(prefix) for m in c)] == []


def test_imports_go_one_way_bot_npcs_tools_campaigns() -> None:
    layer = {package: depth for depth, package in enumerate(PACKAGES)}
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in _graph(PACKAGES).items()
        for target in targets
        if layer[target.split(".")[0]] < layer[module.split(".")[0]]
    )
    assert upward == []


def test_the_checker_finds_a_circle() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


HARNESS = "bot.bench"
"""The harness room: benchmarks and the doubles they drive (a local Discord, instant servers)."""
DOOR = "bot.bench.command"
"""``glyphoxa bench``: the harness's one door, which the CLI registers; it loads the rest of the
harness only when the command runs."""


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def test_the_product_never_imports_the_harness() -> None:
    """No module outside the harness imports it but the CLI, and the CLI only its door, so
    nothing that ``glyphoxa run``, the table runtime, ``npcs``, ``tools`` or ``campaigns`` loads
    can reach the benchmarks or the doubles (imports inside functions count too)."""
    reaching = sorted(
        f"{module} -> {target}"
        for module, targets in _graph(PACKAGES).items()
        if not _in(module, HARNESS)
        for target in targets
        if _in(target, HARNESS) and (module, target) != ("bot.cli", DOOR)
    )
    assert reaching == []


def test_the_door_loads_the_harness_only_when_run() -> None:
    """What the door imports at its top is argparse-level code (the standard library and the
    commands' options), so ``glyphoxa --help`` and ``glyphoxa run`` load no benchmark."""
    tree = ast.parse((REPO / "bot" / "bench" / "command.py").read_text(encoding="utf-8"))
    top: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module != "__future__":
            top.add(node.module)
        elif isinstance(node, ast.Import):
            top.update(alias.name for alias in node.names)
    ours = {name for name in top if name.split(".")[0] in PACKAGES}
    assert ours == {"bot.frontends.commands._options"}
    graph = _graph(PACKAGES)
    assert DOOR in graph["bot.cli"]
    assert any(_in(t, HARNESS) and t != DOOR for t in graph[DOOR])  # the check sees its imports


def test_the_import_contracts_hold() -> None:
    """The contracts in pyproject.toml (``[tool.importlinter]``): the layers, Discord only in
    ``bot``, the harness reached only through ``glyphoxa bench``, commands as leaves, speech and
    voice reaching nothing in ``npcs`` (not even through the config), and the rooms inside
    ``bot`` and ``npcs``. ``lint-imports`` prints which import breaks which contract."""
    lint = Path(sys.executable).with_name("lint-imports")
    run = subprocess.run(
        [str(lint), "--no-cache"], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]


SESSION_PARTS = [
    "bot.table.session.routing",
    "bot.table.session.reactions",
    "bot.table.session.controls",
    "bot.table.session.seats",
    "bot.table.session.npc_queue",
    "bot.table.session.early",
    "bot.table.session.parts",
    "bot.table.session.table_parts",
    "bot.table.session.voice_commands",
    "bot.table.session.follow_up",
    "bot.table.session.npc_reload",
    "bot.table.session.characters",
    "bot.table.session.status",
    "bot.table.session.bus",
    "bot.table.session.scene_log",
]
"""The parts a ``TableSession`` is built of: each is given what it uses when it is built."""


def test_the_table_sessions_parts_never_reach_back_into_the_session() -> None:
    graph = _graph(["bot"])
    assert all(part in graph for part in SESSION_PARTS)
    reaching = {part: sorted(graph[part] & {"bot.table.session.session"}) for part in SESSION_PARTS}
    assert {part: found for part, found in reaching.items() if found} == {}
    # a part asks another only through the seams: routing knows no DM controls or reactions
    concrete = {
        "bot.table.session.controls",
        "bot.table.session.reactions",
        "bot.table.session.voice_commands",
    }
    assert graph["bot.table.session.routing"] & concrete == set()
    assert graph["bot.table.session.voice_commands"] & {"bot.table.session.controls"} == set()
