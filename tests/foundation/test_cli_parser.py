"""The ``glyphoxa`` parser as a whole: help on every option, groups, placement, light imports."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bot.cli import build_parser, main
from bot.frontends.commands import DEFAULT_GROUP, grouped, register_modules
from bot.frontends.commands._options import TIER_NAMES, CampaignRefused, walk_parsers

from .foundation_support import REPO

HEAVY = ("numpy", "onnxruntime", "faster_whisper", "discord", "sqlalchemy", "mcp", "openai")


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]


def test_every_option_of_every_command_has_plain_help() -> None:
    parser = build_parser()
    seen = 0
    for path, child in walk_parsers(parser):
        where = " ".join(("glyphoxa", *path))
        assert "`" not in (child.description or ""), f"{where}: backticks in the description"
        for action in _options(child):
            if isinstance(action, argparse._SubParsersAction):
                for choice in action._choices_actions:
                    assert choice.help and choice.help.strip(), f"{where} {choice.dest}: no help"
                    assert "`" not in choice.help, f"{where} {choice.dest}: backticks"
                continue
            if isinstance(action, CampaignRefused):
                continue  # not an option: --campaign refused where no campaign is read
            name = "/".join(action.option_strings) or action.dest
            assert action.help and action.help.strip(), f"{where} {name}: empty help"
            assert action.help is not argparse.SUPPRESS, f"{where} {name}: hidden"
            assert "`" not in action.help, f"{where} {name}: backticks in {action.help!r}"
            seen += 1
    assert seen > 100  # the walk reached the nested commands


def test_config_and_verbose_are_accepted_after_every_command() -> None:
    for path, child in walk_parsers(build_parser()):
        if path and not any(isinstance(a, argparse._SubParsersAction) for a in child._actions):
            strings = child._option_string_actions
            assert {"-c", "--config", "-v", "--verbose"} <= set(strings), path


def test_placement_does_not_change_meaning() -> None:
    parser = build_parser()
    before = parser.parse_args(["-c", "a.yaml", "memory", "--url", "U", "sessions"])
    after = parser.parse_args(["memory", "sessions", "--url", "U", "-c", "a.yaml"])
    assert (before.config, before.url) == (after.config, after.url) == ("a.yaml", "U")
    assert parser.parse_args(["memory", "sessions"]).url is None
    first = parser.parse_args(["npc", "--campaign", "X", "show", "Mira"])
    second = parser.parse_args(["npc", "show", "Mira", "--campaign", "X"])
    assert first.campaign == second.campaign == "X"
    assert parser.parse_args(["-v", "check"]).verbose is parser.parse_args(["check", "-v"]).verbose


def test_help_lists_the_commands_in_groups_for_a_dm(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    titles = ["Getting started:", "Authoring:", "At the table and after:", "Developer:"]
    positions = [out.index(title) for title in titles]
    assert positions == sorted(positions)
    assert out.index("  doctor ") < out.index("  check ") < out.index("  run ")
    assert out.index("  campaign ") < out.index("  npc ") < out.index("  schema ")
    listed = [line.split()[0] for line in out.split("Getting started:")[1].splitlines()
              if line.startswith("  ")]  # fmt: skip
    assert listed[-1] == "bench" and len(listed) == len(set(listed)) >= 18
    assert "-c CONFIG, --config CONFIG" in out and "$GLYPHOXA_CONFIG" in out
    assert "--campaign DIR" in out


def test_a_new_command_module_gets_its_group_or_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "extra_commands"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "alpha.py").write_text(
        textwrap.dedent(
            """
            GROUP = "Authoring"

            def register(sub):
                sub.add_parser("alpha", help="a command that says where it belongs")
            """
        )
    )
    (package / "beta.py").write_text(
        'def register(sub):\n    sub.add_parser("beta", help="a command with no group")\n'
    )
    (package / "voices.py").write_text(
        'def register(sub):\n    sub.add_parser("voices", help="listed in GROUPS already")\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    sub = argparse.ArgumentParser().add_subparsers()
    entries = register_modules([str(package)], "extra_commands", sub)
    assert {e.name: e.group for e in entries} == {
        "alpha": "Authoring",
        "beta": DEFAULT_GROUP,
        "voices": "Authoring",
    }
    layout = [(title, [e.name for e in members]) for title, members in grouped(entries)]
    assert layout == [("Authoring", ["voices", "alpha"]), (DEFAULT_GROUP, ["beta"])]


def test_help_imports_no_heavy_module() -> None:
    code = textwrap.dedent(
        f"""
        import json, sys
        from bot.cli import main
        try:
            main(["--help"])
        except SystemExit:
            pass
        print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)), file=sys.stderr)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "Getting started:" in result.stdout
    assert json.loads(result.stderr.strip().splitlines()[-1]) == []


def test_vocabulary_spelled_out_for_the_parser_matches_the_models() -> None:
    from bot.frontends.commands.memory_cmd import ENTITY_TYPES
    from bot.frontends.commands.npc.new import ENGINE_NAMES
    from bot.frontends.commands.rules import RULES_DB
    from bot.frontends.commands.schema import SCHEMA_KINDS
    from bot.frontends.schemas import SCHEMA_MODELS
    from campaigns import content
    from campaigns.basics import Tier
    from npcs.schema import EngineKind
    from tools.config import BuiltinToolsConfig

    assert ENTITY_TYPES == content.ENTITY_TYPES
    assert ENGINE_NAMES == tuple(kind.value for kind in EngineKind)
    assert TIER_NAMES == tuple(tier.label for tier in Tier)
    assert RULES_DB == BuiltinToolsConfig().rules_db
    assert SCHEMA_KINDS == tuple(SCHEMA_MODELS)


def test_a_mistyped_command_or_choice_gets_a_suggestion(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for argv, suggestion in (
        (["chekc"], "did you mean 'check'?"),
        (["memory", "sesions"], "did you mean 'sessions'?"),
        (["npc", "show", "Mira", "--tier", "dep"], "did you mean 'deep'?"),
    ):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2
        assert capsys.readouterr().err.rstrip().endswith(f"; {suggestion}")
