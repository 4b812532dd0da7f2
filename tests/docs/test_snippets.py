"""Every YAML example in the docs is valid for the model it shows, and every ``glyphoxa``
command line in them parses with the real parser.

A renamed option, a removed key or a tightened limit fails here, naming the page and line,
instead of misleading a reader. YAML is checked the way the program reads it: configs through
the config loader (``${VAR}`` references count as set), campaign files through
``glyphoxa check``'s own ``run_check`` in a campaign folder of their own (cross-file rules and
tool names included), scenes through the rehearsal's scene loader.
"""

from __future__ import annotations

import argparse
import contextlib
import io
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
import yaml

from bot.cli import build_parser
from bot.frontends.checking import run_check
from bot.frontends.rehearsal.scene import load_scene
from bot.settings.loader import check_config
from campaigns.basics import GlyphoxaError

from .snippets import KINDS, Command, Snippet, doc_files, find_commands, find_snippets

SNIPPETS = [snippet for path in doc_files() for snippet in find_snippets(path)]
COMMANDS = [command for path in doc_files() for command in find_commands(path)]

#: What a fragment (``# snippet: partial KIND``) is completed with, key by key.
BASES: dict[str, dict[str, object]] = {
    "npc": {"name": "Snippet", "personality": "A character for a docs example."},
    "campaign": {"name": "Snippet campaign"},
    "table": {"name": "snippet_table", "entries": [{"text": "Nothing happens."}]},
    "scene": {"lines": [{"at": 0, "speaker": "Arin", "text": "Hello there."}]},
    "entities": {},
    "config": {},
}
#: Every ``${VAR}`` of a config example reads as this (a number, so id fields accept it too).
PLACEHOLDER = "123456789012345678"


class _EveryVariableSet(Mapping[str, str]):
    """An environment in which every variable is set: examples name secrets they cannot hold."""

    def __getitem__(self, name: str) -> str:
        return PLACEHOLDER

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def _complete(snippet: Snippet) -> str:
    """The snippet's text, a fragment completed with its kind's required keys."""
    if snippet.mode != "partial":
        return snippet.text
    data = yaml.safe_load(snippet.text) or {}
    assert isinstance(data, dict), f"{snippet.where}: a partial snippet must be a mapping"
    missing = {key: value for key, value in BASES[str(snippet.kind)].items() if key not in data}
    head = yaml.safe_dump(missing, sort_keys=False) if missing else ""
    return head + snippet.text


def _problems(snippet: Snippet, folder: Path) -> list[str]:
    """Every problem the program finds in the snippet (empty: valid)."""
    text = _complete(snippet)
    if snippet.kind == "config":
        path = folder / "glyphoxa.yaml"
        path.write_text(text, encoding="utf-8")
        return [str(issue) for issue in check_config(path, environ=_EveryVariableSet()).issues]
    if snippet.kind == "scene":
        path = folder / "scene.yaml"
        path.write_text(text, encoding="utf-8")
        try:
            load_scene(path)
        except GlyphoxaError as error:
            return [str(error)]
        return []
    campaign = folder / "campaign"
    (campaign / "npcs").mkdir(parents=True)
    (campaign / "tables").mkdir()
    target = {
        "campaign": campaign / "campaign.yaml",
        "npc": campaign / "npcs" / "snippet.yaml",
        "entities": campaign / "entities.yaml",
        "table": campaign / "tables" / "snippet.yaml",
    }[str(snippet.kind)]
    if snippet.kind != "campaign":
        (campaign / "campaign.yaml").write_text("name: Snippet campaign\n", encoding="utf-8")
    if snippet.kind != "npc":  # a campaign has at least one NPC
        base = yaml.safe_dump(BASES["npc"], sort_keys=False)
        (campaign / "npcs" / "base.yaml").write_text(base, encoding="utf-8")
    target.write_text(text, encoding="utf-8")
    config = folder / "glyphoxa.yaml"
    config.write_text("", encoding="utf-8")
    return [str(issue) for issue in run_check(campaign, config_path=config).issues]


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[s.where for s in SNIPPETS])
def test_yaml_snippet_is_what_it_says(snippet: Snippet, tmp_path: Path) -> None:
    assert snippet.kind in KINDS, (
        f"{snippet.where}: cannot tell what this YAML is; start it with '# snippet: KIND' "
        f"(one of {', '.join(KINDS)}; 'partial KIND' for a fragment, 'invalid KIND' for a "
        "mistake shown on purpose)"
    )
    problems = _problems(snippet, tmp_path)
    if snippet.mode == "invalid":
        assert snippet.error, f"{snippet.where}: an invalid snippet needs '# error: <message>'"
        assert problems, f"{snippet.where}: shown as a mistake, but the program accepts it"
        found = any(snippet.error in problem for problem in problems)
        assert found, (
            f"{snippet.where}: expected an error containing {snippet.error!r}, got: {problems}"
        )
    else:
        assert not problems, f"{snippet.where}: the program refuses this example:\n" + "\n".join(
            problems
        )


@pytest.mark.parametrize("command", COMMANDS, ids=[c.where for c in COMMANDS])
def test_command_line_parses(command: Command) -> None:
    errors = io.StringIO()
    problem = None
    with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
        try:
            build_parser().parse_args(command.args)
        except argparse.ArgumentError as error:
            problem = str(error)
        except SystemExit as stop:
            problem = errors.getvalue().strip() if stop.code else None
    if problem is None and command.args[:1] == ["bench"]:
        problem = _unknown_bench_targets(command.args)
    assert problem is None, f"{command.where}: `{command.text}`: {problem}"


def _unknown_bench_targets(args: list[str]) -> str | None:
    """``bench`` takes its targets as free words: check them against the real list."""
    from bot.bench.command import TARGETS

    targets = build_parser().parse_args(args).targets
    unknown = [target for target in targets if target not in TARGETS]
    return f"unknown bench target(s) {unknown}; known: {list(TARGETS)}" if unknown else None


def test_the_docs_have_examples_of_every_kind() -> None:
    """The extraction finds what the pages hold (a broken fence pattern would check nothing)."""
    kinds = {snippet.kind for snippet in SNIPPETS if snippet.mode == "full"}
    assert kinds >= {"config", "npc", "campaign", "entities", "table", "scene"}
    assert any(s.mode == "invalid" for s in SNIPPETS)
    readme = [c for c in COMMANDS if c.file.name == "README.md"]
    assert ["rehearse", "campaigns/example/scene.yaml", "--out", "out/"] in [c.args for c in readme]


def test_a_wrong_example_fails(tmp_path: Path) -> None:
    """The checks can fail: a config example with a misspelled key, and a renamed option."""
    bad = Snippet(Path(__file__), 1, "discrod: {}\n", "config", "full")
    assert _problems(bad, tmp_path) == [
        f"{tmp_path / 'glyphoxa.yaml'}:1:1: unknown key 'discrod'; did you mean 'discord'?"
    ]
    with contextlib.redirect_stderr(io.StringIO()), pytest.raises(SystemExit):
        build_parser().parse_args(["rehearse", "scene.yaml", "--output", "out/"])
