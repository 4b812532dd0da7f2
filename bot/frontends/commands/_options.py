"""Options every command shares, and how a command finds its config and campaign.

Every command reads the same two things the same way:

- the config: ``-c/--config FILE``, else ``$GLYPHOXA_CONFIG``, else ``./glyphoxa.yaml``, else
  the built-in defaults; ``-c`` (and ``-v``) may stand before or after the command's name;
- the campaign: ``--campaign DIR`` after the command's name, else ``campaign.path`` from the
  config.

Options of a command group (``memory --url``) are defined on the group and on each of its
subcommands, so ``glyphoxa memory --url U sessions`` and ``glyphoxa memory sessions --url U``
mean the same: the outermost definition holds the default and the inner ones default to
``argparse.SUPPRESS``, so an option given early is not reset by a later parser.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from bot.settings.config import GlyphoxaConfig
    from campaigns.yamlio import Issue
    from npcs.campaign import Campaign

__all__ = [
    "CAMPAIGN_HELP",
    "CONFIG_HELP",
    "TIER_NAMES",
    "CampaignRefused",
    "Subcommands",
    "add_anyway_option",
    "add_campaign_option",
    "add_global_options",
    "add_json_option",
    "campaign_folder",
    "load_campaign",
    "load_config",
    "plain",
    "share_global_options",
    "walk_parsers",
]


class Subcommands(Protocol):
    """What a command module's ``register`` receives: argparse's subparsers (or the recorder
    that notes what each module adds)."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser: ...


CONFIG_HELP = (
    "config file to read (default: $GLYPHOXA_CONFIG, else ./glyphoxa.yaml, else the built-in "
    "defaults)"
)
CAMPAIGN_HELP = "campaign folder (default: campaign.path from the config)"
VERBOSE_HELP = "debug logging"

#: Latency tiers as written on the command line (``campaigns.basics.Tier``; a test checks).
TIER_NAMES = ("fast", "standard", "deep")


_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")
_LITERAL = re.compile(r"``(.+?)``", re.S)


def plain(docstring: str | None) -> str:
    """A module docstring as a command's description: reStructuredText markup (````x````,
    ``:func:`x```) made plain text, since help is read in a terminal."""
    text = _ROLE.sub(lambda m: m.group(1).rsplit(".", 1)[-1], docstring or "")
    return _LITERAL.sub(r"\1", text).strip()


def add_global_options(parser: argparse.ArgumentParser, *, default: Any = None) -> None:
    """``-c/--config`` and ``-v/--verbose``: on the top parser (``default`` None) and, with
    ``argparse.SUPPRESS``, on every command so they may follow the command's name."""
    taken = parser._option_string_actions
    if "--config" not in taken and "-c" not in taken:
        parser.add_argument("-c", "--config", metavar="CONFIG", default=default, help=CONFIG_HELP)
    if "--verbose" not in taken and "-v" not in taken:
        verbose_default = False if default is None else default
        parser.add_argument(
            "-v", "--verbose", action="store_true", default=verbose_default, help=VERBOSE_HELP
        )


def add_campaign_option(parser: argparse.ArgumentParser, *, default: Any = None) -> None:
    """``--campaign DIR``; subcommands of a group that has it pass ``argparse.SUPPRESS``."""
    parser.add_argument("--campaign", metavar="DIR", default=default, help=CAMPAIGN_HELP)


def add_anyway_option(parser: argparse.ArgumentParser) -> None:
    """``--anyway``: start a table (``run``, ``rehearse``) although a configured model server
    cannot be reached (``bot.frontends.doctor.preflight``)."""
    parser.add_argument(
        "--anyway",
        action="store_true",
        help="go on although a configured model server cannot be reached (a campaign that "
        "fails glyphoxa check still stops it)",
    )


def add_json_option(parser: argparse.ArgumentParser, what: str = "the result") -> None:
    """``--json``: the same data as the text output, as one JSON document on stdout."""
    parser.add_argument("--json", action="store_true", help=f"print {what} as JSON")


def walk_parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every parser of the command tree with its command path (the top parser's is empty)."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from walk_parsers(child, (*path, name))


class CampaignRefused(argparse.Action):
    """``--campaign`` given to a command that works on no campaign: refused in one line that
    names the commands that take it (instead of argparse's "unrecognized arguments")."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        parser.error(str(self.help_text))

    help_text = ""


def share_global_options(parser: argparse.ArgumentParser) -> None:
    """Add ``-c/--config`` and ``-v/--verbose`` to every command below ``parser``, including
    commands added by modules that never heard of them; a command without ``--campaign``
    answers it with what it is for and which commands take it."""
    tree = list(walk_parsers(parser))
    takers = sorted(
        {path[0] for path, child in tree if path and "--campaign" in child._option_string_actions}
    )
    for path, child in tree:
        if not path:
            continue
        add_global_options(child, default=argparse.SUPPRESS)
        if "--campaign" not in child._option_string_actions:
            refusal = child.add_argument(
                "--campaign", metavar="DIR", action=CampaignRefused, help=argparse.SUPPRESS
            )
            refusal.help_text = (  # type: ignore[attr-defined]
                f"--campaign: 'glyphoxa {' '.join(path)}' works on no campaign; the commands "
                f"that do take --campaign DIR: {', '.join(takers)}"
            )


def load_config(args: argparse.Namespace) -> GlyphoxaConfig:
    """The config the command was given, with ``--campaign`` (when given) as its campaign.

    Raises:
        GlyphoxaError: the config file is missing or invalid (every problem, file:line).
    """
    from bot.settings.loader import load_config as load

    config = load(getattr(args, "config", None))
    campaign = getattr(args, "campaign", None)
    if campaign:
        config.campaign.path = str(campaign)
    return config


def campaign_folder(args: argparse.Namespace, config: GlyphoxaConfig) -> Path:
    """The campaign folder the command works on; a missing one is an error naming the fix.

    Raises:
        GlyphoxaError: the folder does not exist.
    """
    from bot.frontends.checking import missing_campaign_message
    from campaigns.basics import GlyphoxaError

    folder = Path(config.campaign.path)
    if folder.is_dir():
        return folder
    named = bool(getattr(args, "campaign", None))
    message = missing_campaign_message(folder, named=named, config=getattr(args, "config", None))
    raise GlyphoxaError(message)


def load_campaign(
    args: argparse.Namespace, config: GlyphoxaConfig, *, warnings: list[Issue] | None = None
) -> Campaign:
    """The command's campaign, loaded; every problem of its files raised at once, and its
    warnings (YAML that reads legally but probably not as meant, such as a sentence a flow
    list split at its commas) printed on stderr as ``glyphoxa check`` prints them, so no
    command shows their pieces silently. ``warnings``, when given, receives them too.

    Raises:
        GlyphoxaError: the folder is missing (with the fix) or a file is invalid.
    """
    import sys

    from campaigns.yamlio import ContentError
    from npcs.campaign import scan_campaign

    scan = scan_campaign(campaign_folder(args, config))
    if scan.issues:
        raise ContentError(scan.issues)
    for warning in scan.warnings:
        print(warning, file=sys.stderr)
    if warnings is not None:
        warnings.extend(scan.warnings)
    return scan.campaign
