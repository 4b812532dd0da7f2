"""``glyphoxa console link``: a one-time login link to the DM's console of the running bot.

The bot (``glyphoxa run``, or ``glyphoxa rehearse --console``) writes its console's address and
a signing key to ``console.link_file`` (readable by you only); this command signs a fresh link
with it, so no request reaches the bot. Run it from the bot's folder with the bot's config.
Each link works once and expires after ``console.link_minutes``; in Discord, ``/console`` gives
the DM the same kind of link.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from bot.frontends.commands._options import load_config, plain

__all__ = ["GROUP", "register"]

GROUP = "At the table and after"


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "console",
        help="the DM's web console: print a one-time login link",
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    link = verbs.add_parser(
        "link",
        help="print a one-time login link to the running bot's console",
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    link.set_defaults(func=_link)


def _link(args: argparse.Namespace) -> int:
    from bot.frontends.console.links import read_link_file

    config = load_config(args)
    found = read_link_file(Path(config.console.link_file))
    print(found.login_url())
    return 0
