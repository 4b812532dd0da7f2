"""The night's cost: every provider call's usage, priced, totalled per provider and per NPC,
checked against ``session.spend``'s limits and kept with the session in campaign memory.

Engines, the remote speech providers and the campaign memory's own model calls (the session's
summary, search embeddings) report :class:`~campaigns.providers.usage.Usage` to a sink from
:meth:`SpendMeter.sink` (one per configured provider: a local model's sink is free). The meter
prices each call from ``pricing`` (the defaults with the DM's prices over them), says once when
the soft limit is reached and runs the hard limit's action once (``on_soft`` / ``on_hard``,
wired by ``open_table``). Totals are written whole to the session's rows after each call, so a
resumed session reads them back and continues.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import PurePath
from typing import Any

from bot.settings.spend import PricingConfig, SpendConfig
from campaigns.providers.usage import Usage

__all__ = ["SERVICE_NAMES", "SpendMeter", "UsageRow", "cost_lines"]

log = logging.getLogger(__name__)

#: How each service is named to the DM.
SERVICE_NAMES = {
    "llm": "LLM",
    "realtime": "realtime",
    "tts": "voices",
    "stt": "speech recognition",
    "embeddings": "memory search",
}

Notice = Callable[[str], None]

#: Who a row serves when it serves no NPC: the players' recognition, or the campaign memory's
#: own calls (session summaries, search embeddings).
_NOBODYS = {"stt": "players (speech recognition)"}


@dataclass
class UsageRow:
    """One model's use for one NPC (``npc`` empty: nobody's: the players' recognition, or the
    campaign memory's summaries and search)."""

    service: str
    model: str
    npc: str
    calls: int = 0
    estimated_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    audio_input_tokens: int = 0
    audio_output_tokens: int = 0
    characters: int = 0
    audio_seconds: float = 0.0
    cost_usd: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


