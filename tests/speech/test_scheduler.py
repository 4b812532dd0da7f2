"""The CPU scheduler's order: endpoint work first, then the answer's voice, then partials
(of players talking to an NPC before chatter); partials never wait, finals are never dropped."""

from __future__ import annotations

import asyncio

import pytest

from bot.audio.speech.scheduler import CpuScheduler, Skipped, Work


async def _job(
    scheduler: CpuScheduler, work: Work, resource: str, name: str, log: list[str],
    release: asyncio.Event | None = None,
) -> None:  # fmt: skip
    async with scheduler.slot(work, resource):
        log.append(name)
        if release is not None:
            await release.wait()


async def test_waiting_work_starts_most_urgent_first_and_one_job_per_model() -> None:
    scheduler = CpuScheduler(capacity=2)
    log: list[str] = []
    gate = asyncio.Event()
    busy = asyncio.create_task(_job(scheduler, Work.ANSWER, "stt", "running", log, gate))
    await asyncio.sleep(0)
    waiting = [
        asyncio.create_task(_job(scheduler, work, "stt", name, log))
        for work, name in [
            (Work.ANSWER, "answer"),
            (Work.ENDPOINT, "final-a"),
            (Work.ENDPOINT, "final-b"),
        ]
    ]
    other = asyncio.create_task(_job(scheduler, Work.ANSWER, "tts", "voice", log))
    await asyncio.sleep(0.01)
    assert log == ["running", "voice"]  # another model's work uses the second slot
    gate.set()
    await asyncio.gather(busy, other, *waiting)
    assert log == ["running", "voice", "final-a", "final-b", "answer"]  # by class, then FIFO


async def test_partials_run_only_when_nothing_more_urgent_is_waiting() -> None:
    scheduler = CpuScheduler(capacity=2)
    async with scheduler.slot(Work.PARTIAL, "stt"):  # an idle machine: a partial runs
        pass
    gate = asyncio.Event()
    final = asyncio.create_task(_job(scheduler, Work.ENDPOINT, "turn-model", "f", [], gate))
    await asyncio.sleep(0)
    with pytest.raises(Skipped):  # a speaker just stopped: their turn end comes first
        async with scheduler.slot(Work.PARTIAL, "stt"):
            pass
    gate.set()
    await final
    with scheduler.answering():  # an NPC answer on its way: chatter goes, partials stay
        with pytest.raises(Skipped):
            async with scheduler.slot(Work.CHATTER, "stt"):
                pass
        async with scheduler.slot(Work.PARTIAL, "stt"):
            pass
    async with scheduler.slot(Work.CHATTER, "stt"):
        pass
    assert scheduler.stats[Work.PARTIAL].skipped == 1
    assert scheduler.stats[Work.CHATTER].skipped == 1


async def test_a_busy_model_skips_partials_but_queues_finals() -> None:
    scheduler = CpuScheduler(capacity=2)
    gate = asyncio.Event()
    log: list[str] = []
    first = asyncio.create_task(_job(scheduler, Work.ENDPOINT, "stt", "a", log, gate))
    await asyncio.sleep(0)
    with pytest.raises(Skipped):
        async with scheduler.slot(Work.PARTIAL, "stt"):
            pass
    second = asyncio.create_task(_job(scheduler, Work.ENDPOINT, "stt", "b", log))
    await asyncio.sleep(0.01)
    assert log == ["a"]
    gate.set()
    await asyncio.gather(first, second)
    assert log == ["a", "b"]


async def test_a_cancelled_waiter_leaves_the_queue_and_frees_nothing_it_did_not_hold() -> None:
    scheduler = CpuScheduler(capacity=1)
    gate = asyncio.Event()
    holder = asyncio.create_task(_job(scheduler, Work.ANSWER, "tts", "holder", [], gate))
    await asyncio.sleep(0)
    waiter = asyncio.create_task(_job(scheduler, Work.ENDPOINT, "stt", "waiter", []))
    await asyncio.sleep(0.01)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert not scheduler.busy_with(Work.ENDPOINT)
    gate.set()
    await holder
    assert not scheduler.busy_with(Work.CHATTER)


def test_partials_space_out_as_more_people_talk() -> None:
    scheduler = CpuScheduler()
    assert scheduler.partial_interval(0.3, Work.PARTIAL) == pytest.approx(0.3)
    for lane in ("a", "b", "c"):
        scheduler.speaking(lane, True)
    assert scheduler.partial_interval(0.3, Work.PARTIAL) == pytest.approx(0.9)
    with scheduler.answering():
        assert scheduler.partial_interval(0.3, Work.CHATTER) == pytest.approx(1.8)
    scheduler.speaking("b", False)
    assert scheduler.partial_interval(0.3, Work.PARTIAL) == pytest.approx(0.6)


def _table_talk(scheduler: CpuScheduler, log: list[str]) -> asyncio.Task[None]:
    return asyncio.create_task(_job(scheduler, Work.ASIDE, "stt", "table talk", log))


async def test_table_talk_waits_for_the_answer_on_its_way_then_runs() -> None:
    scheduler = CpuScheduler(capacity=2, aside_wait_s=5.0)
    log: list[str] = []
    with scheduler.answering():
        aside = _table_talk(scheduler, log)
        await asyncio.sleep(0.01)
        assert log == []  # both slots free, yet held: the answer's LLM has the cores
        assert scheduler.busy_with(Work.ASIDE) and not scheduler.busy_with(Work.ENDPOINT)
        final = asyncio.create_task(_job(scheduler, Work.ENDPOINT, "stt", "final", log))
        await asyncio.sleep(0.01)
        assert log == ["final"]  # a player who just stopped goes first
        with pytest.raises(Skipped):  # chatter steps back for waiting table talk
            async with scheduler.slot(Work.CHATTER, "turn-model"):
                pass
    await asyncio.wait_for(aside, 1.0)  # the answer is out: table talk goes at once
    await final
    assert log == ["final", "table talk"]


async def test_table_talk_is_held_no_longer_than_its_limit() -> None:
    scheduler = CpuScheduler(capacity=2, aside_wait_s=0.05)
    log: list[str] = []
    with scheduler.answering():  # an answer that goes on and on
        aside = _table_talk(scheduler, log)
        await asyncio.wait_for(aside, 1.0)
        assert log == ["table talk"]
    assert scheduler.stats[Work.ASIDE].waited_ms[0] >= 45


async def test_a_guess_holds_table_talk_and_chatter_but_not_the_guessing_player() -> None:
    scheduler = CpuScheduler(capacity=2, aside_wait_s=5.0)
    log: list[str] = []
    with scheduler.guessing():
        aside = _table_talk(scheduler, log)
        await asyncio.sleep(0.01)
        assert log == [] and not scheduler.busy_with(Work.ANSWER)
        async with scheduler.slot(Work.PARTIAL, "stt"):  # the guessing player's own partial
            pass
        with pytest.raises(Skipped):
            async with scheduler.slot(Work.CHATTER, "stt"):
                pass
    await asyncio.wait_for(aside, 1.0)
    assert log == ["table talk"]
