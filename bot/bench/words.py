"""``glyphoxa bench words``: what the NPCs say and do, judged on a labelled corpus.

Each campaign of ``bot/bench/words_corpus`` is played line by line as a table plays a final
transcript: the same address detection (with each player's continuation), tier selector,
campaign facts lookup, built-in tools over a campaign memory seeded from the campaign's
``entities.yaml``, and engines (``bot.table.assembly.engines``) with production's settings; what
each answer spoke and ran is judged (:mod:`bot.bench.words_corpus`). It runs twice: on the embedded
model (the bundled llama.cpp server with SmolLM2), and on a capable model that uses tools
properly (``bot.bench.doubles.capable_llm``). Speech itself (Whisper, Piper) is not part of it:
``bench e2e`` measures that.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.bench.doubles.capable_llm import CapableLlm
from bot.bench.result import BenchResult
from bot.bench.words_corpus import (
    WORDS_CORPUS,
    Answer,
    Verdict,
    WordsLine,
    judge,
    load_words_corpus,
    prompt_ngrams,
)
from bot.settings.config import GlyphoxaConfig
from bot.table.assembly.engines import Engines, open_engines
from bot.table.assembly.table import builtin_servers_for
from bot.table.session.entities import EntityLookup
from campaigns.memory import MemoryStore
from npcs.addressing import AddressDetector
from npcs.campaign import Campaign, load_campaign
from npcs.context import SceneLine
from npcs.engines import Sentence, ToolsUsed, TurnDone, TurnRequest
from npcs.schema import NpcDefinition
from npcs.tier_selector import TierSelector
from tools.builtin import build_tool_context, create_builtin_servers
from tools.host import ToolHost

__all__ = ["GOALS", "WordsRun", "play_corpus", "run_bench"]

log = logging.getLogger(__name__)

#: The issue's goals over the corpus: (measure, goal as text, passes(rate)).
GOALS: dict[str, tuple[str, Any]] = {
    "echo": ("0 %", lambda rate: rate == 0.0),
    "leak": ("0 %", lambda rate: rate == 0.0),
    "broken character": ("0 %", lambda rate: rate == 0.0),
    "markup": ("0 %", lambda rate: rate == 0.0),
    "over budget": ("0 %", lambda rate: rate == 0.0),
    "rolled and spoken": ("100 %", lambda rate: rate == 1.0),
    "memory consulted": (">= 95 %", lambda rate: rate >= 0.95),
    "grounded": (">= 50 %", lambda rate: rate >= 0.5),
    "talked-about lines answered": ("0 %", lambda rate: rate == 0.0),
}
_TURN_TIMEOUT_S = 120.0


@dataclass(slots=True)
class WordsRun:
    """Every line's answer and verdict for one model."""

    model: str
    answers: list[Answer]
    verdicts: list[Verdict]
    seconds: float

    def rate(self, measure: str) -> tuple[float, int]:
        """(share of lines where ``measure`` holds, lines it applies to)."""
        values = [_measure(verdict, measure) for verdict in self.verdicts]
        applicable = [value for value in values if value is not None]
        return (sum(applicable) / len(applicable) if applicable else 0.0), len(applicable)

    def misses(self, measure: str, limit: int = 6) -> list[str]:
        """Lines that count against ``measure`` (for the JSON report)."""
        bad_when = _BAD_WHEN_TRUE.get(measure, True)
        out = []
        for answer, verdict in zip(self.answers, self.verdicts, strict=True):
            value = _measure(verdict, measure)
            if value is not None and bool(value) == bad_when:
                out.append(f"{answer.line.text!r} -> {answer.spoken!r}")
        return out[:limit]


_FIELDS = {
    "echo": "echo",
    "leak": "leak",
    "broken character": "broken",
    "markup": "markup",
    "over budget": "over_budget",
    "rolled and spoken": "rolled",
    "memory consulted": "consulted",
    "grounded": "grounded",
    "talked-about lines answered": "talked_about_answered",
    "address accuracy": "address_ok",
}
_BAD_WHEN_TRUE = {"rolled and spoken": False, "memory consulted": False, "grounded": False,
                  "address accuracy": False}  # fmt: skip


