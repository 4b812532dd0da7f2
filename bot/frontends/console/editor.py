"""The NPC editor's checks and saves: ``glyphoxa check`` on the draft, then an atomic write.

A draft is checked exactly as ``glyphoxa check`` checks the campaign: ``run_check`` runs on a
shadow of the campaign folder (links to every file, the draft in place of the edited one), so
every rule (the file's own, names clashing with other NPCs, tool names, installed voices) gives
the same ``file:line:column: message``, with the real file's name. A problem ``check`` reports
in another file that only the draft brings (another NPC's name, a full-width lookalike of it)
is the draft's too: the campaign checked without the edited file tells which those are. A save
writes the file only when the draft brings no problem anywhere: to a temporary file beside it,
then ``os.replace``, so the campaign watcher of a running table never reads half a file and
reloads the NPC on its own.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.frontends.checking import run_check
from campaigns.basics import GlyphoxaError
from campaigns.yamlio import Issue
from npcs.campaign import YAML_SUFFIXES

__all__ = ["MAX_NPC_BYTES", "DraftReport", "check_draft", "npc_file", "save_draft"]

#: The largest NPC file the console accepts (a persona is a few kilobytes).
MAX_NPC_BYTES = 256 * 1024
_FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,100}$")


@dataclass(slots=True)
class DraftReport:
    """What ``check`` says of a draft, for the editor: problems and warnings of the file."""

    problems: list[Issue] = field(default_factory=list)
    warnings: list[Issue] = field(default_factory=list)
    caused: list[str] = field(default_factory=list)
    """Problems the draft makes in other campaign files (a name another NPC has): the
    campaign would fail ``check`` with it, so it is not saved either."""
    others: list[str] = field(default_factory=list)
    """Problems other campaign files have anyway (shown, never blamed on the draft)."""

    @property
    def ok(self) -> bool:
        return not self.problems and not self.caused


def npc_file(campaign_dir: Path, name: str) -> Path:
    """The NPC file ``name`` (``bartok.yaml``) of the campaign; refuses anything else.

    Raises:
        GlyphoxaError: a path (``../``, ``/``), a name that is no NPC file of ``npcs/``.
    """
    folder = (campaign_dir / "npcs").resolve()
    if not _FILE_NAME.match(name) or ".." in name or Path(name).suffix not in YAML_SUFFIXES:
        raise GlyphoxaError(
            f"npcs/{name}: not an NPC file of this campaign; NPC files are npcs/NAME.yaml"
        )
    try:
        path = (folder / name).resolve()
    except (OSError, RuntimeError):  # a symlink loop (RuntimeError before Python 3.13)
        raise GlyphoxaError(
            f"npcs/{name}: a symbolic link that leads in a circle; remove it"
        ) from None
    if path.parent != folder:
        raise GlyphoxaError(
            f"npcs/{name}: not an NPC file of this campaign; NPC files are npcs/NAME.yaml"
        )
    return path


def _size_problem(path: Path, text: str) -> Issue | None:
    size = len(text.encode("utf-8"))
    if size <= MAX_NPC_BYTES:
        return None
    return Issue(
        str(path), None, None,
        f"the file is {size // 1024} KB; an NPC file is at most {MAX_NPC_BYTES // 1024} KB",
    )  # fmt: skip


def check_draft(
    campaign_dir: Path, path: Path, text: str, *, config_path: Path | None
) -> DraftReport:
    """``glyphoxa check`` of the campaign with ``text`` as ``path`` (blocking: run in a
    worker thread)."""
    too_big = _size_problem(path, text)
    if too_big is not None:
        return DraftReport(problems=[too_big])
    campaign_dir = campaign_dir.resolve()
    report = _check_with(campaign_dir, path, text, config_path)
    without = _problems_without(campaign_dir, path, config_path)
    draft = DraftReport()
    real = str(campaign_dir)
    draft_file = str(path)
    for bucket, issues in ((draft.problems, report.issues), (draft.warnings, report.warnings)):
        for issue in issues:
            if issue.file == draft_file:
                bucket.append(issue)
            elif bucket is draft.problems and (issue.file, issue.message) not in without:
                draft.caused.append(str(issue))  # only the draft brings it: it is the draft's
            elif bucket is draft.problems and issue.file.startswith(real):
                draft.others.append(str(issue))
    return draft


def _check_with(campaign_dir: Path, path: Path, text: str | None, config_path: Path | None) -> Any:
    """``run_check`` of the campaign with ``text`` as ``path`` (None: without that file),
    its issues named with the real campaign's paths."""
    with tempfile.TemporaryDirectory(prefix="glyphoxa-draft-") as scratch:
        shadow = Path(scratch) / campaign_dir.name
        _shadow_campaign(campaign_dir, shadow, path, text)
        report = run_check(shadow, config_path=config_path)
        shadow_text, real = str(shadow), str(campaign_dir)
        for bucket in (report.issues, report.warnings):
            bucket[:] = [
                Issue(i.file.replace(shadow_text, real, 1), i.line, i.column, i.message, i.severity)
                for i in bucket
            ]
    return report


