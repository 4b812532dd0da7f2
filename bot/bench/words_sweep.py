"""``glyphoxa bench words --sweep``: the embedded model's prompt and sampling, chosen by numbers.

Plays the words corpus (every third line with ``--quick``) on the bundled SmolLM2 once per
variant, side by side in one run, and reports for each how often clean speech had to repair
what the model wrote (labels, scaffolding, echoes, repeats, broken character), how often an
answer was asked for again or replaced by the fallback line, how many answers were grounded in
what was retrieved, and how long the answers were. The shipped defaults are the variant that
needs the fewest repairs without losing grounding (docs/performance.md, "What an NPC says").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bot.bench.result import BenchResult
from bot.bench.words import WordsRun, play_corpus
from npcs.schema import LlmOverrides, NpcDefinition

__all__ = ["VARIANTS", "Variant", "run_sweep"]

#: Repairs that mean the model wrote something that is not the NPC's line.
_MODEL_FAULTS = ("label", "scaffolding", "echo", "repeat", "broken character", "markdown",
                 "stage direction", "emoji")  # fmt: skip


@dataclass(frozen=True, slots=True)
class Variant:
    """One way of prompting and sampling the embedded model."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)
    npc_changes: Callable[[NpcDefinition], NpcDefinition] | None = None


def _without_examples(npc: NpcDefinition) -> NpcDefinition:
    return npc.model_copy(update={"example_lines": []})


def _temperature(value: float) -> Callable[[NpcDefinition], NpcDefinition]:
    def change(npc: NpcDefinition) -> NpcDefinition:
        return npc.model_copy(update={"llm": LlmOverrides(temperature=value)})

    return change


VARIANTS = (
    Variant("as shipped"),
    Variant("no example lines (few-shot off)", npc_changes=_without_examples),
    Variant("repeat_penalty 1.3", {"repeat_penalty": 1.3}),
    Variant("frequency_penalty 0.6", {"frequency_penalty": 0.6}),
    Variant("no stop sequences at speakers", {"stop_at_speakers": False}),
    Variant("temperature 0.3", npc_changes=_temperature(0.3)),
)


async def run_sweep(quick: bool) -> list[BenchResult]:
    results = []
    for variant in VARIANTS:
        run = await play_corpus(
            None, variant.name, quick=quick, options=variant.options,
            npc_changes=variant.npc_changes,
        )  # fmt: skip
        results.append(_result(variant, run))
    return results


def _result(variant: Variant, run: WordsRun) -> BenchResult:
    answered = [answer for answer in run.answers if answer.npc is not None]
    faults = sum(answer.repairs.get(kind, 0) for answer in answered for kind in _MODEL_FAULTS)
    regenerated = sum(answer.repairs.get("regenerated", 0) for answer in answered)
    fallbacks = sum(answer.repairs.get("fallback", 0) for answer in answered)
    grounded, world = run.rate("grounded")
    words = [len(answer.spoken.split()) for answer in answered]
    per_answer = faults / len(answered) if answered else 0.0
    return BenchResult(
        f"repairs per answer: {variant.name}",
        round(per_answer, 3),
        "repairs",
        f"{len(answered)} answers on the embedded model; asked again {regenerated}, fallback "
        f"{fallbacks}, grounded {grounded:.0%} of {world}, mean {_mean(words):.1f} words, "
        f"{run.seconds:.0f} s",
        extra={
            "regenerated": regenerated,
            "fallback": fallbacks,
            "grounded": round(grounded, 3),
            "mean_words": round(_mean(words), 1),
            "options": variant.options,
        },
    )


def _mean(values: list[int]) -> float:
    return sum(values) / len(values) if values else 0.0