def _measure(verdict: Verdict, measure: str) -> bool | None:
    value: bool | None = getattr(verdict, _FIELDS[measure])
    return value


async def run_bench(quick: bool) -> list[BenchResult]:
    results: list[BenchResult] = []
    async with CapableLlm() as capable:
        runs = [
            ("embedded model (SmolLM2 on llama.cpp)", None),
            ("capable model (scripted, proper tool calls)", capable.base_url),
        ]
        for label, base_url in runs:
            run = await play_corpus(base_url, label, quick=quick)
            results += _results(run)
    return results


async def play_corpus(
    base_url: str | None,
    label: str,
    *,
    quick: bool = False,
    options: dict[str, Any] | None = None,
    npc_changes: Callable[[NpcDefinition], NpcDefinition] | None = None,
) -> WordsRun:
    """Play every campaign of the corpus against one model (``base_url`` None: the bundled
    local server) and judge each answer. ``options`` are more ``providers.llm.options`` and
    ``npc_changes`` rewrites each NPC (the sweep's variants, ``bot.bench.words_sweep``)."""
    corpus = load_words_corpus()
    answers: list[Answer] = []
    verdicts: list[Verdict] = []
    started = time.monotonic()
    for name, lines in corpus.items():
        campaign = load_campaign(WORDS_CORPUS / name)
        if npc_changes is not None:
            campaign.npcs = {key: npc_changes(npc) for key, npc in campaign.npcs.items()}
        chosen = lines[::3] if quick else lines
        played = await _play_campaign(campaign, chosen, base_url, options or {})
        template = prompt_ngrams(campaign.npcs.values())
        speakers = sorted({*campaign.npcs, *(line.speaker for line in lines)})
        answers += played
        verdicts += [
            judge(answer, template, speakers, [line.text for line in chosen[:index]])
            for index, answer in enumerate(played)
        ]
    return WordsRun(label, answers, verdicts, time.monotonic() - started)


async def _play_campaign(
    campaign: Campaign, lines: Sequence[WordsLine], base_url: str | None, options: dict[str, Any]
) -> list[Answer]:
    with tempfile.TemporaryDirectory(prefix="glyphoxa-words-") as folder:
        config = _config(Path(folder), base_url, options)
        async with _table(config, campaign, base_url) as (engines, memory):
            players = sorted({line.speaker for line in lines})
            detector = AddressDetector(
                campaign.npcs,
                continuation_window_s=config.tiers.continuation_window_s,
                characters=players,
            )
            tiers = TierSelector(config.tiers)
            lookup = EntityLookup(campaign, memory, wait_s=5.0)
            scene: list[SceneLine] = []
            answers: list[Answer] = []
            now = 0.0
            try:
                for line in lines:
                    now += line.after_s
                    decision = detector.detect(line.speaker, line.text, now)
                    scene.append(SceneLine(line.speaker, line.text, None, now, len(scene) + 1))
                    answer = Answer(line, list(decision.npcs))
                    if decision.npcs:
                        await _answer(answer, engines, tiers, lookup, scene, now, campaign)
                        if answer.spoken:
                            npc = answer.answered[0]
                            scene.append(SceneLine(npc, answer.spoken, npc, now, len(scene) + 1))
                    answers.append(answer)
            finally:
                lookup.close()
            return answers


