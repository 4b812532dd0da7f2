"""The NPC editor's checks and saves: ``glyphoxa check`` on the draft, then an atomic write.

A draft is checked exactly as ``glyphoxa check`` checks the campaign: ``run_check`` runs on a
shadow of the campaign folder (links to every file, the draft in place of the edited one), so
every rule (the file's own, names clashing with other NPCs, tool names, installed voices) gives
the same ``file:line:column: message``, with the real file's name. A save writes the file only
when the draft has no problem: to a temporary file beside it, then ``os.replace``, so the
campaign watcher of a running table never reads half a file and reloads the NPC on its own.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from bot.commands.check import run_check
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
    others: list[str] = field(default_factory=list)
    """Problems of other campaign files (shown, never blamed on the draft)."""

    @property
    def ok(self) -> bool:
        return not self.problems


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
    path = (folder / name).resolve()
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
    with tempfile.TemporaryDirectory(prefix="glyphoxa-draft-") as scratch:
        shadow = Path(scratch) / campaign_dir.name
        _shadow_campaign(campaign_dir, shadow, path, text)
        report = run_check(shadow, config_path=config_path)
    draft = DraftReport()
    real = str(campaign_dir)
    shadow_text = str(shadow)
    draft_file = str(path)
    for bucket, issues in ((draft.problems, report.issues), (draft.warnings, report.warnings)):
        for issue in issues:
            file = issue.file.replace(shadow_text, real, 1)
            moved = Issue(file, issue.line, issue.column, issue.message, issue.severity)
            if file == draft_file:
                bucket.append(moved)
            elif bucket is draft.problems and file.startswith(real):
                draft.others.append(str(moved))
    return draft


def _shadow_campaign(campaign_dir: Path, shadow: Path, path: Path, text: str) -> None:
    """A folder that reads as the campaign with the draft in place: links to everything else."""
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
            if entry.resolve() != path:
                (npcs / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    (npcs / path.name).write_text(text, encoding="utf-8")


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
