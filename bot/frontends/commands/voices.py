"""``glyphoxa voices [--provider P] [--campaign DIR] [--json]``: the voices an NPC's ``voice:``
can name here, and which of the campaign's NPCs use each.

Lists, per TTS provider, what ``glyphoxa check`` accepts and the table speaks with: Piper
voices (the bundled one and the ``.onnx`` models in ``providers.tts.options.voice_dirs``),
espeak-ng languages and variants (write ``en-us+m3``), and OpenAI's voices when
``providers.tts`` is OpenAI. A provider that cannot speak here says why and how to fix it.
Each voice names the NPCs of the campaign (--campaign DIR, else campaign.path when that folder
exists) that speak with it; an NPC whose voice cannot be spoken here is listed with the reason.

--json prints {provider: {"available", "problem", "voices": [{"name", "detail", "default",
"used_by"}], "npcs": [{"npc", "voice", "problem"}], "spoken_by" (openai, remote piper)}}.
"""

from __future__ import annotations

import argparse
import json
import textwrap
from typing import Any

from bot.frontends.commands._options import (
    Subcommands,
    add_campaign_option,
    add_json_option,
    load_campaign,
    load_config,
    plain,
)

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
    add_campaign_option(parser)
    add_json_option(parser, "the voices per provider")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from campaigns.providers.voices import VoiceInventory

    config = load_config(args)
    inventory = VoiceInventory.from_tts(config.providers.tts)
    npcs: list[Any] = []
    if args.campaign or Path(config.campaign.path).is_dir():  # the configured one, if any
        npcs = list(load_campaign(args, config).npcs.values())
    providers = [args.provider] if args.provider else list(_PROVIDERS)
    listing = {name: _provider(inventory, name, npcs) for name in providers}
    if args.json:
        print(json.dumps(listing, indent=2))
        return 0
    for name in providers:
        print("\n".join(_text(name, listing[name])))
    return 0


def _provider(inventory: Any, name: str, npcs: list[Any]) -> dict[str, Any]:
    problem = inventory.availability(name)
    voices = [] if problem else inventory.voices(name)
    speakers = [npc for npc in npcs if npc.voice.provider == name]
    entry: dict[str, Any] = {
        "available": problem is None,
        "problem": problem,
        "voices": [
            {
                "name": v.name,
                "detail": v.detail,
                "default": v.default,
                "used_by": [npc.name for npc in speakers if _speaks_with(npc.voice.voice, v)],
            }
            for v in voices
        ],
        "npcs": [
            {
                "npc": npc.name,
                "voice": npc.voice.voice,
                "problem": inventory.problem(name, npc.voice.voice),
            }
            for npc in speakers
        ],
    }
    if name == "openai":
        entry["spoken_by"] = inventory.describe_openai()
    if name == "piper" and inventory.piper_remote:
        entry["spoken_by"] = inventory.describe_openai()
    return entry


def _speaks_with(wanted: str | None, voice: Any) -> bool:
    """Whether an NPC's ``voice.voice`` is this listed voice (None: the provider's default;
    a Piper path, its model file; an espeak ``language+variant``, its language)."""
    if wanted is None:
        return bool(voice.default)
    if voice.provider == "piper" and ("/" in wanted or wanted.endswith(".onnx")):
        from pathlib import Path

        return Path(wanted).expanduser().resolve() == Path(voice.detail).resolve()
    if voice.provider == "espeak":
        return bool(wanted.partition("+")[0].lower() == str(voice.name).lower())
    return bool(wanted == voice.name)


def _used_by(voice: dict[str, Any]) -> str:
    return f"  <- {', '.join(voice['used_by'])}" if voice["used_by"] else ""


def _npc_lines(entry: dict[str, Any]) -> list[str]:
    """The NPCs whose voice of this provider cannot be spoken here, or has no listed voice."""
    listed = {npc for voice in entry["voices"] for npc in voice["used_by"]}
    lines = []
    for npc in entry["npcs"]:
        if npc["problem"]:
            lines.append(f"  NPC {npc['npc']} ({npc['voice'] or 'default'}): {npc['problem']}")
        elif npc["npc"] not in listed:
            lines.append(f"  NPC {npc['npc']}: {npc['voice'] or 'the default voice'}")
    return lines


def _text(name: str, entry: dict[str, Any]) -> list[str]:
    if entry["problem"]:
        return [f"{name}: unavailable: {entry['problem']}", *_npc_lines(entry), ""]
    voices = entry["voices"]
    if name == "espeak":
        return [*_espeak_text(voices)[:-1], *_npc_lines(entry), ""]
    if not voices:
        where = entry.get("spoken_by", "")
        return [f"{name}: any voice name ({where})", *_npc_lines(entry), ""]
    lines = [f"{name} ({len(voices)}): write  voice: {{provider: {name}, voice: NAME}}"]
    width = max(len(v["name"]) for v in voices)
    for voice in voices:
        mark = "  (default)" if voice["default"] else ""
        lines.append(f"  {voice['name'].ljust(width)}  {voice['detail']}{mark}{_used_by(voice)}")
    return [*lines, *_npc_lines(entry), ""]


def _espeak_text(voices: list[dict[str, Any]]) -> list[str]:
    languages = [v for v in voices if "+" not in v["name"]]
    variants = [v["name"].partition("+")[2] for v in voices if "+" in v["name"]]
    lines = [
        f"espeak ({len(languages)} languages, {len(variants)} variants): write  "
        "voice: {provider: espeak, voice: LANGUAGE} or LANGUAGE+VARIANT (en-us+m3)"
    ]
    width = max((len(v["name"]) for v in languages), default=0)
    lines += [f"  {v['name'].ljust(width)}  {v['detail']}{_used_by(v)}" for v in languages]
    lines.append("  variants:")
    lines += textwrap.wrap(
        " ".join(variants), width=96, initial_indent="    ", subsequent_indent="    "
    )
    return [*lines, ""]
