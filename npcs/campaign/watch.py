"""Hot reload of NPC files while a session runs, by polling modification times.

Polling (no extra dependency, works on every filesystem including bind mounts) is cheap: a
campaign has a handful of NPC files and one ``stat`` each per interval. A file is re-read only
once its size and mtime have been stable for one poll, so a half-written save is not reported.

An invalid edit never takes the table down: the NPC keeps its last good definition and the
change is reported as ``invalid`` with every issue, so the DM can fix the file and save again.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from campaigns.yamlhints import yaml_warnings
from campaigns.yamlio import Issue, Loaded, YamlDocument, load_model
from npcs.campaign.model import Campaign, looks_like_copy, npc_files
from npcs.name_index import NameOwners
from npcs.schema import PROSE_LIST_FIELDS, NpcDefinition

__all__ = ["CampaignWatcher", "NpcChange", "NpcChecks"]

log = logging.getLogger(__name__)

ChangeKind = Literal["added", "updated", "removed", "invalid"]
NpcChecks = Callable[[NpcDefinition, Path, YamlDocument | None], list[Issue]]
_Signature = tuple[int, int]


@dataclass(frozen=True, slots=True)
class NpcChange:
    """One NPC file changed.

    ``npc`` is the new definition (added/updated), or for ``invalid`` the last good definition
    that stays in use (None if the file never loaded). ``previous_name`` is set when an edit
    renamed the NPC. ``issues`` of an added or updated NPC are warnings (YAML that reads
    legally but probably not as meant, as ``glyphoxa check`` reports it).
    """

    kind: ChangeKind
    path: Path
    name: str | None
    npc: NpcDefinition | None
    issues: tuple[Issue, ...] = ()
    previous_name: str | None = None


class CampaignWatcher:
    """Async iterator of :class:`NpcChange` for a loaded campaign; keeps ``campaign`` current.

    Usage::

        watcher = CampaignWatcher(campaign)
        async for change in watcher:      # runs until watcher.close() or the task is cancelled
            ...

    The consumer's task owns the polling; there is no background task to clean up.
    """

    def __init__(
        self, campaign: Campaign, *, interval_s: float = 0.25, checks: NpcChecks | None = None
    ) -> None:
        """``checks``: what an edited NPC must pass beyond its file and the name rule (the
        table checks that its voice is installed); an issue keeps the last good version."""
        self.campaign = campaign
        self.interval_s = interval_s
        self._checks = checks
        self._pending: deque[NpcChange] = deque()
        self._closed = False
        self._by_file: dict[Path, str] = {p: n for n, p in campaign.npc_files.items()}
        self._seen: dict[Path, _Signature] = {}
        self._candidates: dict[Path, _Signature] = {}
        for path in npc_files(campaign.path):
            signature = _signature(path)
            if signature is not None:
                self._seen[path] = signature

    def close(self) -> None:
        """End iteration at the next poll."""
        self._closed = True

    def __aiter__(self) -> CampaignWatcher:
        return self

    async def __anext__(self) -> NpcChange:
        while not self._pending:
            if self._closed:
                raise StopAsyncIteration
            await asyncio.sleep(self.interval_s)
            loaded = await asyncio.to_thread(self._read_changes)
            for path, result in loaded:
                self._apply(path, result)
        return self._pending.popleft()

    async def poll_once(self) -> list[NpcChange]:
        """One poll without waiting (changes still need one stable poll before they count)."""
        loaded = await asyncio.to_thread(self._read_changes)
        for path, result in loaded:
            self._apply(path, result)
        changes = list(self._pending)
        self._pending.clear()
        return changes

    def _read_changes(self) -> list[tuple[Path, Loaded[NpcDefinition] | None]]:
        """Runs in a worker thread: stat every file, re-read the settled changed ones."""
        current = {p: s for p in npc_files(self.campaign.path) if (s := _signature(p))}
        results: list[tuple[Path, Loaded[NpcDefinition] | None]] = []
        for path in sorted(set(self._seen) - set(current)):
            del self._seen[path]
            self._candidates.pop(path, None)
            results.append((path, None))
        for path, signature in sorted(current.items()):
            if self._seen.get(path) == signature:
                self._candidates.pop(path, None)
                continue
            if self._candidates.get(path) != signature:
                self._candidates[path] = signature  # wait one poll for the save to settle
                continue
            del self._candidates[path]
            self._seen[path] = signature
            results.append((path, load_model(path, NpcDefinition)))
        return results

    def _apply(self, path: Path, result: Loaded[NpcDefinition] | None) -> None:
        old_name = self._by_file.get(path)
        npcs = self.campaign.npcs
        if result is None:
            if old_name is None:
                return
            del self._by_file[path]
            npcs.pop(old_name, None)
            self.campaign.npc_files.pop(old_name, None)
            self._emit(NpcChange("removed", path, old_name, None))
            return
        issues = list(result.issues)
        npc = result.value
        if npc is not None:
            issues += _clash_issues(npc, path, result, self.campaign)
            if self._checks is not None and not issues:
                issues += self._checks(npc, path, result.document)
        if npc is None or issues:
            kept = npcs.get(old_name) if old_name else None
            self._emit(NpcChange("invalid", path, old_name, kept, tuple(issues)))
            return
        if old_name is not None and old_name != npc.name:
            npcs.pop(old_name, None)
            self.campaign.npc_files.pop(old_name, None)
        npcs[npc.name] = npc
        self.campaign.npc_files[npc.name] = path
        self._by_file[path] = npc.name
        kind: ChangeKind = "added" if old_name is None else "updated"
        previous = old_name if old_name not in (None, npc.name) else None
        warnings = yaml_warnings(result.document, PROSE_LIST_FIELDS) if result.document else []
        self._emit(NpcChange(kind, path, npc.name, npc, tuple(warnings), previous))

    def _emit(self, change: NpcChange) -> None:
        if change.kind == "invalid":
            log.warning(
                "%s: invalid edit, keeping the last good definition:\n%s",
                change.path,
                "\n".join(str(i) for i in change.issues),
            )
        else:
            log.info("NPC %s %s from %s", change.name, change.kind, change.path.name)
            for warning in change.issues:
                log.warning("%s", warning)
        self._pending.append(change)


def _clash_issues(
    npc: NpcDefinition, path: Path, result: Loaded[NpcDefinition], campaign: Campaign
) -> list[Issue]:
    """The edited NPC's names that an NPC of another file already owns (the rule ``check``
    applies): a copy of a file saved beside it is refused, never a silent replacement."""
    owners = NameOwners()
    for name, other_path in campaign.npc_files.items():
        other = campaign.npcs.get(name)
        if other_path == path or other is None:
            continue
        for word in other.names():
            owners.claim(str(other_path), word)
    issues = []
    for index, word in enumerate(npc.names()):
        clash = owners.claim(str(path), word)
        if clash is None:
            continue
        other_path = Path(clash[0])
        other_name = next((n for n, p in campaign.npc_files.items() if p == other_path), "?")
        loc: tuple[str | int, ...] = ("name",) if index == 0 else ("aliases", index - 1)
        message = f"'{word}' is already a name or alias of {other_name} ({other_path})"
        if index == 0 and word == other_name and looks_like_copy(path):
            message += "; a backup copy? move it out of npcs/ or rename it to end in .bak"
        if result.document is not None:
            issues.append(result.document.issue(loc, message))
        else:
            issues.append(Issue(str(path), None, None, message))
    return issues


def _signature(path: Path) -> _Signature | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size
