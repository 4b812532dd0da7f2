"""What an NPC says and does, through the real pipeline: ``glyphoxa rehearse`` with real Whisper,
Piper, espeak-ng, tools and campaign memory, and a scripted OpenAI-compatible server whose
answers carry what small models write (labels, emoji, echoes, "as an AI", a long lecture).

The table rolls the die a player asks for and the NPC says the number; a lore question at DEEP
searches memory before the model; a long answer is cut at its budget on a sentence; labels and
emoji are repaired; "as an AI" is asked again, then replaced by the NPC's fallback line; a line
only about an NPC gets no answer (``expect_npc: nobody``)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from scripted_config import EXAMPLE, scripted_config

from bot.bench.doubles.instant_llm import InstantLlm
from bot.cli import main

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng missing"),
]

LECTURE = (
    "The old mill grinds at night, they say. Its wheel turns though the river is low. "
    "The Black Candle meets beneath it every new moon. I have read of such mills in old books. "
    "My footnotes on the matter run to forty pages."
)


LINES = [
    {"at": 0.5, "speaker": "Arin", "text": "Bartok, roll a d20 for me.", "expect_npc": "Bartok",
     "expect_tools": ["roll"]},
    {"at": 2, "speaker": "Tobble", "text": "Greymantle, what happened at the old mill?",
     "expect_npc": "Greymantle", "expect_tools": ["search_facts"]},
    {"at": 3, "speaker": "Arin", "text": "Let's ask Bartok about it tomorrow.",
     "expect_npc": "nobody"},
    {"at": 4, "speaker": "Arin", "text": "Captain Vessa, any news from the docks?",
     "expect_npc": "Captain Vessa"},
]  # fmt: skip


def _campaign(tmp_path: Path) -> Path:
    """The example campaign with a small DEEP budget for Greymantle and a fallback line for
    Captain Vessa."""
    campaign = tmp_path / "campaign"
    shutil.copytree(EXAMPLE, campaign)
    for name, changes in (
        ("greymantle.yaml", {"spoken_budget": {"deep": 20}}),
        ("vessa.yaml", {"fallback_lines": ["Not now. Ask the sergeant."]}),
    ):
        path = campaign / "npcs" / name
        npc = yaml.safe_load(path.read_text())
        npc.update(changes)
        path.write_text(yaml.safe_dump(npc))
    return campaign


def test_rolls_lookups_budgets_and_clean_speech_at_a_rehearsal(
    tmp_path: Path, llm: InstantLlm
) -> None:
    llm.answers = {
        "Bartok": "Bartok: Ha! 🎲 Not bad, lad.",
        "Greymantle": LECTURE,
        "Captain Vessa": "As an AI language model, I cannot discuss the docks.",
    }
    campaign = _campaign(tmp_path)
    config = scripted_config(tmp_path, llm, campaign, speculate=False)
    scene = tmp_path / "scene.yaml"
    scene.write_text(
        yaml.safe_dump(
            {
                "title": "what NPCs say",
                "campaign": str(campaign),
                "players": {"Tobble": {"provider": "espeak", "voice": "en-us+m3"}},
                "lines": LINES,
                "dm": [{"at": 1.5, "tier": "deep", "npc": "Greymantle", "duration_s": 120}],
                "tail_s": 60,
            }
        )
    )
    out = tmp_path / "out"
    code = main(["--config", str(config), "rehearse", str(scene), "--out", str(out),
                 "--playout-speed", "8"])  # fmt: skip
    report = (out / "report.md").read_text()
    assert code == 0, report  # every check: who answered, the roll, the search, nobody
    assert "expected nobody, got nobody" in report
    turns = {t["npc"]: t for t in json.loads((out / "latency.json").read_text())["turns"]}
    assert set(turns) == {"Bartok", "Greymantle", "Captain Vessa"}

    bartok = turns["Bartok"]
    assert [t["name"] for t in bartok["tools"]] == ["roll"]
    total = re.match(r"That's an? (\d+)\.", bartok["spoken"])
    assert total is not None and 1 <= int(total.group(1)) <= 20, bartok["spoken"]
    assert bartok["spoken"].endswith("Ha! Not bad, lad.")  # its label and emoji cut
    assert {"label", "emoji"} <= set(bartok["repairs"])
    bartok_requests = [r for r in llm.requests if "You are Bartok" in r["messages"][0]["content"]]
    assert all("roll" not in {t["function"]["name"] for t in r.get("tools", [])}
               for r in bartok_requests)  # fmt: skip

    greymantle = turns["Greymantle"]
    assert greymantle["tier"] == "deep"
    assert [t["name"] for t in greymantle["tools"]][:2] == ["search_facts", "search_sessions"]
    asked = [r for r in llm.requests if "You are Greymantle" in r["messages"][0]["content"]]
    assert "The Old Mill — An abandoned mill" in asked[0]["messages"][-1]["content"]
    assert greymantle["budget_hit"] and greymantle["budget_words"] == 20
    spoken = greymantle["spoken"]
    assert spoken.startswith("The old mill grinds") and spoken.endswith(".")
    assert len(spoken.split()) <= 20 and "footnotes" not in spoken
    assert "cut at its 20-word budget" in report

    vessa = turns["Captain Vessa"]
    assert vessa["spoken"] == "Not now. Ask the sergeant."
    assert vessa["repairs"].get("broken character", 0) >= 2
    assert vessa["repairs"]["regenerated"] == 1 and vessa["repairs"]["fallback"] == 1