class SpendMeter:
    """Prices and totals one session's provider calls; see the module docstring."""

    def __init__(
        self,
        pricing: PricingConfig,
        limits: SpendConfig,
        *,
        on_soft: Notice | None = None,
        on_hard: Notice | None = None,
        on_unpriced: Notice | None = None,
    ) -> None:
        self.prices = pricing.merged()
        self.limits = limits
        self.on_soft = on_soft
        self.on_hard = on_hard
        self.on_unpriced = on_unpriced
        self.rows: dict[tuple[str, str, str], UsageRow] = {}
        self.soft_reached = False
        self.hard_reached = False
        self._unpriced: set[tuple[str, str]] = set()
        self._memory: Any = None
        self._session_id: str | None = None
        self._saving: asyncio.Task[None] | None = None
        self._dirty = False

    # -- recording ------------------------------------------------------------------------------
    def sink(self, *, free: bool) -> _ProviderSink:
        """Where one provider's calls report; ``free`` for a local model (it costs nothing)."""
        return _ProviderSink(self, free)

    def record(self, usage: Usage, *, free: bool = False) -> None:
        """Add one call's usage and its price; then check the limits and save."""
        npc = usage.npc or ""
        row = self.rows.get((usage.service, usage.model, npc))
        if row is None:
            row = self.rows[(usage.service, usage.model, npc)] = UsageRow(
                usage.service, usage.model, npc
            )
        row.calls += 1
        row.estimated_calls += int(usage.estimated)
        row.input_tokens += usage.input_tokens
        row.output_tokens += usage.output_tokens
        row.audio_input_tokens += usage.audio_input_tokens
        row.audio_output_tokens += usage.audio_output_tokens
        row.characters += usage.characters
        row.audio_seconds += usage.audio_seconds
        row.cost_usd += 0.0 if free else self._price(usage)
        self._check_limits()
        self._save_soon()

    @property
    def total_usd(self) -> float:
        return sum(row.cost_usd for row in self.rows.values())

    def _price(self, usage: Usage) -> float:
        prices = self.prices
        model = usage.model
        cost: float | None = None
        if usage.service == "llm" and (llm := prices.llm.get(model)) is not None:
            cost = (
                usage.input_tokens * llm.input_per_million
                + usage.output_tokens * llm.output_per_million
            ) / 1e6
        elif usage.service == "realtime" and (rt := prices.realtime.get(model)) is not None:
            cost = (
                usage.input_tokens * rt.input_per_million
                + usage.output_tokens * rt.output_per_million
                + usage.audio_input_tokens * rt.audio_input_per_million
                + usage.audio_output_tokens * rt.audio_output_per_million
            ) / 1e6
        elif usage.service == "tts" and (tts := prices.tts.get(model)) is not None:
            cost = usage.characters * tts.per_million_characters / 1e6
        elif usage.service == "stt" and (stt := prices.stt.get(model)) is not None:
            cost = usage.audio_seconds / 60.0 * stt.per_minute
        elif usage.service == "embeddings" and (emb := prices.embeddings.get(model)) is not None:
            cost = usage.input_tokens * emb.input_per_million / 1e6
        if cost is None:
            self._tell_unpriced(usage.service, model)
            return 0.0
        return cost

    def _tell_unpriced(self, service: str, model: str) -> None:
        if (service, model) in self._unpriced:
            return
        self._unpriced.add((service, model))
        message = (
            f"no price for the {SERVICE_NAMES.get(service, service)} model {model!r}: its use "
            f"is counted but costs nothing in /session cost; set pricing.{service}.{model} "
            "in glyphoxa.yaml"
        )
        log.warning("%s", message)
        if self.on_unpriced is not None:
            self.on_unpriced(message)

    def _check_limits(self) -> None:
        total = self.total_usd
        soft, hard = self.limits.soft, self.limits.hard
        if soft is not None and not self.soft_reached and total >= soft:
            self.soft_reached = True
            if self.on_soft is not None:
                self.on_soft(
                    f"this session has spent ${total:.2f}, past its ${soft:.2f} soft limit "
                    f"(session.spend.soft){self._hard_note()}; /session cost shows where"
                )
        if hard is not None and not self.hard_reached and total >= hard:
            self.hard_reached = True
            if self.on_hard is not None:
                self.on_hard(f"this session has spent ${total:.2f}, its hard limit is ${hard:.2f}")

    def _hard_note(self) -> str:
        hard = self.limits.hard
        return "" if hard is None else f"; at ${hard:.2f} the NPCs move to a cheaper model"

    # -- the session's record ---------------------------------------------------------------------
    async def resume(self, memory: Any, session_id: str | None) -> None:
        """Keep the totals with ``session_id`` in ``memory`` from now on, continuing what it
        already used (a resumed session). A resumed session already past the soft limit is
        not warned again; past the hard limit, the hard action runs again."""
        self._memory, self._session_id = memory, session_id
        if memory is None or session_id is None:
            return
        for saved in await memory.session_usage(session_id):
            row = UsageRow(**saved)
            self.rows[(row.service, row.model, row.npc)] = row
        total, soft = self.total_usd, self.limits.soft
        self.soft_reached = soft is not None and total >= soft
        self._check_limits()

    def _save_soon(self) -> None:
        self._dirty = True
        if self._memory is None or self._session_id is None:
            return
        if self._saving is None or self._saving.done():
            with contextlib.suppress(RuntimeError):  # no running loop: saved at close
                self._saving = asyncio.get_running_loop().create_task(
                    self._save(), name="table:spend-save"
                )

    async def _save(self) -> None:
        while self._dirty:
            self._dirty = False
            rows = [row.as_dict() for row in self.rows.values()]
            try:
                await self._memory.save_usage(self._session_id, rows)
            except Exception as error:  # the night goes on; the next call saves again
                log.warning("could not save the session's spend: %s", error)
                return

    async def aclose(self) -> None:
        """Write the last totals (the table is closing)."""
        if self._saving is not None:
            with contextlib.suppress(Exception):
                await self._saving
        if self._dirty and self._memory is not None and self._session_id is not None:
            await self._save()

    # -- reading ------------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """The night so far: total, per provider (service and model) and per NPC."""
        providers: dict[str, dict[str, Any]] = {}
        npcs: dict[str, float] = {}
        estimated = False
        for row in self.rows.values():
            name = _named(row)
            slot = providers.setdefault(name, {"cost_usd": 0.0, "calls": 0, "usage": ""})
            slot["cost_usd"] += row.cost_usd
            slot["calls"] += row.calls
            npc = row.npc or _NOBODYS.get(row.service, "campaign memory")
            npcs[npc] = npcs.get(npc, 0.0) + row.cost_usd
            estimated = estimated or row.estimated_calls > 0
        for name, slot in providers.items():
            slot["usage"] = _usage_text([r for r in self.rows.values() if _named(r) == name])
        return {
            "total_usd": self.total_usd,
            "soft_usd": self.limits.soft,
            "hard_usd": self.limits.hard,
            "hard_reached": self.hard_reached,
            "providers": dict(sorted(providers.items(), key=lambda kv: -kv[1]["cost_usd"])),
            "npcs": dict(sorted(npcs.items(), key=lambda kv: -kv[1])),
            "estimated": estimated,
        }


