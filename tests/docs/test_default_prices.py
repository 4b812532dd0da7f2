"""The models guide lists every default price as the code has it, so the page a DM checks
against their provider's pricing is the one Glyphoxa charges by."""

from __future__ import annotations

import re
from pathlib import Path

from bot.settings.spend import DEFAULT_PRICES

MODELS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "models.md"


def _row(page: str, model: str) -> list[str]:
    match = re.search(rf"^\| `{re.escape(model)}`[^|]*\|(.*)\|$", page, re.MULTILINE)
    assert match, f"docs/models.md lists no price for {model}"
    return [cell.strip().split(" ")[0] for cell in match.group(1).split("|")]


def test_every_default_price_is_documented() -> None:
    page = MODELS_PAGE.read_text(encoding="utf-8")
    for model, price in DEFAULT_PRICES.llm.items():
        assert _row(page, model) == [f"{price.input_per_million:.2f}",
                                     f"{price.output_per_million:.2f}"]  # fmt: skip
    for model, rt in DEFAULT_PRICES.realtime.items():
        assert _row(page, model) == [
            f"{rt.input_per_million:.2f}", f"{rt.output_per_million:.2f}",
            f"{rt.audio_input_per_million:.2f}", f"{rt.audio_output_per_million:.2f}",
        ]  # fmt: skip
    for model, tts in DEFAULT_PRICES.tts.items():
        assert _row(page, model) == [f"{tts.per_million_characters:.2f}"]
    for model, stt in DEFAULT_PRICES.stt.items():
        assert _row(page, model) == [f"{stt.per_minute:g}"]
    assert "August 2025" in page  # the date the defaults were read, as PRICES_AS_OF says
