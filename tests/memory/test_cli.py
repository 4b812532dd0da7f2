"""``glyphoxa memory ...`` and ``glyphoxa recap`` through the real CLI entry point."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bot.cli import main
from campaigns.content import EntitiesFile
from campaigns.memory import MemoryStore
from campaigns.yamlio import load_model

EXAMPLE = Path(__file__).resolve().parents[2] / "campaigns/example"


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "glyphoxa.yaml"
    url = f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}"
    path.write_text(f"campaign:\n  path: {EXAMPLE}\nmemory:\n  url: {url}\n")
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([*argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


async def _record(url: str) -> str:
    store = await MemoryStore.open(url)
    session = await store.start_session("emberford", "Night at the Flagon")
    await store.add_utterance(session, "Arin", "Bartok, what's on tap?", started_at=0, ended_at=1)
    await store.add_utterance(
        session,
        "Bartok",
        "Dark ale, and the mill grinds again.",
        npc="Bartok",
        started_at=1,
        ended_at=2,
    )
    await store.end_session(session, summary="Bartok hinted that the old mill is busy at night.")
    fact = await store.propose_fact("Bartok", "The mill wheel turns backwards.")
    await store.close()
    return f"{session} {fact}"


def test_memory_commands_end_to_end(
    config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = ["--config", str(config)]
    code, out, _ = _run(capsys, *c, "memory", "entities", "--type", "npc")
    assert code == 0 and "Bartok (aka Bart)" in out and "tavern" not in out  # seeded on open
    assert "location" not in out
    code, out, _ = _run(capsys, *c, "memory", "entities", "--name", "Bartock", "--json")
    assert [e["id"] for e in json.loads(out)] == ["bartok"]
    code, out, _ = _run(capsys, *c, "memory", "entity", "bartok")
    assert "-works_at-> The Rusty Flagon" in out

    session, fact = asyncio.run(_record(f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}")).split()
    code, out, _ = _run(capsys, *c, "memory", "search", "mill")
    assert code == 0 and "Bartok: Dark ale, and the mill grinds again." in out
    code, out, _ = _run(capsys, *c, "memory", "search", "mill", "--session", session[:8], "--json")
    assert json.loads(out)[0]["session_id"] == session
    code, out, _ = _run(capsys, *c, "recap", "--sessions", "3")
    assert '"Night at the Flagon"' in out and "old mill is busy" in out
    code, out, _ = _run(capsys, *c, "memory", "sessions")
    assert session[:8] in out and "ended" in out
    code, out, _ = _run(capsys, *c, "memory", "proposals")
    assert f"#{fact} [pending] Bartok: The mill wheel turns backwards." in out
    code, out, _ = _run(capsys, *c, "memory", "proposals", "approve", fact)
    assert code == 0 and f"proposal #{fact} approved" in out
    code, out, _ = _run(capsys, *c, "memory", "search", "wheel backwards", "--facts")
    assert "The mill wheel turns backwards." in out

    backup = tmp_path / "backup.json"
    code, out, _ = _run(capsys, *c, "memory", "export", str(backup))
    assert code == 0 and "2 utterances" in out
    other = f"sqlite+aiosqlite:///{tmp_path / 'other.db'}"
    code, out, err = _run(capsys, *c, "memory", "--url", other, "import", str(backup))
    assert code == 0 and "sessions added: 1" in out, err
    code, out, _ = _run(capsys, *c, "recap", "--url", other)
    assert "old mill is busy" in out


def test_user_errors_are_one_clean_line(
    config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = ["--config", str(config)]
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "glyphoxa-memory", "version": 1}')
    code, _, err = _run(capsys, *c, "memory", "import", str(bad))
    assert code == 2 and err.startswith("error: ") and "tables: Field required" in err
    assert "Traceback" not in err
    code, _, err = _run(capsys, *c, "memory", "entity", "bartk")
    assert code == 2 and "did you mean bartok" in err
    code, _, err = _run(capsys, *c, "recap", "--sessions", "0")
    assert code == 2 and "at least 1" in err
    code, _, err = _run(capsys, *c, "memory", "--url", "nonsense://x", "sessions")
    assert code == 2 and "only sqlite and postgresql are supported" in err
    code, _, err = _run(capsys, *c, "memory", "--url", "nonsense", "sessions")  # a path
    assert code == 2 and "nonsense: no such database file (--url)" in err


async def _propose(url: str) -> list[int]:
    store = await MemoryStore.open(url)
    await store.seed_entities(load_model(EXAMPLE / "entities.yaml", EntitiesFile).unwrap())
    session = await store.start_session("emberford")
    numbers = [
        await store.propose_fact("Bartok", text, entity_id=entity, session_id=session)
        for entity, text in (
            ("vessa", "Vessa hides a silver key."),
            ("whisper", "whisper likes riddles"),
            ("bartok", "Bartok is secretly a dragon."),
        )
    ]
    await store.close()
    return numbers


def test_proposals_round_trip(
    config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The DM's review from the command line: list, approve, edit, reject, and what NPCs see."""
    c = ["--config", str(config)]
    url = f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}"
    code, out, _ = _run(capsys, *c, "memory", "proposals")
    assert code == 0 and out == "no proposals waiting\n"
    key, riddles, dragon = asyncio.run(_propose(url))
    code, out, err = _run(capsys, *c, "memory", "proposals", "--campaign", str(EXAMPLE))
    lines = out.splitlines()
    assert lines[0].startswith(f"#{key} [pending] Bartok about Captain Vessa (vessa), session ")
    assert lines[0].endswith(": Vessa hides a silver key.") and len(lines) == 3
    assert "proposals approve ID | edit ID TEXT | reject ID" in err

    code, out, _ = _run(capsys, *c, "memory", "proposals", "approve", str(key))
    assert code == 0 and out.startswith(f"proposal #{key} approved\n#{key} [approved by command")
    code, out, _ = _run(
        capsys, *c, "memory", "proposals", "edit", f"#{riddles}", "Whisper answers only riddles."
    )
    assert code == 0 and f"proposal #{riddles} edited and approved" in out
    assert "(edited; Bartok proposed: whisper likes riddles)" in out
    code, out, _ = _run(capsys, *c, "memory", "proposals", "reject", str(dragon), "--json")
    assert code == 0 and json.loads(out)["status"] == "rejected"

    code, out, _ = _run(capsys, *c, "memory", "proposals")
    assert out == "no proposals waiting\n"
    code, out, _ = _run(capsys, *c, "memory", "proposals", "--status", "all", "--json")
    decided = {f["id"]: (f["status"], f["text"], f["decided_by"]) for f in json.loads(out)}
    assert decided == {
        key: ("approved", "Vessa hides a silver key.", "command line"),
        riddles: ("approved", "Whisper answers only riddles.", "command line"),
        dragon: ("rejected", "Bartok is secretly a dragon.", "command line"),
    }
    code, out, _ = _run(capsys, *c, "memory", "entity", "whisper")
    assert "(from Bartok): Whisper answers only riddles." in out
    code, out, _ = _run(capsys, *c, "memory", "entity", "bartok")
    assert "dragon" not in out
    code, out, _ = _run(capsys, *c, "memory", "search", "dragon", "--facts")
    assert out == "nothing found for 'dragon'\n"

    for bad, message in (
        ("abc", "error: 'abc' is not a proposal number; use the number shown by `glyphoxa"),
        ("9999", "error: no proposal #9999; `glyphoxa memory proposals` lists the waiting"),
        (str(dragon), f"error: proposal #{dragon} was already rejected; only a waiting"),
    ):
        code, out, err = _run(capsys, *c, "memory", "proposals", "approve", bad)
        assert code == 2 and err.startswith(message) and "Traceback" not in err
        assert err.count("\n") == 1 and out == ""
    code, _, err = _run(capsys, *c, "memory", "proposals", "edit", str(key), "x" * 301)
    assert code == 2 and "at most 300 fit" in err