class _ProviderSink:
    """One provider's calls into the meter (free for a local model)."""

    def __init__(self, meter: SpendMeter, free: bool) -> None:
        self.meter = meter
        self.free = free

    def record(self, usage: Usage) -> None:
        self.meter.record(usage, free=self.free)


def _named(row: UsageRow) -> str:
    """``LLM gpt-4o-mini``; a local model file (the bundled server's) by its file name."""
    model = row.model
    if model.endswith(".gguf"):
        model = PurePath(model).name
    return f"{SERVICE_NAMES.get(row.service, row.service)} {model}"


def _usage_text(rows: list[UsageRow]) -> str:
    """What a provider's rows used, in its own units."""
    parts: list[str] = []
    tokens_in = sum(r.input_tokens for r in rows)
    tokens_out = sum(r.output_tokens for r in rows)
    audio_in = sum(r.audio_input_tokens for r in rows)
    audio_out = sum(r.audio_output_tokens for r in rows)
    characters = sum(r.characters for r in rows)
    seconds = sum(r.audio_seconds for r in rows)
    if tokens_in or tokens_out:
        parts.append(f"{tokens_in:,} tokens in, {tokens_out:,} out")
    if audio_in or audio_out:
        parts.append(f"{audio_in:,} audio tokens in, {audio_out:,} out")
    if characters:
        parts.append(f"{characters:,} characters")
    if seconds:
        parts.append(f"{seconds / 60:.1f} min of audio")
    return "; ".join(parts) or "nothing yet"


def cost_lines(summary: dict[str, Any]) -> list[str]:
    """The night's cost for the DM (``/session cost``, the rehearsal report), one fact a line."""
    limits = []
    if summary["soft_usd"] is not None:
        limits.append(f"soft limit ${summary['soft_usd']:.2f}")
    if summary["hard_usd"] is not None:
        reached = " (reached)" if summary["hard_reached"] else ""
        limits.append(f"hard limit ${summary['hard_usd']:.2f}{reached}")
    head = f"Cost so far: ${summary['total_usd']:.4f}"
    lines = [head + (f" ({', '.join(limits)})" if limits else "")]
    if not summary["providers"]:
        return [*lines, "No provider calls yet."]
    lines.append("By provider:")
    for name, slot in summary["providers"].items():
        lines.append(f"- {name}: ${slot['cost_usd']:.4f} ({slot['calls']} calls; {slot['usage']})")
    lines.append("By NPC:")
    lines += [f"- {npc}: ${cost:.4f}" for npc, cost in summary["npcs"].items()]
    if summary["estimated"]:
        lines.append(
            "Some calls reported no usage (cut off mid-answer, or a server that does not "
            "report it): their tokens are estimated from the text."
        )
    return lines
