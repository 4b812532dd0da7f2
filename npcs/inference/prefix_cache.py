"""KV-cache snapshots of evaluated prompts, so each NPC's long prompt prefix is evaluated once.

One local llama.cpp context serves every NPC, so a Bartok turn after a Greymantle turn would
evaluate Bartok's persona and tools again (~1 s on one core). llama-cpp-python's own
``--cache`` restores a snapshot whenever it is one token longer than what the context holds and
copies the whole logits matrix (100 MB) with every snapshot, which costs more than it
saves. This cache keeps only the KV state (~23 kB per token
for SmolLM2-135M), restores it only when that saves at least ``min_gain`` tokens of evaluation,
and takes a snapshot only when a request evaluated ``min_new`` tokens that no snapshot holds.
"""

from __future__ import annotations

import ctypes
import logging
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import llama_cpp

__all__ = ["PrefixCache"]

log = logging.getLogger(__name__)


def _common(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


@dataclass(frozen=True, slots=True)
class _Snapshot:
    tokens: tuple[int, ...]
    data: bytes


class PrefixCache:
    """LRU of context snapshots keyed by their token sequence.

    Args:
        capacity_bytes: evict the least recently used snapshots beyond this.
        min_gain: restore a snapshot only if it covers this many more prompt tokens than the
            context already holds (a restore costs about as much as evaluating ~5 tokens).
        min_new: take a snapshot only if the context holds this many tokens beyond the
            longest snapshot that matches it.
    """

    def __init__(
        self, capacity_bytes: int = 512 << 20, min_gain: int = 16, min_new: int = 48
    ) -> None:
        self.capacity_bytes = capacity_bytes
        self.min_gain = min_gain
        self.min_new = min_new
        self._snapshots: OrderedDict[tuple[int, ...], _Snapshot] = OrderedDict()
        self._bytes = 0
        self.restores = 0
        self.saves = 0

    def _best(self, tokens: Sequence[int]) -> tuple[_Snapshot | None, int]:
        best, length = None, 0
        for snapshot in self._snapshots.values():
            common = _common(snapshot.tokens, tokens)
            if common > length:
                best, length = snapshot, common
        return best, length

    def prepare(self, llama: llama_cpp.Llama, prompt_tokens: Sequence[int]) -> None:
        """Before evaluating ``prompt_tokens``: restore the snapshot that saves the most."""
        held = _common(llama._input_ids.tolist(), prompt_tokens)
        best, length = self._best(prompt_tokens)
        if best is None or length - held < self.min_gain:
            return
        started = time.perf_counter()
        buffer = (ctypes.c_uint8 * len(best.data)).from_buffer_copy(best.data)
        llama_cpp.llama_state_set_data(llama._ctx.ctx, buffer, len(best.data))
        count = len(best.tokens)
        llama.input_ids[:count] = best.tokens
        llama.n_tokens = count
        self._snapshots.move_to_end(best.tokens)
        self.restores += 1
        log.debug(
            "restored %d tokens (%d reused) in %.1f ms",
            count,
            length,
            (time.perf_counter() - started) * 1000,
        )

    def remember(self, llama: llama_cpp.Llama) -> None:
        """After a request: snapshot the context if it holds enough that no snapshot has."""
        tokens = tuple(llama._input_ids.tolist())
        _, length = self._best(tokens)
        if len(tokens) - length < self.min_new:
            return
        started = time.perf_counter()
        ctx = llama._ctx.ctx
        size = llama_cpp.llama_state_get_size(ctx)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_get_data(ctx, buffer, size)
        snapshot = _Snapshot(tokens, bytes(memoryview(buffer)[:written]))
        self._snapshots[tokens] = snapshot
        self._bytes += len(snapshot.data)
        while self._bytes > self.capacity_bytes and len(self._snapshots) > 1:
            _, old = self._snapshots.popitem(last=False)
            self._bytes -= len(old.data)
        self.saves += 1
        log.debug(
            "saved %d tokens (%.1f MB) in %.1f ms",
            len(tokens),
            len(snapshot.data) / 1e6,
            (time.perf_counter() - started) * 1000,
        )
