"""The ``ambience`` server: ``play_track(mood)``, ``stop_music()``, ``list_moods()``.

Tracks live in ``<campaign>/ambience/<mood>/*.wav|ogg|mp3|flac``. Playing hands the chosen file to
the voice runtime's ambience player (``ctx.ambience.play(path, mood)``), which mixes it under the
NPC voices, ducked while one speaks; in rehearsal the same player renders into the output WAV.
"""

from __future__ import annotations

import inspect
import logging
import random
import re
from pathlib import Path
from typing import Any

from campaigns.basics import GlyphoxaError
from tools.builtin._common import define_tool, fast, object_schema
from tools.spec import BuiltinServer, ToolContext, ToolError

__all__ = ["AUDIO_SUFFIXES", "create_server", "find_moods"]

log = logging.getLogger(__name__)

AUDIO_SUFFIXES = frozenset({".wav", ".ogg", ".mp3", ".flac"})
_MOOD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _-]{0,59}$")


def find_moods(campaign_dir: Path | None) -> dict[str, list[Path]]:
    """Mood folder name -> its audio files (moods without audio are left out)."""
    if campaign_dir is None:
        return {}
    root = Path(campaign_dir) / "ambience"
    if not root.is_dir():
        return {}
    moods: dict[str, list[Path]] = {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        tracks = sorted(
            p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in AUDIO_SUFFIXES
        )
        if tracks:
            moods[folder.name] = tracks
    return moods


async def _maybe_await(value: Any) -> None:
    if inspect.isawaitable(value):
        await value


def create_server(ctx: ToolContext, rng: random.Random | None = None) -> BuiltinServer:
    """Background music by mood; local and quick, so FAST."""
    source = rng or random.Random()

    def player() -> Any:
        if ctx.ambience is None:
            raise ToolError("no audio output attached; ambience plays only in a voice session")
        return ctx.ambience

    async def list_moods() -> dict[str, Any]:
        moods = find_moods(ctx.campaign_dir)
        return {"moods": [{"mood": m, "tracks": len(t)} for m, t in moods.items()]}

    async def play_track(mood: str) -> dict[str, Any]:
        if not _MOOD.match(mood):
            raise ToolError(f"{mood!r} is not a mood name; call list_moods to see them")
        audio = player()
        moods = find_moods(ctx.campaign_dir)
        key = next((m for m in moods if m.lower() == mood.strip().lower()), None)
        if key is None:
            available = ", ".join(moods) or "none (add folders under ambience/)"
            raise ToolError(f"no ambience mood {mood!r}; available: {available}")
        track = source.choice(moods[key])
        try:
            await _maybe_await(audio.play(track, key))
        except GlyphoxaError as error:
            raise ToolError(f"cannot play {track.name}: {error}") from None
        return {"mood": key, "track": track.name, "playing": True}

    async def stop_music() -> dict[str, Any]:
        await _maybe_await(player().stop())
        return {"playing": False}

    return BuiltinServer(
        name="ambience",
        tools=[
            define_tool(
                "play_track",
                "Play background music or ambience for a mood (e.g. tavern, battle, forest) "
                "under the voices. Replaces what is playing.",
                object_schema(
                    {"mood": {"type": "string", "minLength": 1, "maxLength": 60}}, ["mood"]
                ),
                play_track,
                fast(estimated=50, maximum=500, idempotent=False),
            ),
            define_tool(
                "stop_music",
                "Stop the background music.",
                object_schema({}),
                stop_music,
                fast(estimated=5, maximum=300, idempotent=True),
            ),
            define_tool(
                "list_moods",
                "List the ambience moods the campaign has music for.",
                object_schema({}),
                list_moods,
                fast(estimated=5, maximum=300, read_only=True, idempotent=True),
            ),
        ],
    )
