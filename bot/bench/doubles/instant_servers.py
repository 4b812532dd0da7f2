"""``python -m bot.bench.doubles.instant_servers``: the instant LLM and speech servers in a process
of their own, as remote model servers are (``glyphoxa bench tables`` measures the bot process
alone). Prints one JSON line with their base URLs, then serves until stdin closes."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from bot.bench.doubles.instant_audio import InstantAudio
from bot.bench.doubles.instant_llm import InstantLlm

__all__ = ["main"]


async def _serve(transcript: str, seconds_per_char: float) -> None:
    async with (
        InstantLlm() as llm,
        InstantAudio(transcript, seconds_per_char=seconds_per_char) as audio,
    ):
        print(json.dumps({"llm": llm.base_url, "audio": audio.base_url}), flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes our stdin


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--transcript", default="Bartok, what's on tap tonight?")
    parser.add_argument("--seconds-per-char", type=float, default=0.06)
    args = parser.parse_args(argv)
    asyncio.run(_serve(args.transcript, args.seconds_per_char))
    return 0


if __name__ == "__main__":
    sys.exit(main())
