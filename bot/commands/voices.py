"""``glyphoxa voices [--provider P] [--json]``: the voices an NPC's ``voice:`` can name here.

Lists, per TTS provider, what ``glyphoxa check`` accepts and the table speaks with: Piper
voices (the bundled one and the ``.onnx`` models in ``providers.tts.options.voice_dirs``),
espeak-ng languages and variants (write ``en-us+m3``), and OpenAI's voices when
``providers.tts`` is OpenAI. A provider that cannot speak here says why and how to fix it.
"""

from __future__ import annotations

import argparse
import json
import textwrap
from typing import Any

from bot.commands._options import Subcommands, add_json_option, plain

__all__ = ["register"]

_PROVIDERS = ("piper", "espeak", "openai")


def register(sub: Subcommands) -> None:
    parser = sub.add_parser(
        "voices",
        help="list the installed voices an NPC's voice: may name, per TTS provider",
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--provider", choices=_PROVIDERS, default=None, help="only this provider's voices"
    )
    add_json_option(parser, "the voices per provider")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from bot.config_loader import load_config
    from npcs.voices import VoiceInventory

    inventory = VoiceInventory.from_tts(load_config(args.config).providers.tts)
    providers = [args.provider] if args.provider else list(_PROVIDERS)
    listing = {name: _provider(inventory, name) for name in providers}
    if args.json:
        print(json.dumps(listing, indent=2))
        return 0
    for name in providers:
        print("\n".join(_text(name, listing[name])))
    return 0


def _provider(inventory: Any, name: str) -> dict[str, Any]:
    problem = inventory.availability(name)
    voices = [] if problem else inventory.voices(name)
    entry: dict[str, Any] = {
        "available": problem is None,
        "problem": problem,
        "voices": [{"name": v.name, "detail": v.detail, "default": v.default} for v in voices],
    }
    if name == "openai":
        entry["spoken_by"] = inventory.describe_openai()
    if name == "piper" and inventory.piper_remote:
        entry["spoken_by"] = inventory.describe_openai()
    return entry


def _text(name: str, entry: dict[str, Any]) -> list[str]:
    if entry["problem"]:
        return [f"{name}: unavailable: {entry['problem']}", ""]
    voices = entry["voices"]
    if name == "espeak":
        return _espeak_text(voices)
    if not voices:
        where = entry.get("spoken_by", "")
        return [f"{name}: any voice name ({where})", ""]
    lines = [f"{name} ({len(voices)}): write  voice: {{provider: {name}, voice: NAME}}"]
    width = max(len(v["name"]) for v in voices)
    for voice in voices:
        mark = "  (default)" if voice["default"] else ""
        lines.append(f"  {voice['name'].ljust(width)}  {voice['detail']}{mark}")
    return [*lines, ""]


def _espeak_text(voices: list[dict[str, Any]]) -> list[str]:
    languages = [v for v in voices if "+" not in v["name"]]
    variants = [v["name"].partition("+")[2] for v in voices if "+" in v["name"]]
    lines = [
        f"espeak ({len(languages)} languages, {len(variants)} variants): write  "
        "voice: {provider: espeak, voice: LANGUAGE} or LANGUAGE+VARIANT (en-us+m3)"
    ]
    width = max((len(v["name"]) for v in languages), default=0)
    lines += [f"  {v['name'].ljust(width)}  {v['detail']}" for v in languages]
    lines.append("  variants:")
    lines += textwrap.wrap(
        " ".join(variants), width=96, initial_indent="    ", subsequent_indent="    "
    )
    return [*lines, ""]
