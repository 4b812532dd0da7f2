"""Find the examples in the docs (``docs/**/*.md`` and README.md) that the tests check.

Two kinds are collected:

- every fenced ```` ```yaml ```` block, with what it claims to be. The first line may say so:
  ``# snippet: config`` (or ``npc``, ``campaign``, ``entities``, ``table``, ``scene``),
  ``# snippet: partial npc`` (a fragment, checked inside a minimal valid document of that
  kind) or ``# snippet: invalid npc`` followed by ``# error: <part of the message>`` (a mistake
  shown on purpose; it must fail with that message). Without a marker the kind is read from
  the first keys (``providers:`` is a config, ``name:`` + ``personality:`` an NPC, ...); a
  block that fits no kind fails the test, so nothing goes unchecked by accident.
- every ``glyphoxa ...`` command line in ```` ```bash ````, ```` ```console ```` and
  ```` ```sh ```` blocks (also after ``.venv/bin/``, ``$ `` or ``&&``), to be parsed by the
  real parser.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import yaml

__all__ = [
    "KINDS",
    "ROOT",
    "Command",
    "Snippet",
    "doc_files",
    "find_commands",
    "find_snippets",
]

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("config", "npc", "campaign", "entities", "table", "scene")
_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```",
                    re.M | re.S)  # fmt: skip
_MARKER = re.compile(r"^#\s*snippet:\s*(?P<mode>partial\s+|invalid\s+)?(?P<kind>\w+)\s*$")
_ERROR = re.compile(r"^#\s*error:\s*(?P<message>.+?)\s*$")
_CONFIG_KEYS = {
    "discord", "providers", "campaign", "memory", "mcp", "tools", "tiers", "dm_voice", "speech",
    "logging", "metrics", "console",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Snippet:
    """One YAML example: where it is, what it is and how it must fare."""

    file: Path
    line: int
    text: str
    kind: str | None
    mode: str
    """``full``, ``partial`` or ``invalid``."""
    error: str | None = None
    """For ``invalid``: a part of the message it must fail with."""

    @property
    def where(self) -> str:
        return f"{self.file.relative_to(ROOT)}:{self.line}"


@dataclass(frozen=True, slots=True)
class Command:
    """One ``glyphoxa`` command line from a shell block; ``args`` follow the program name."""

    file: Path
    line: int
    text: str
    args: list[str]

    @property
    def where(self) -> str:
        return f"{self.file.relative_to(ROOT)}:{self.line}"


def doc_files() -> list[Path]:
    """README.md and every page of the site (``docs/notes/``, working notes kept out of the
    site, is left out)."""
    pages = sorted((ROOT / "docs").rglob("*.md"))
    return [ROOT / "README.md", *(p for p in pages if "notes" not in p.relative_to(ROOT).parts)]


def _blocks(path: Path) -> list[tuple[str, int, str]]:
    """(language, first line of the body, body) of every fenced block, indentation removed."""
    text = path.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        indent = len(match.group("indent"))
        body = "".join(line[indent:] for line in match.group("body").splitlines(keepends=True))
        line = text.count("\n", 0, match.start("body")) + 1
        found.append((match.group("lang").lower(), line, body))
    return found


def find_snippets(path: Path) -> list[Snippet]:
    snippets = []
    for lang, line, body in _blocks(path):
        if lang not in ("yaml", "yml"):
            continue
        lines = body.splitlines()
        marker = _MARKER.match(lines[0]) if lines else None
        if marker is None:
            snippets.append(Snippet(path, line, body, _guess_kind(body), "full"))
            continue
        mode = (marker.group("mode") or "full").strip()
        error = None
        if mode == "invalid" and len(lines) > 1 and (expected := _ERROR.match(lines[1])):
            error = expected.group("message")
        snippets.append(Snippet(path, line, body, marker.group("kind"), mode, error))
    return snippets


def _guess_kind(body: str) -> str | None:
    try:
        data = yaml.safe_load(body)
    except yaml.YAMLError:
        return None
    if not isinstance(data, dict):
        return None
    keys = set(data)
    if "personality" in keys:
        return "npc"
    if "entries" in keys:
        return "table"
    if keys & {"entities", "relations"}:
        return "entities"
    if "lines" in keys:
        return "scene"
    if "system" in keys or ("name" in keys and "approval" in keys):
        return "campaign"
    if keys and keys <= _CONFIG_KEYS:
        return "config"
    return None


def find_commands(path: Path) -> list[Command]:
    commands = []
    for lang, first, body in _blocks(path):
        if lang not in ("bash", "console", "sh", "shell"):
            continue
        logical: list[tuple[int, str]] = []
        pending = ""
        for offset, raw in enumerate(body.splitlines()):
            if not pending:
                start = first + offset
            pending += raw.rstrip()
            if pending.endswith("\\"):
                pending = pending[:-1] + " "
                continue
            logical.append((start, pending))
            pending = ""
        for line, text in logical:
            stripped = text.strip().removeprefix("$ ")
            try:
                words = shlex.split(stripped, comments=True)
            except ValueError:
                continue  # not a shell line (an output line with a lone quote)
            for args in _split_on_operators(words):
                if args and Path(args[0]).name == "glyphoxa":
                    commands.append(Command(path, line, stripped, args[1:]))
    return commands


def _split_on_operators(words: list[str]) -> list[list[str]]:
    parts: list[list[str]] = [[]]
    for word in words:
        if word in ("&&", "||", ";", "|"):
            parts.append([])
        else:
            parts[-1].append(word)
    return parts
