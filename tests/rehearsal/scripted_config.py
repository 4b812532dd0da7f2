"""The configuration ``glyphoxa rehearse`` tests run with: the scripted LLM server (the
``llm`` fixture), the example campaign or a copy, files and calibration kept in the test's
folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from bot.bench.doubles.instant_llm import InstantLlm

EXAMPLE = Path(__file__).resolve().parents[2] / "campaigns" / "example"


def scripted_config(
    tmp_path: Path, llm: InstantLlm, campaign: Path = EXAMPLE, **llm_options: Any
) -> Path:
    """A glyphoxa.yaml for ``glyphoxa rehearse`` against ``llm``, files kept in ``tmp_path``."""
    provider: dict[str, Any] = {
        "name": "openai", "base_url": llm.base_url, "model": "scripted", "api_key": "scripted"
    }  # fmt: skip
    if llm_options:
        provider["options"] = llm_options
    config = tmp_path / "glyphoxa.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "providers": {"llm": provider},
                "campaign": {"path": str(campaign), "hot_reload": False},
                "tools": {
                    "sandbox_dir": str(tmp_path / "files"),
                    "calibration_path": str(tmp_path / "calibration.json"),
                },
            }
        )
    )
    return config
