"""The table session on scripted timelines: real lanes, mixer, barge-in, addressing, tier
selector and memory store; scripted recognition, voices and engine (our own protocols)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLE, Table
from table_script import EnergyVad, ScriptedEngine, TableDriver, ToneStt, ToneTts, tone_frames

from bot.audio.speech import SILENCE_FRAME
from bot.audio.speech.scheduler import Skipped, Work
from bot.settings.config import GlyphoxaConfig
from bot.table.session.builder import build_session
from bot.table.session.events import BargedIn, NpcSpoke, PlayerSpoke, Routed
from bot.table.session.session import TableSession
from bot.telemetry.metrics import Metrics
from campaigns.basics import GlyphoxaError, Tier
from npcs.campaign import load_campaign
from tools.host import ToolResult


def spoken(table: Table) -> list[NpcSpoke]:
    return table.driver.of_type(NpcSpoke)


async def test_named_npc_answers_and_everything_is_recorded(table: Table) -> None:
    table.engine.replies["Bartok"] = ["Dark ale tonight.", "Two coppers a mug."]
    table.engine.tools["Bartok"] = [ToolResult("c1", "roll", "7", None, False, "ok", 3.0)]
    table.driver.say("Arin", "Bartok, what is on tap tonight?")
    await table.driver.run_until(lambda: len(spoken(table)) == 1)
    (turn,) = spoken(table)
    trace = turn.trace
    heard = "Bartok, what is on tap tonight?"
    assert (trace.npc, trace.speaker, trace.heard) == ("Bartok", "Arin", heard)
    assert trace.spoken == "Dark ale tonight. Two coppers a mug." and not trace.interrupted
    assert [t.name for t in trace.tools] == ["roll"]
    stages = trace.stages_ms()
    assert all(stages[s] is not None and stages[s] >= 0 for s in stages)
    assert stages["voice_to_voice"] >= stages["stt_final"] + stages["llm_first_token"]
    assert trace.overhead_ms() is not None
    assert "Bartok" in table.driver.audible  # the audio really went through the mixer
    assert table.tts.spoken == ["Dark ale tonight.", "Two coppers a mug."]
    request = table.engine.requests[-1]
    assert (request.speaker, request.npc.name, request.text) == ("Arin", "Bartok", heard)
    await table.session.recorder.flush()
    sid = table.session.recorder.session_id
    rows = await table.session.memory.search_sessions("coppers", session_id=sid)
    assert [(r["npc"], r["text"]) for r in rows] == [("Bartok", trace.spoken)]
    rows = await table.session.memory.search_sessions("tap", session_id=sid)
    assert [(r["speaker"], r["npc"]) for r in rows] == [("Arin", None)]
    assert (
        table.metrics.sample("glyphoxa_turn_stage_seconds_count", {"stage": "voice_to_voice"})
        == 1.0
    )
    assert table.metrics.sample("glyphoxa_stt_seconds_count", {"kind": "final"}) == 1.0


async def test_unaddressed_talk_gets_no_answer_and_two_names_answer_in_order(
    table: Table,
) -> None:
    table.driver.say("Arin", "I look around the room.")
    await table.driver.run_until(lambda: len(table.driver.of_type(Routed)) == 1)
    assert table.driver.of_type(Routed)[0].npcs == ()
    table.driver.say("Tobble", "Greymantle and Bartok, have you met?")
    await table.driver.run_until(lambda: len(spoken(table)) == 2)
    assert [s.trace.npc for s in spoken(table)] == ["Greymantle", "Bartok"]
    order = [npc for npc in dict.fromkeys(table.driver.audible) if npc]
    assert order == ["Greymantle", "Bartok"]  # one at a time, in order of address


async def test_tier_first_turn_budget_and_dm_override(table: Table) -> None:
    driver = table.driver
    driver.say("Tobble", "Greymantle, good evening.")
    await driver.run_until(lambda: len(spoken(table)) == 1)
    assert table.engine.requests[-1].tier is Tier.STANDARD  # first turn of a conversation
    driver.say("Tobble", "Greymantle, nice weather.")
    await driver.run_until(lambda: len(spoken(table)) == 2)
    assert table.engine.requests[-1].tier is Tier.FAST  # follow-up, no phrase
    table.session.controls.set_tier_override("deep", npc="Greymantle", duration_s=60)
    driver.say("Tobble", "Greymantle, and the rain?")
    await driver.run_until(lambda: len(spoken(table)) == 3)
    assert table.engine.requests[-1].tier is Tier.DEEP
    assert "DM override" in spoken(table)[-1].trace.tier_reason
    driver.say("Arin", "Bartok, tell me everything you remember about the Black Candle.")
    await driver.run_until(lambda: len(spoken(table)) == 4)
    assert table.engine.requests[-1].tier is Tier.FAST  # Bartok's budget caps DEEP phrases
    assert "capped" in spoken(table)[-1].trace.tier_reason
    snapshot = table.engine.requests[-1].entity_snapshot or ""
    assert "Black Candle" in snapshot  # speculative entity lookup reached the prompt


async def test_barge_in_cuts_the_npc_cancels_the_turn_and_keeps_only_heard_words(
    table: Table,
) -> None:
    table.engine.hold = asyncio.Event()  # the "LLM" is still writing when the player cuts in
    long = "It was a dark and stormy night on the docks of Emberford."
    table.engine.replies["Bartok"] = [long, "The ships came in one by one."]
    driver = table.driver
    driver.say("Arin", "Bartok, tell me a story.")
    await driver.run_until(lambda: table.session.mixer.npc_speaking)
    for _ in range(15):  # let Bartok talk for 300 ms first
        await driver.tick()
    driver.say("Tobble", "Wait, who is at the door?", seconds=1.2)
    await driver.run_until(lambda: len(spoken(table)) == 1)
    (barge,) = driver.of_type(BargedIn)
    assert (barge.speaker, barge.npc) == ("Tobble", "Bartok")
    trace = spoken(table)[0].trace
    assert trace.interrupted and table.engine.cancelled == ["Bartok"]
    assert trace.spoken and long.startswith(trace.spoken) and trace.spoken != long
    for _ in range(5):
        await driver.tick()
    cut = driver.audible.index(None, driver.audible.index("Bartok"))
    assert "Bartok" not in driver.audible[cut:]  # silent from the cut on
    await table.session.recorder.flush()
    sid = table.session.recorder.session_id
    rows = await table.session.memory.search_sessions("dark", session_id=sid)
    assert [(r["text"], r["interrupted"]) for r in rows] == [(trace.spoken, True)]


async def test_table_talk_said_while_a_player_talks_waits_for_their_next_turn(
    table: Table,
) -> None:
    """A turn's scene is what its player had heard when they began: a line Tobble said
    meanwhile is not in it (the prompt prepared while Arin talked still holds); the next has
    it."""
    driver = table.driver
    driver.say("Arin", "Bartok, what is on tap tonight, and is the stew good?", seconds=3.0)
    for _ in range(20):  # Arin has been talking for 400 ms
        await driver.tick()
    driver.say("Tobble", "I will find us a table.", seconds=0.8)
    await driver.run_until(lambda: len(spoken(table)) == 1)
    heard = [p.speaker for p in driver.of_type(PlayerSpoke)]
    assert heard == ["Tobble", "Arin"]  # Tobble's line was in the scene before Arin's turn
    assert [line.speaker for line in table.engine.requests[0].scene] == ["Arin"]
    driver.say("Arin", "Bartok, and a room?", stable=True)
    await driver.run_until(lambda: len(spoken(table)) == 2)
    assert [line.speaker for line in table.engine.requests[1].scene] == [
        "Tobble", "Arin", "Bartok", "Arin"
    ]  # fmt: skip


async def test_backchannel_does_not_start_a_turn(table: Table) -> None:
    table.driver.say("Arin", "mhm", seconds=0.4)
    table.driver.say("Tobble", "Bartok, hello.")
    await table.driver.run_until(lambda: len(spoken(table)) == 1)
    assert [p.speaker for p in table.driver.of_type(PlayerSpoke)] == ["Tobble"]


async def test_a_name_said_right_after_a_line_to_that_npc_is_part_of_the_line(
    table: Table,
) -> None:
    """ "Roll a die for me," then a breath the turn ended on, then "Bartok.": the name ends the
    line Bartok already answers; it is recorded, not answered a second time."""
    table.engine.replies["Bartok"] = ["Here you go."]
    driver = table.driver
    driver.say("Arin", "Bartok, roll a die for me.")
    await driver.run_until(lambda: len(driver.of_type(Routed)) == 1)
    driver.say("Arin", "Bartok.", seconds=0.4)
    await driver.run_until(lambda: len(driver.of_type(Routed)) == 2)
    first, again = driver.of_type(Routed)
    assert first.npcs == ("Bartok",)
    assert again.npcs == () and "named again" in again.reason, again
    await driver.run_until(lambda: len(spoken(table)) == 1)
    for _ in range(100):
        await driver.tick()
    assert [r.text for r in table.engine.requests] == ["Bartok, roll a die for me."]
    assert [p.text for p in driver.of_type(PlayerSpoke)][-1] == "Bartok."  # still recorded
    driver.say("Arin", "Bartok, and another thing.")  # a real line to him is answered
    await driver.run_until(lambda: len(table.engine.requests) == 2)


async def test_a_name_said_over_the_start_of_the_answer_gets_the_line_answered_whole(
    table: Table,
) -> None:
    """ "Roll a die for me," ended on its breath; "Bartok." then talked over the start of his
    answer, so not a word of it was heard: the line is answered again, whole (otherwise the name is
    taken as part of a line whose answer had just been cut, and the request goes unanswered)."""
    engine, driver = table.engine, table.driver
    engine.replies["Bartok"] = ["Here you go, a six."]
    driver.say("Arin", "Bartok, hello.")
    await driver.run_until(lambda: len(spoken(table)) == 1)
    engine.think = asyncio.Event()  # his next answer is still being written
    driver.say("Arin", "Roll a die for me.")  # to Bartok: the conversation they are in
    await driver.run_until(lambda: len(driver.of_type(Routed)) == 2)
    driver.say("Arin", "Bartok.", seconds=0.6)
    for _ in range(20):  # Arin has been talking for 400 ms when the answer starts
        await driver.tick()
    engine.think.set()
    await driver.run_until(lambda: len(driver.of_type(BargedIn)) == 1)
    assert driver.of_type(BargedIn)[0].heard == ""
    await driver.run_until(lambda: len(driver.of_type(Routed)) == 3)
    again = driver.of_type(Routed)[2]
    assert again.npcs == ("Bartok",) and again.text == "Roll a die for me, Bartok.", again
    await driver.run_until(lambda: len(spoken(table)) == 3)
    assert [r.text for r in engine.requests][1:] == [
        "Roll a die for me.", "Roll a die for me, Bartok."
    ]  # fmt: skip


async def test_dm_mute_unmute_say_and_status(table: Table) -> None:
    session, driver = table.session, table.driver
    session.controls.mute("bart")  # aliases work
    assert session.status().npcs["Bartok"].muted
    driver.say("Arin", "Bartok, a drink please.")
    await driver.run_until(lambda: len(driver.of_type(Routed)) == 1)
    assert driver.of_type(Routed)[0].npcs == () and driver.of_type(Routed)[0].reason == "muted"
    session.controls.unmute("Bartok")
    session.controls.say("Bartok", "Last call, friends!")
    await driver.run_until(lambda: len(spoken(table)) == 1)
    trace = spoken(table)[0].trace
    assert trace.spoken == "Last call, friends!" and table.engine.requests == []
    with pytest.raises(GlyphoxaError, match="no NPC named"):
        session.controls.mute("Nobody")
    status = session.status()
    assert status.turns == 1 and set(status.npcs) >= {"Bartok", "Greymantle"}
    assert status.session_id
    assert status.as_json()["npcs"]["Bartok"]["muted"] is False  # unmuted; plain data too


async def test_mute_cuts_a_speaking_npc(table: Table) -> None:
    table.engine.replies["Bartok"] = ["One two three four five six seven eight nine ten."]
    table.driver.say("Arin", "Bartok, count for me.")
    await table.driver.run_until(lambda: table.session.mixer.npc_speaking)
    table.session.controls.mute("Bartok")
    await table.driver.run_until(lambda: len(spoken(table)) == 1)
    assert spoken(table)[0].trace.interrupted


def _editable_table(tmp_path: Path, config: GlyphoxaConfig) -> tuple[Path, ToneStt, TableSession]:
    """A session over a copy of the example campaign, whose NPC files a test may edit."""
    folder = tmp_path / "campaign"
    shutil.copytree(EXAMPLE, folder)
    stt, engine = ToneStt(), ScriptedEngine(replies={})
    session = build_session(
        config=config,
        campaign=load_campaign(folder),
        stt=stt,
        tts=ToneTts(),
        engines=lambda npc: engine,
        metrics=Metrics(),
        vad_factory=EnergyVad,
    )
    return folder, stt, session


async def test_reload_npcs_applies_an_edited_alias(tmp_path: Path, config: GlyphoxaConfig) -> None:
    folder, stt, session = _editable_table(tmp_path, config)
    async with session:
        path = folder / "npcs" / "bartok.yaml"
        path.write_text(path.read_text().replace("aliases: [Bart,", "aliases: [Stumpy, Bart,"))
        changes = await session.controls.reload_npcs()
        assert changes == ["updated Bartok"]
        driver = TableDriver(session, stt, ["Arin"])
        driver.say("Arin", "Stumpy, hello there.")
        await driver.run_until(lambda: len(driver.of_type(NpcSpoke)) == 1)
        assert driver.of_type(NpcSpoke)[0].trace.npc == "Bartok"


async def test_reload_npcs_refreshes_the_vocabulary_of_open_lanes(
    tmp_path: Path, config: GlyphoxaConfig
) -> None:
    folder, stt, session = _editable_table(tmp_path, config)
    async with session:
        driver = TableDriver(session, stt, ["Arin"])
        driver.say("Arin", "Bartok, hello there.")
        await driver.run_until(lambda: len(driver.of_type(NpcSpoke)) == 1)  # Arin's lane is open
        path = folder / "npcs" / "bartok.yaml"
        path.write_text(path.read_text().replace("aliases: [Bart,", "aliases: [Stumpy, Bart,"))
        assert await session.controls.reload_npcs() == ["updated Bartok"]
        speaker = session.lanes.get("1")
        assert speaker is not None and speaker.lane.vocabulary is not None
        assert "Stumpy" in speaker.lane.vocabulary.terms
        driver.say("Arin", "Stumpie, one more.")  # a near miss the new vocabulary corrects
        await driver.run_until(lambda: len(driver.of_type(NpcSpoke)) == 2)
        assert driver.of_type(PlayerSpoke)[-1].text == "Stumpy, one more."
        assert driver.of_type(NpcSpoke)[-1].trace.npc == "Bartok"


async def test_push_before_start_is_a_clear_error(config: GlyphoxaConfig, campaign) -> None:  # type: ignore[no-untyped-def]
    session = build_session(
        config=config, campaign=campaign, stt=ToneStt(), tts=ToneTts(),
        engines=lambda npc: None, metrics=Metrics(),
    )  # fmt: skip
    with pytest.raises(GlyphoxaError, match="start"):
        session.push_frame(1, "Arin", b"\0" * 3840)


async def test_answer_starts_on_the_partial_when_the_final_confirms_it(
    speculating_table: Table,
) -> None:
    table = speculating_table
    table.engine.replies["Bartok"] = ["Dark ale."]
    table.driver.say("Arin", "Bartok, what is on tap?", stable=True)
    await table.driver.run_until(lambda: len(spoken(table)) == 1)
    trace = spoken(table)[0].trace
    assert trace.speculative and trace.spoken == "Dark ale."
    assert [r.text for r in table.engine.requests] == ["Bartok, what is on tap?"]  # one run
    assert trace.engine_start is not None and trace.final_transcript is not None
    assert trace.engine_start < trace.final_transcript  # started before the final existed
    assert table.engine.cancelled == []
    assert table.tts.spoken == ["Dark ale."]  # synthesized ahead once, during the speculation
    confirmed = table.engine.requests[0].confirmed
    assert confirmed is not None
    await asyncio.wait_for(confirmed(), 1)  # adopted: tools with side effects may run


async def test_the_words_heard_at_the_pause_are_the_final_and_start_the_answer(
    speculating_table: Table,
) -> None:
    table = speculating_table
    table.engine.replies["Bartok"] = ["Dark ale."]
    table.driver.say("Arin", "Bartok, what is on tap tonight?")  # partials: first half only
    await table.driver.run_until(lambda: len(spoken(table)) == 1)
    for _ in range(10):
        await table.driver.tick()
    # Never guessed on the stale partial: the answer started on the words heard at the pause,
    # and those words were the final (recognized once, not again after the end of the turn).
    assert [r.text for r in table.engine.requests] == ["Bartok, what is on tap tonight?"]
    assert table.engine.cancelled == []
    assert table.driver.stt.finals == 1
    trace = spoken(table)[0].trace
    assert trace.speculative and trace.heard == "Bartok, what is on tap tonight?"
    assert trace.spoken == "Dark ale."
    assert trace.turn_end is not None and trace.speech_end is not None
    assert trace.speech_end <= trace.turn_end <= trace.final_transcript  # type: ignore[operator]
    assert len(table.driver.of_type(Routed)) == 1


async def test_talking_on_after_a_pause_drops_the_early_guess(speculating_table: Table) -> None:
    table = speculating_table
    table.engine.replies["Bartok"] = ["Dark ale."]
    table.engine.hold = asyncio.Event()
    driver = table.driver
    freq = driver.stt.register("Bartok, what is on tap tonight?", stable=True)
    driver.queued["Arin"] += [
        *tone_frames(freq, 0.8), *[SILENCE_FRAME] * 16, *tone_frames(freq, 0.6)
    ]  # fmt: skip
    await driver.run_until(lambda: len(table.engine.requests) == 1)
    assert not driver.of_type(Routed)  # a guess, thinking: table talk steps back for it
    scheduler = table.session.scheduler
    with pytest.raises(Skipped):  # chatter steps back for the guess ...
        async with scheduler.slot(Work.CHATTER, "stt"):
            pass
    assert not scheduler.busy_with(Work.ANSWER)  # ... yet Arin's next pause is heard at once
    await driver.run_until(lambda: len(driver.of_type(Routed)) == 1)
    assert table.engine.cancelled == ["Bartok"]  # the guess made at the 320 ms pause
    guess = table.engine.requests[0].confirmed
    assert guess is not None
    with pytest.raises(TimeoutError):  # never adopted: its side effects never run
        await asyncio.wait_for(guess(), 0.05)
    table.engine.hold.set()
    await driver.run_until(lambda: len(spoken(table)) == 1)
    assert [p.text for p in driver.of_type(PlayerSpoke)] == ["Bartok, what is on tap tonight?"]
    assert spoken(table)[0].trace.speculative


async def test_a_partial_naming_an_npc_prefills_its_prompt_while_the_player_talks(
    prefilling_table: Table,
) -> None:
    table = prefilling_table
    table.engine.replies["Bartok"] = ["Dark ale."]
    table.driver.say("Tobble", "Greymantle, hello there.", stable=True)
    await table.driver.run_until(lambda: len(spoken(table)) == 1)
    table.engine.prefills.clear()  # (and the reply prefill for Tobble after Greymantle spoke)
    table.driver.say("Arin", "Bartok, what is on tap tonight?", seconds=1.5)
    await table.driver.run_until(lambda: len(table.driver.of_type(Routed)) == 2)
    (at, request), *_ = table.engine.prefills
    heard = table.driver.of_type(PlayerSpoke)[-1]
    assert at < heard.at  # evaluated while Arin was still talking
    # up to the words so far (the scripted partials hold the first half)
    assert (request.npc.name, request.speaker, request.text) == (
        "Bartok",
        "Arin",
        "Bartok, what is",
    )
    assert [line.text for line in request.scene] == [
        "Greymantle, hello there.",
        "Greymantle answers.",
    ]
    # once on Arin's words; the prefill of Arin's reply to the answer (no words yet) may
    # already have followed, as the scripted answer is written at once
    assert len([r for _, r in table.engine.prefills if r.speaker == "Arin" and r.text]) == 1


async def test_after_an_answer_the_npc_is_prefilled_for_its_players_reply(
    prefilling_table: Table,
) -> None:
    table = prefilling_table
    table.engine.replies["Bartok"] = ["Dark ale."]
    table.engine.hold = asyncio.Event()  # the answer runs until the prefill while Arin talked is
    table.driver.say("Arin", "Bartok, what is on tap?", stable=True)  # over (one at a time)
    prefiller = table.session.prefiller
    await table.driver.run_until(lambda: bool(table.engine.prefills) and not prefiller.busy)
    table.engine.hold.set()
    await table.driver.run_until(lambda: len(spoken(table)) == 1)
    _, request = table.engine.prefills[-1]
    assert (request.npc.name, request.speaker, request.text) == ("Bartok", "Arin", "")
    assert request.scene[-1].text == "Dark ale." and request.scene[-1].npc == "Bartok"
    assert request.tier is Tier.FAST  # Bartok's budget


async def test_the_reply_is_prefilled_while_the_answer_still_plays(
    prefilling_table: Table,
) -> None:
    """Written is sooner than heard: the reply's prompt (the answer as the scene's last line)
    is evaluated while the answer plays, and not again once it has played."""
    table = prefilling_table
    answer = "Dark ale, and plenty of it, friend. The stew is fresh tonight."
    table.engine.replies["Bartok"] = [answer]
    table.driver.say("Arin", "Bartok, what is on tap?", stable=True)
    await table.driver.run_until(lambda: len(spoken(table)) == 1)
    replies = [(at, r) for at, r in table.engine.prefills if r.scene and r.scene[-1].npc]
    assert len(replies) == 1, replies  # once: the prompt did not change when it had played
    (at, request), heard = replies[0], spoken(table)[0]
    assert (request.npc.name, request.speaker, request.text) == ("Bartok", "Arin", "")
    assert request.scene[-1].text == answer == heard.trace.spoken
    assert at < heard.at  # before the answer had finished playing


async def test_the_reply_is_prefilled_with_the_answer_as_voiced_not_as_written(
    prefilling_table: Table,
) -> None:
    """A model's line breaks are spaces once the sentences are spoken: the reply's prompt holds
    the transcript's line, so the reply's turn reuses it instead of evaluating it again."""
    table = prefilling_table
    table.engine.replies["Bartok"] = ["Dark ale, friend.", "The stew is fresh tonight."]
    table.engine.written["Bartok"] = "Dark ale, friend.\nThe stew is fresh tonight."
    table.driver.say("Arin", "Bartok, what is on tap?", stable=True)
    await table.driver.run_until(lambda: len(spoken(table)) == 1)
    replies = [r for _, r in table.engine.prefills if r.scene and r.scene[-1].npc]
    assert len(replies) == 1, replies
    heard = spoken(table)[0].trace
    assert heard.reply == "Dark ale, friend.\nThe stew is fresh tonight."
    voiced = "Dark ale, friend. The stew is fresh tonight."
    assert replies[0].scene[-1].text == heard.spoken == voiced


async def test_a_reply_in_the_same_conversation_is_answered_on_the_partial(
    speculating_table: Table,
) -> None:
    table = speculating_table
    table.driver.say("Arin", "Bartok, what is on tap?", stable=True)
    await table.driver.run_until(lambda: len(spoken(table)) == 1)
    table.driver.say("Arin", "Great, pour me a pint.", stable=True)  # no name: continuation
    await table.driver.run_until(lambda: len(spoken(table)) == 2)
    trace = spoken(table)[1].trace
    assert trace.npc == "Bartok" and trace.speculative
