"""The DM's steering and the tier decisions in rehearsal outputs: per-line checks of
``expect_tier`` / ``expect_command`` and report notes listing what the DM did (and, for voice
commands, the words heard), so a report shows a DM voice command working end to end."""

from __future__ import annotations

from typing import Any

from bot.frontends.rehearsal.scene import PlayerLine

__all__ = ["dm_notes", "tier_checks"]

_COMMAND = "DM voice command: "


def tier_checks(line: PlayerLine, match: dict[str, Any] | None) -> list[tuple[str, str, str, bool]]:
    """(what, expected, got, ok) for a line's ``expect_tier`` and ``expect_command``, given
    the first ``routed`` transcript record of its speaker after the line started."""
    out: list[tuple[str, str, str, bool]] = []
    if line.expect_tier:
        tier = match.get("tier") if match else None
        got = f"{tier} ({match['tier_reason']})" if match and tier else "no turn"
        out.append(("tier", line.expect_tier, got, tier == line.expect_tier))
    if line.expect_command:
        reason = (match.get("reason") if match else None) or ""
        got = reason.removeprefix(_COMMAND) if reason.startswith(_COMMAND) else "no command"
        out.append(("DM command", line.expect_command, got, got == line.expect_command))
    return out


def dm_notes(records: list[dict[str, Any]]) -> list[str]:
    """One line per DM action in the transcript: when, what, and by voice, by the DM in the
    console or by the scene's script."""
    notes = []
    for record in records:
        if record["type"] != "dm":
            continue
        at = f"{record['t']:.1f}s" if record.get("t") is not None else "?"
        if record.get("heard"):
            source = f"by voice, heard \u201c{record['heard']}\u201d"
        elif record.get("by"):
            source = f"the DM, in the {record['by']}"
        else:
            source = "scripted"
        notes.append(f"DM {at}: {record['action']} {record['detail']} ({source})")
    return notes
