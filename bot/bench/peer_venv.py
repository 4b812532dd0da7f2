"""A peer's own virtualenv: created on first use, reused after.

A peer framework (Pipecat) runs in a virtualenv of its own, so its dependency pins never touch
Glyphoxa's: ``~/.cache/glyphoxa/peer-<name>/<version>/`` (``$XDG_CACHE_HOME`` is honoured),
made with the ``venv`` module and filled by pip from the package index. The first run says what
it is doing and how long it took; later runs find the finished marker and reuse it. A failure
(no network, a build error) is one line naming the cause and the log holding pip's output.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import shutil
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from campaigns.basics import GlyphoxaError

__all__ = ["PeerPackage", "PeerUnavailable", "cache_root", "ensure_venv", "venv_python"]

_READY = ".glyphoxa-ready"


class PeerUnavailable(GlyphoxaError):
    """The peer cannot run here; the message says why in one line."""


@dataclass(frozen=True, slots=True)
class PeerPackage:
    """What a peer's virtualenv holds."""

    name: str
    """The peer's name on the command line (``--peer pipecat``)."""
    requirement: str
    """What pip installs, pinned: ``pipecat-ai[whisper,piper,openai]==1.14.0``."""
    version: str
    """The pinned version: the folder is keyed by it."""
    check: str
    """Python statements that must run in the finished virtualenv (its imports)."""
    size_note: str = ""
    """What the first install downloads, for the progress line."""


def cache_root() -> Path:
    """``~/.cache/glyphoxa`` (or under ``$XDG_CACHE_HOME``)."""
    base = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser() / "glyphoxa"


def venv_python(folder: Path) -> Path:
    return folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


@contextlib.asynccontextmanager
async def _locked(path: Path) -> AsyncIterator[None]:
    """One bench at a time creates a given virtualenv (another waits, then reuses it)."""
    with path.open("w") as handle:
        await asyncio.to_thread(fcntl.flock, handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


async def ensure_venv(
    package: PeerPackage, say: Callable[[str], None], *, root: Path | None = None
) -> Path:
    """The python of ``package``'s virtualenv, creating it first if needed.

    Raises:
        PeerUnavailable: the virtualenv cannot be made (the message says why).
    """
    home = (root or cache_root()) / f"peer-{package.name}"
    folder = home / package.version
    python = venv_python(folder)
    if _finished(folder, package):
        say(f"reusing {package.name} {package.version}'s virtualenv at {folder}")
        return python
    lock = home / f".{package.version}.lock"
    await asyncio.to_thread(lock.parent.mkdir, parents=True, exist_ok=True)
    async with _locked(lock):  # held while creating: a second bench waits here, then reuses it
        if _finished(folder, package):
            say(f"reusing {package.name} {package.version}'s virtualenv at {folder}")
            return python
        await _create(package, folder, home / f"install-{package.version}.log", say)
        (folder / _READY).write_text(package.requirement + "\n")
    return python


def _finished(folder: Path, package: PeerPackage) -> bool:
    """The virtualenv was made to the end for this very requirement."""
    marker = folder / _READY
    return (
        marker.is_file()
        and marker.read_text().strip() == package.requirement
        and venv_python(folder).exists()
    )


def _clear(folder: Path) -> None:
    if folder.exists():
        shutil.rmtree(folder)


async def _create(
    package: PeerPackage, folder: Path, log: Path, say: Callable[[str], None]
) -> None:
    started = time.monotonic()
    note = f", {package.size_note}" if package.size_note else ""
    say(f"creating {package.name} {package.version}'s own virtualenv at {folder} (first use "
        f"only{note}): python -m venv, then pip install {package.requirement}")  # fmt: skip
    await asyncio.to_thread(_clear, folder)  # an unfinished earlier attempt
    with open(log, "w", encoding="utf-8") as output:  # noqa: ASYNC230 (pip's log, opened once)
        await _run([sys.executable, "-m", "venv", str(folder)], output, "python -m venv", log)
        say(f"  virtualenv made in {time.monotonic() - started:.0f} s; pip is installing "
            f"{package.requirement} (pip's output: {log})")  # fmt: skip
        python = str(venv_python(folder))
        await _run([python, "-m", "pip", "install", "--disable-pip-version-check",
                    "--progress-bar", "off", package.requirement], output,
                   f"pip install {package.requirement}", log)  # fmt: skip
        await _run([python, "-c", package.check], output, "the import check", log)
    elapsed = time.monotonic() - started
    say(f"  {package.name} {package.version} installed in {elapsed // 60:.0f} min "
        f"{elapsed % 60:.0f} s; later runs reuse it")  # fmt: skip


async def _run(argv: list[str], output: IO[str], what: str, log: Path) -> None:
    try:
        process = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=output, stderr=asyncio.subprocess.STDOUT
        )
    except OSError as error:
        raise PeerUnavailable(f"{what} could not start: {error}") from None
    code = await process.wait()
    if code != 0:
        raise PeerUnavailable(
            f"{what} failed (exit {code}): {_last_error(log)}; full output in {log}"
        )


def _last_error(log: Path) -> str:
    """The line of the log that says what went wrong (pip's ERROR line, a network error)."""
    try:
        lines = [
            line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()
        ]
    except OSError:
        return "no output"
    for line in reversed(lines):
        if line.startswith("ERROR") or "Error" in line or "error:" in line:
            return line[:300]
    return lines[-1][:300] if lines else "no output"