def test_a_rehearsals_memory_is_reached_by_its_plain_path(
    config: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After a rehearsal, the table's memory has no session: the answer points at the
    rehearsal's own database, and ``--url out/memory.db`` (a plain path) reads it."""
    c = ["--config", str(config)]
    monkeypatch.chdir(tmp_path)  # where the DM ran glyphoxa rehearse ... --out out
    code, out, err = _run(capsys, *c, "memory", "sessions")
    assert code == 0 and out == "no sessions recorded yet\n"
    assert err.splitlines()[-1] == (
        "a rehearsal keeps its sessions in its --out folder: glyphoxa memory sessions "
        "--url OUT/memory.db"
    )
    (tmp_path / "out").mkdir()
    asyncio.run(_record(f"sqlite+aiosqlite:///{tmp_path / 'out' / 'memory.db'}"))
    code, out, err = _run(capsys, *c, "memory", "sessions")
    assert out == "no sessions recorded yet\n"
    assert err.splitlines()[-1] == (
        "a rehearsal's sessions are in its own database: glyphoxa memory sessions "
        "--url out/memory.db"
    )
    code, out, err = _run(capsys, *c, "recap")
    assert out == "No sessions recorded yet.\n" and "--url out/memory.db" in err
    code, out, err = _run(capsys, *c, "memory", "sessions", "--url", "out/memory.db")
    assert code == 0 and "Night at the Flagon" in out and err == ""
    absolute = str(tmp_path / "out" / "memory.db")
    code, out, _ = _run(capsys, *c, "memory", "--url", absolute, "search", "mill")
    assert "Bartok: Dark ale, and the mill grinds again." in out
    code, _, err = _run(capsys, *c, "memory", "sessions", "--url", "out/memroy.db")
    assert code == 2 and err == (
        "error: out/memroy.db: no such database file (--url); a rehearsal keeps its memory in "
        "its --out folder, e.g. --url out/memory.db\n"
    )
    assert not (tmp_path / "out" / "memroy.db").exists()
