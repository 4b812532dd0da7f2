"""Render the ``glyphoxa`` command line as a Markdown reference page for the docs site.

The page is built from the real parser (``bot.cli.build_parser()``), so every command, option,
default and help text on it is the one the program accepts: a renamed option fails the test
that compares the committed page with a fresh one (``scripts/docs_reference.py`` writes it
again), and the docs' snippet tests parse every example against the same parser.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

from docs_markdown import inline, table_cell

__all__ = ["render_cli_page"]


def render_cli_page(parser: argparse.ArgumentParser) -> str:
    """The CLI reference: global options, then every command and subcommand in order."""
    lines = [
        "# Command line",
        "",
        "Every `glyphoxa` command, generated from the program's own parser by "
        "`scripts/docs_reference.py` (a test fails when this page is out of date). `glyphoxa "
        "COMMAND --help` prints the same text. A mistake in what you type is answered with one "
        "line naming the option and the fix, never a traceback.",
        "",
        "## Global options",
        "",
        "These go before the command: `glyphoxa -c other.yaml check`.",
        "",
        *_options(parser),
        "",
    ]
    for path, command, help_text in _commands(parser, ("glyphoxa",)):
        lines += _command(path, command, help_text)
    return "\n".join(lines)


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser, str]]:
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
        for name, sub in action.choices.items():
            yield (*path, name), sub, helps.get(name, "")
            yield from _commands(sub, (*path, name))


def _command(path: tuple[str, ...], parser: argparse.ArgumentParser, help_text: str) -> list[str]:
    name = " ".join(path)
    level = "#" * min(len(path), 4)
    lines = [f"{level} `{name}` {{ #{_anchor(path)} }}", ""]
    if help_text:
        lines += [_sentence(help_text), ""]
    usage = parser.format_usage().removeprefix("usage: ").strip()
    lines += ["```text", " ".join(usage.split()), "```", ""]
    if parser.description and parser.description.strip() != help_text.strip():
        lines += [_description(parser.description), ""]
    options = _options(parser)
    if options:
        lines += [*options, ""]
    return lines


def _options(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        if action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            spelled = ", ".join(f"`{option}`" for option in action.option_strings)
            if action.nargs != 0:
                spelled += f" `{_metavar(action)}`"
        else:
            spelled = f"`{_metavar(action)}`"
        text = (action.help or "").replace("%(default)s", str(action.default))
        text = text.replace("%%", "%")
        default = action.default
        if action.option_strings and default not in (None, False, argparse.SUPPRESS, [], ""):
            text += f" (default: `{default}`)" if "default" not in text else ""
        if action.choices and not isinstance(action.choices, dict):
            text += " (one of: " + ", ".join(f"`{c}`" for c in action.choices) + ")"
        rows.append(f"| {spelled} | {table_cell(inline(text.strip()))} |")
    if not rows:
        return []
    return ["| argument | what it does |", "|---|---|", *rows]


def _metavar(action: argparse.Action) -> str:
    if action.metavar is not None:
        return str(action.metavar) if not isinstance(action.metavar, tuple) else action.dest
    if action.option_strings:
        return action.dest.upper()
    return action.dest


def _description(text: str) -> str:
    """A command's description (its module docstring) as Markdown paragraphs."""
    paragraphs = [inline(block) for block in re.split(r"\n\s*\n", text.strip())]
    return "\n\n".join(paragraphs)


def _sentence(text: str) -> str:
    text = inline(text)
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def _anchor(path: tuple[str, ...]) -> str:
    return "-".join(re.sub(r"[^a-z0-9]+", "-", part.lower()) for part in path).strip("-")
