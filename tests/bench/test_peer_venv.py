"""The peer's own virtualenv: made on first use (saying what and how long), reused after, and
when it cannot be made (here: no package index) the bench says why in one line and reports a
row instead of a traceback. Real ``venv`` and pip, in a temporary cache folder."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from bot.bench.peer import compare_with_peer
from bot.bench.peer_venv import PeerPackage, ensure_venv, venv_python

pytestmark = pytest.mark.slow


@pytest.fixture
def offline_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of our own, and pip with no package index to reach."""
    empty = tmp_path / "no-wheels"
    empty.mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(empty))
    return tmp_path / "cache" / "glyphoxa"


async def test_a_peer_that_cannot_be_installed_is_one_row_saying_why(offline_cache: Path) -> None:
    said: list[str] = []
    rows = await compare_with_peer("pipecat", quick=True, say=said.append)
    assert len(rows) == 1 and math.isnan(rows[0].value)
    folder = offline_cache / "peer-pipecat" / "1.14.0"
    assert said[0].startswith(f"creating pipecat 1.14.0's own virtualenv at {folder} (first use")
    method = rows[0].method
    assert "\n" not in method
    assert method.startswith(
        "pipecat could not run: pip install pipecat-ai[whisper,piper,openai]==1.14.0 failed "
        "(exit 1): ERROR: "
    )
    assert method.endswith(f"full output in {offline_cache / 'peer-pipecat'}/install-1.14.0.log")
    assert said[-1] == f"pipecat: {method.removeprefix('pipecat could not run: ')}"


async def test_the_virtualenv_is_made_once_then_reused(offline_cache: Path) -> None:
    # pip is in every new virtualenv: installing it needs no index, as a cached wheel would
    package = PeerPackage("tiny", "pip", "0.1", "import pip")
    said: list[str] = []
    python = await ensure_venv(package, said.append)
    folder = offline_cache / "peer-tiny" / "0.1"
    assert python == venv_python(folder) and python.exists()
    assert said[0].startswith(f"creating tiny 0.1's own virtualenv at {folder}")
    assert said[-1].startswith("  tiny 0.1 installed in ") and said[-1].endswith(
        "later runs reuse it"
    )
    said.clear()
    assert await ensure_venv(package, said.append) == python
    assert said == [f"reusing tiny 0.1's virtualenv at {folder}"]