_WITHOUT: dict[tuple[str, str], tuple[tuple[Any, ...], frozenset[tuple[str, str]]]] = {}
"""The campaign's problems without one file, by that file, while no campaign file changes."""


def _problems_without(
    campaign_dir: Path, path: Path, config_path: Path | None
) -> frozenset[tuple[str, str]]:
    """Problems (file, message) the campaign has without the edited file: what the draft
    cannot be blamed for."""
    key = (str(path), str(config_path))
    signature = _folder_signature(campaign_dir, path, config_path)
    cached = _WITHOUT.get(key)
    if cached is not None and cached[0] == signature:
        return cached[1]
    report = _check_with(campaign_dir, path, None, config_path)
    found = frozenset((issue.file, issue.message) for issue in report.issues)
    if len(_WITHOUT) > 32:
        _WITHOUT.clear()
    _WITHOUT[key] = (signature, found)
    return found


def _folder_signature(campaign_dir: Path, skip: Path, config_path: Path | None) -> tuple[Any, ...]:
    """Name, modification time and size of every campaign file but ``skip`` (and the
    config's)."""
    found: list[Any] = []
    paths = [*campaign_dir.rglob("*")] + ([config_path] if config_path is not None else [])
    for entry in sorted(paths, key=str):
        if entry == skip:
            continue
        try:
            stat = entry.stat()
        except (OSError, RuntimeError):
            continue
        found.append((str(entry), stat.st_mtime_ns, stat.st_size))
    return tuple(found)


def _shadow_campaign(campaign_dir: Path, shadow: Path, path: Path, text: str | None) -> None:
    """A folder that reads as the campaign with the draft in place (None: without the edited
    file): links to everything else."""
    shadow.mkdir()
    for entry in campaign_dir.iterdir():
        if entry.name == "npcs":
            continue
        (shadow / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    npcs = shadow / "npcs"
    npcs.mkdir()
    source = campaign_dir / "npcs"
    if source.is_dir():
        for entry in source.iterdir():
            if entry.name != path.name:
                (npcs / entry.name).symlink_to(entry, target_is_directory=_is_dir(entry))
    if text is not None:
        (npcs / path.name).write_text(text, encoding="utf-8")


def _is_dir(entry: Path) -> bool:
    try:
        return entry.is_dir()
    except (OSError, RuntimeError):  # a symlink loop: check reports it as a file
        return False


def save_draft(
    campaign_dir: Path, path: Path, text: str, *, config_path: Path | None
) -> DraftReport:
    """Check ``text`` and write it over ``path`` only when it has no problem."""
    report = check_draft(campaign_dir, path, text, config_path=config_path)
    if not report.ok:
        return report
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        if path.exists():
            shutil.copymode(path, temporary)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return report