async def _answer(
    answer: Answer,
    engines: Engines,
    tiers: TierSelector,
    lookup: EntityLookup,
    scene: list[SceneLine],
    now: float,
    campaign: Campaign,
) -> None:
    """One NPC's turn, as the table runs it (the first NPC addressed)."""
    npc = campaign.npcs[answer.answered[0]]
    line = answer.line
    decision = tiers.select(line.text, npc=npc, queue_depth=0, now=now)
    tiers.commit(decision, npc=npc.name, now=now)
    snapshot = await lookup.snapshot(line.text, exclude=npc.name)
    request = TurnRequest(
        npc, line.speaker, line.text, decision.tier, scene=list(scene), entity_snapshot=snapshot
    )
    answer.npc, answer.tier = npc, decision.tier
    if snapshot:
        answer.retrieved.append(snapshot)
    engine = engines.for_npc(npc)
    assert engine is not None
    spoken: list[str] = []
    try:
        async with contextlib.aclosing(engine.respond(request)) as events:
            async for event in events:
                if isinstance(event, Sentence):
                    spoken.append(event.text)
                elif isinstance(event, ToolsUsed):
                    for result in event.report.results:
                        arguments = result.arguments if isinstance(result.arguments, dict) else {}
                        answer.tools.append((result.name, arguments, result.content))
                        if result.name.startswith(("search_", "get_")) and not result.is_error:
                            answer.retrieved.append(result.content)
                elif isinstance(event, TurnDone):
                    answer.budget_words = event.budget_words
                    answer.repairs = dict(event.repairs)
    except Exception as error:  # a failed turn is judged as what it said
        answer.error = str(error)
        log.warning("words bench: %r failed: %s", line.text, error)
    answer.spoken = " ".join(spoken)


@contextlib.asynccontextmanager
async def _table(
    config: GlyphoxaConfig, campaign: Campaign, base_url: str | None
) -> AsyncIterator[tuple[Engines, MemoryStore]]:
    """The tools and engines of a table for ``campaign``, over a fresh seeded memory."""
    async with contextlib.AsyncExitStack() as stack:
        memory = await MemoryStore.open("sqlite+aiosqlite:///:memory:")
        stack.push_async_callback(memory.close)
        await memory.seed_entities(campaign.entities)
        context = build_tool_context(config.tools, campaign_dir=campaign.path, memory=memory)
        servers = builtin_servers_for(campaign.npcs.values(), config)
        host = ToolHost(config.mcp, builtins=create_builtin_servers(context, servers))
        host.approvals.configure(campaign=campaign.meta.approval, rules_for=lambda _npc: None)
        await stack.enter_async_context(host)
        engines = await open_engines(
            config, host, stack, base_url=base_url, npcs=campaign.npcs.values()
        )
        if engines.warm_up is not None:
            await engines.warm_up  # prompts cached, as at a table that has been open a while
        yield engines, memory


def _config(folder: Path, base_url: str | None, options: dict[str, Any]) -> GlyphoxaConfig:
    llm: dict[str, Any] = {"name": "local", "model": "smollm2", "options": options}
    if base_url is not None:
        llm = {"name": "openai", "model": "capable", "base_url": base_url, "api_key": "bench",
               "options": options}  # fmt: skip
    return GlyphoxaConfig.model_validate(
        {
            "providers": {"llm": llm},
            "tools": {
                "sandbox_dir": str(folder / "files"),
                "calibration_path": str(folder / "calibration.json"),
            },
        }
    )


def _results(run: WordsRun) -> list[BenchResult]:
    answered = sum(1 for answer in run.answers if answer.answered)
    method = (
        f"{run.model}: {len(run.answers)} lines of bot/bench/words_corpus (3 campaigns), "
        f"{answered} answered, {run.seconds:.0f} s"
    )
    results = []
    for measure, (goal, passes) in GOALS.items():
        rate, count = run.rate(measure)
        results.append(
            BenchResult(
                f"{measure} ({run.model.split(' (')[0]})",
                round(rate * 100, 1),
                "%",
                f"{method}; {count} lines apply",
                goal=goal,
                passed=passes(rate) if count else None,
                extra={"misses": run.misses(measure)},
            )
        )
    rate, count = run.rate("address accuracy")
    results.append(
        BenchResult(
            f"address accuracy ({run.model.split(' (')[0]})",
            round(rate * 100, 1),
            "%",
            f"{method}; {count} lines",
            extra={"misses": run.misses("address accuracy")},
        )
    )
    repairs: dict[str, int] = {}
    for answer in run.answers:
        for kind, times in answer.repairs.items():
            repairs[kind] = repairs.get(kind, 0) + times
    results.append(
        BenchResult(
            f"clean speech repairs ({run.model.split(' (')[0]})",
            float(sum(repairs.values())),
            "repairs",
            ", ".join(f"{kind} {times}" for kind, times in sorted(repairs.items())) or "none",
            extra={"repairs": repairs},
        )
    )
    return results
