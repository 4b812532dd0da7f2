"""The scene plan: lines wait for a quiet table, interruptions wait for an audible NPC, DM
commands keep their place among the lines, and delays shift everything after them."""

from __future__ import annotations

from bot.audio.speech import STT_FRAME_BYTES
from bot.frontends.rehearsal.players import LineAudio
from bot.frontends.rehearsal.scene import Scene
from bot.frontends.rehearsal.schedule import ScenePlan


def _plan(wait: bool = True) -> ScenePlan:
    scene = Scene.model_validate(
        {
            "lines": [
                {"at": 1, "speaker": "A", "text": "Bartok, hi."},
                {"at": 3, "speaker": "B", "text": "Greymantle, hello."},
                {"at": 4, "speaker": "A", "text": "Wait!", "interrupt": True},
            ],
            "dm": [{"at": 2, "mute": "Bartok"}, {"at": 3.5, "unmute": "Bartok"}],
            "wait_for_answers": wait,
        }
    )
    audio = b"\x10\x00" * (STT_FRAME_BYTES // 2 * 10)  # 200 ms, not silence
    lines = [LineAudio(line, audio, 0.2) for line in scene.lines]
    return ScenePlan(scene, lines)


def test_lines_wait_for_quiet_and_shift_later_events() -> None:
    plan = _plan()
    assert plan.advance(49, quiet=True, npc_audible=False) == []
    assert [i.line.at for i in plan.advance(50, quiet=True, npc_audible=False)] == [1]
    assert plan.timelines["A"].frame(50) != plan.timelines["B"].frame(50)
    assert [c.mute for c in plan.due_commands(100)] == ["Bartok"]
    # the second line is due at frame 150 but the NPC is still answering until frame 400
    for k in range(150, 400):
        assert plan.advance(k, quiet=False, npc_audible=k > 300) == []
        assert plan.due_commands(k) == []  # unmute (3.5 s) waits for the 3 s line
    started = plan.advance(400, quiet=True, npc_audible=False)
    assert [i.line.at for i in started] == [3] and plan.shift == 250
    assert [c.unmute for c in plan.due_commands(425)] == ["Bartok"]  # 3.5 s + 5 s shift
    # the interruption waits until an NPC is audible, whatever "quiet" says
    assert plan.advance(460, quiet=True, npc_audible=False) == []
    assert [i.line.at for i in plan.advance(470, quiet=False, npc_audible=True)] == [4]
    assert plan.all_started and plan.started == {0: 50, 1: 400, 2: 470}


def test_fixed_timing_when_not_waiting_for_answers() -> None:
    plan = _plan(wait=False)
    plan.advance(50, quiet=True, npc_audible=False)
    assert [i.line.at for i in plan.advance(150, quiet=False, npc_audible=False)] == [3]
    assert plan.shift == 0


def test_table_talk_starts_on_time_and_holds_nobody_up() -> None:
    scene = Scene.model_validate(
        {
            "lines": [
                {"at": 1, "speaker": "A", "text": "Bartok, hi."},
                {"at": 1.5, "speaker": "T", "text": "Nice boots.", "overlap": True},
                {"at": 2, "speaker": "A", "text": "Bartok, an ale."},
                {"at": 4, "speaker": "M", "text": "Thanks.", "overlap": True},
            ]
        }
    )
    long = b"\x10\x00" * (STT_FRAME_BYTES // 2 * 100)  # 2 s of talk
    plan = ScenePlan(scene, [LineAudio(line, long, 2.0) for line in scene.lines])
    assert scene.table_talkers() == {"T", "M"}
    assert [i.line.speaker for i in plan.advance(50, quiet=True, npc_audible=False)] == ["A"]
    # table talk starts while A still talks and while the table is not quiet...
    assert [i.line.speaker for i in plan.advance(75, quiet=False, npc_audible=True)] == ["T"]
    # ...and A's next line waits for A's audio and a quiet table, not for the table talk
    assert plan.advance(150, quiet=False, npc_audible=False) == []
    assert [i.line.speaker for i in plan.advance(150, quiet=True, npc_audible=False)] == ["A"]
    assert plan.shift == 50  # A's second line started 1 s late...
    assert plan.advance(249, quiet=False, npc_audible=False) == []
    started = plan.advance(250, quiet=False, npc_audible=False)  # ...so M's talk shifted too
    assert [i.line.speaker for i in started] == ["M"] and plan.all_started
