"""KV snapshots in the bundled server, on the real SmolLM2 model in-process: a restored
snapshot computes exactly what a full evaluation computes, and only pays off when it saves
enough evaluation."""

from __future__ import annotations

import numpy as np
import pytest

llama_cpp = pytest.importorskip("llama_cpp")

from npcs.inference.prefix_cache import PrefixCache  # noqa: E402
from npcs.inference.server import find_smollm2_gguf  # noqa: E402

# In a child process: a llama.cpp build this CPU cannot run fails these tests, not the run.
pytestmark = [pytest.mark.llm, pytest.mark.isolated]


@pytest.fixture(scope="module")
def llama():  # type: ignore[no-untyped-def]
    return llama_cpp.Llama(
        model_path=str(find_smollm2_gguf()), n_ctx=1024, n_threads=1, verbose=False
    )


def tokens(llama, text: str) -> list[int]:  # type: ignore[no-untyped-def]
    return llama.tokenize(text.encode(), special=True)


def last_logits(llama) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The logits after the last evaluated token (llama.cpp's output buffer)."""
    return np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(llama.n_vocab(),)).copy()


def test_a_restored_persona_computes_what_a_full_evaluation_computes(llama) -> None:  # type: ignore[no-untyped-def]
    cache = PrefixCache(min_gain=16, min_new=32)
    bartok = tokens(llama, "<|im_start|>system\n" + "You are Bartok, a dwarf barkeep. " * 12)
    sage = tokens(llama, "<|im_start|>system\n" + "You are Greymantle, an old sage. " * 12)
    turn = tokens(llama, "<|im_end|>\n<|im_start|>user\nWhat's on tap?<|im_end|>\n")
    llama.reset()
    llama.eval(bartok)
    cache.remember(llama)
    llama.reset()
    llama.eval(sage)
    cache.remember(llama)
    assert cache.saves == 2

    cache.prepare(llama, bartok + turn)  # the context holds the sage: restore Bartok
    assert cache.restores == 1
    assert llama.n_tokens == len(bartok) and llama._input_ids.tolist() == bartok
    llama.eval(turn)
    restored = last_logits(llama)
    assert np.abs(restored).max() > 1.0  # real logits, not an empty row
    llama.reset()
    llama.eval(bartok + turn)
    assert np.allclose(restored, last_logits(llama), atol=1e-3)

    cache.prepare(llama, bartok + turn)  # the context already holds it: nothing to restore
    assert cache.restores == 1
    cache.remember(llama)  # only len(turn) new tokens: not worth a snapshot
    assert cache.saves == 2


def test_old_snapshots_are_evicted_beyond_capacity(llama) -> None:  # type: ignore[no-untyped-def]
    cache = PrefixCache(capacity_bytes=1, min_new=1)
    for persona in ("a smith", "a guard", "a thief"):
        llama.reset()
        llama.eval(tokens(llama, f"You are {persona}. " * 10))
        cache.remember(llama)
    assert cache.saves == 3 and len(cache._snapshots) == 1  # the newest one stays
