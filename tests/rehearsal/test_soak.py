"""``glyphoxa bench soak --quick`` in CI: a compressed game night through the real receive path.

Five synthesized players talk to the example campaign's NPCs through the local Discord (real
DAVE group, Opus, discord.py voice connection, Whisper, the instant LLM, Piper) while players
join late, one drops and rejoins, a client is left on a stale epoch, packets are lost in bursts,
the DM mutes and overrides, the voice server moves, the relay stops sending to the bot while a
player talks (the stall watchdog rejoins) and nobody talks for 30 s behind a relay that forgets
endpoints silent for 10 s (the full run: 20 minutes and 20 s). Every goal of the full run but
memory growth (20 simulated minutes are too short to tell a leak from warm-up) must hold.
"""

from __future__ import annotations

import pytest

from bot.bench.soak.report import DEAF_GOAL_S, IDLE_DATAGRAMS_GOAL, STALL_GOAL_S
from bot.bench.soak.run import run_soak

pytestmark = pytest.mark.slow


async def test_quick_soak_answers_every_addressed_turn_and_stays_hearing() -> None:
    report = await run_soak(quick=True)
    results = {r.name: r for r in report.bench_results()}
    addressed = report.of("addressed")
    assert len(addressed) == 14
    missed = results["addressed turns answered"].extra["missed"]  # type: ignore[index]
    # Every addressed line is heard and answered. Which NPC answers rests on the words Whisper
    # makes of audio that went through Opus and lossy bursts: once in a few runs "Bartok, what's
    # on tap" came out as "Boredok, Whisper Tap" and the NPC called Whisper answered. That is
    # the recognizer's miss (address detection has a bench of its own), not a deaf table; one
    # such line a night is allowed, two are not.
    assert [r for r in addressed if not r.answered and r.answered_as_heard is None] == [], missed
    assert sum(r.answered_as_heard is not None for r in addressed) <= 1, missed
    assert report.unexpected_answers() == []  # muted NPC and table talk stay unanswered
    assert len(report.of("muted")) == 1 and len(report.of("stale")) == 1
    deaf = report.longest_deaf()
    assert deaf is not None and deaf.deaf_s <= DEAF_GOAL_S, deaf
    assert report.tasks_left == [] and report.fds_leaked <= 0
    assert len(report.outages_s) == 1 and report.outages_s[0] < 10
    assert len(report.stalls_s) == 1 and report.stalls_s[0] <= STALL_GOAL_S
    assert report.event("stall") == 1 and report.rejoins == 1
    assert report.dm_notices == []  # nothing ended the table; one stall is not news
    [idle] = report.idle
    assert idle.datagrams_per_s <= IDLE_DATAGRAMS_GOAL and idle.keepalives >= 5
    assert not idle.forgotten  # the keepalives kept the relay's memory of the bot fresh
    assert results["first player after the idle stretch heard and answered"].passed
    # The stale client's line (its old keys expired) was not heard, yet the healthy player
    # talking over it was answered.
    stale = report.of("stale")[0]
    assert stale.heard_after_s is None
    over_it = next(r for r in addressed if r.line.at == stale.line.at)
    assert over_it.answered
