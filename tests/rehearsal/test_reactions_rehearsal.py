"""A reaction end to end: ``glyphoxa rehearse`` on a copy of the example campaign with
``reactions: mentioned``, a player synthesized by Piper and heard by real Whisper, the real
table, engines and tools, and the scripted OpenAI-compatible LLM server deciding the words:
Bartok's answer names Greymantle, so Greymantle adds one short reaction, and his reaction
naming Bartok back starts no chain."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from scripted_config import EXAMPLE, scripted_config

from bot.bench.doubles.instant_llm import InstantLlm
from bot.cli import main

pytestmark = pytest.mark.slow

BARTOK_SAYS = "Greymantle knows the docks better than anyone in Emberford."
GREYMANTLE_SAYS = "Bartok is too kind. I merely read the harbour records. And the stars."
SCENE = """\
title: Reactions at the Rusty Flagon
campaign: campaign
players:
  Arin: {provider: piper, speed: 1.1, pitch_shift: 3}
lines:
  - {at: 1, speaker: Arin, text: "Bartok, who knows the docks?", expect_npc: Bartok}
tail_s: 30
"""


def _user_text(request: dict[str, object]) -> str:
    messages = request["messages"]
    assert isinstance(messages, list)
    return str(messages[1]["content"]) if len(messages) > 1 else ""


def test_an_npc_named_in_an_answer_reacts_in_a_rehearsal(tmp_path: Path, llm: InstantLlm) -> None:
    campaign = tmp_path / "campaign"
    shutil.copytree(EXAMPLE, campaign)
    meta = campaign / "campaign.yaml"
    meta.write_text(meta.read_text().replace("reactions: off", "reactions: mentioned"))
    scene = tmp_path / "scene.yaml"
    scene.write_text(SCENE)
    llm.answers["Bartok"] = BARTOK_SAYS
    llm.answers["Greymantle"] = GREYMANTLE_SAYS
    config = scripted_config(tmp_path, llm, campaign, speculate=False)
    out = tmp_path / "out"
    code = main(["--config", str(config), "rehearse", str(scene), "--out", str(out),
                 "--playout-speed", "8"])  # fmt: skip
    report = (out / "report.md").read_text()
    assert code == 0, report
    records = [json.loads(line) for line in (out / "transcript.jsonl").read_text().splitlines()]
    npcs = [r for r in records if r["type"] == "npc"]
    assert [(r["npc"], r["reaction_to"]) for r in npcs] == [
        ("Bartok", None),
        ("Greymantle", "Bartok"),
    ]
    bartok, reaction = npcs
    assert bartok["text"] == BARTOK_SAYS
    # Two sentences at most, FAST tier, after Bartok's answer, in Greymantle's own voice file.
    assert reaction["text"] == "Bartok is too kind. I merely read the harbour records."
    assert reaction["tier"] == "fast" and reaction["speaker"] == "Arin"
    assert reaction["t"] > bartok["t"] and not reaction["interrupted"]
    assert (out / "npc-greymantle.wav").is_file()
    # The model was asked to react to Bartok's words (once), with FAST tools only; nobody was
    # asked to react to the reaction.
    reacting = [r for r in llm.requests if r.get("stream") and "React as" in _user_text(r)]
    assert len(reacting) == 1
    (request,) = reacting
    assert "You are Greymantle" in request["messages"][0]["content"]
    assert _user_text(request).endswith(
        "Bartok just said this at the table, naming you. React as Greymantle in one short "
        f"spoken sentence: {BARTOK_SAYS}"
    )
    offered = {t["function"]["name"] for t in request.get("tools", [])}
    assert not offered & {"search_rules", "search_sessions", "web_search"}, offered
    assert "PASS" in report
    assert "Bartok: \u201cGreymantle knows the docks" in report
    assert "**Greymantle** [fast (reaction to Bartok); played;" in report
