"""The scripted game night of ``glyphoxa bench soak``: who says what, and what goes wrong, when.

Times are simulated seconds. The night is built from one block per simulated hour (``--quick``:
one compressed 20-minute block), each with the disruptions a real night brings: players joining
late, one dropping out and coming back (two DAVE epoch changes), a client left on a stale epoch
talking over a healthy player, bursts of 10 % packet loss, the DM muting an NPC and overriding a
tier, and a voice server move. The first block also has a stall (the voice server stops relaying
to the bot while a player talks: the watchdog must rejoin) and an idle stretch (nobody talks for
a while, in wall-clock time, behind a relay that forgets silent endpoints; the next player must
be heard). The same seed gives the same night.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from campaigns.providers.voices import VoiceSettings

__all__ = ["PLAYERS", "Action", "Line", "SoakEvent", "night"]

#: Player name -> the Piper voice variant they speak with.
PLAYERS: dict[str, VoiceSettings] = {
    "Arin": VoiceSettings(provider="piper", speed=1.1, pitch_shift=3.0),
    "Tobble": VoiceSettings(provider="piper", speed=1.0, pitch_shift=-3.0),
    "Mirela": VoiceSettings(provider="piper", speed=1.05, pitch_shift=5.0),
    # The lowest voice; at -5 Whisper tiny.en heard "Bartok" as "Alright" even from clean audio.
    "Dusk": VoiceSettings(provider="piper", speed=0.95, pitch_shift=-3.5),
    "Quill": VoiceSettings(provider="piper", speed=1.0, pitch_shift=1.0),
}
_AT_START = ("Arin", "Tobble", "Mirela")

ADDRESSED: dict[str, tuple[str, ...]] = {
    "Bartok": (
        "Bartok, what's on tap tonight?",
        "Bartok, is the stew any good?",
        "Bartok, how much for a room?",
        "Bartok, another ale please.",
        "Bartok, got any rumors for me?",
    ),
    "Greymantle": (
        "Greymantle, tell me about the Black Candle.",
        "Greymantle, what happened at the old mill?",
    ),
    "Captain Vessa": ("Captain Vessa, any news from the docks?",),
}
CHATTER = (
    "I think we should rest first.",
    "Pass me the dice, would you?",
    "That sounds like a trap to me.",
)


@dataclass(frozen=True, slots=True)
class Line:
    at: float
    speaker: str
    text: str
    npc: str | None
    """The NPC the line addresses (None: table talk nobody should answer)."""
    overlap: bool = False
    """Spoken together with the next line (two players at once)."""


@dataclass(frozen=True, slots=True)
class Action:
    at: float
    kind: str
    """join, leave, stale, resync, loss_on, loss_off, mute, unmute, override, clear, move,
    stall, idle."""
    who: str = ""
    """A player (join/leave/stale/resync/stall) or an NPC (mute/unmute/override/clear)."""


SoakEvent = Line | Action


def _block(
    start: float, length: float, rng: random.Random, *, first: bool, quick: bool
) -> list[SoakEvent]:
    """One block of the night; every disruption at a fixed fraction of it. ``quick`` keeps
    every disruption and the lines that test it (12 addressed), and drops the rest."""

    def at(fraction: float) -> float:
        return start + fraction * length

    events: list[SoakEvent] = []

    def talk(fraction: float, speaker: str, npc: str | None, *, overlap: bool = False,
             core: bool = True, text: str = "") -> None:  # fmt: skip
        # A line with its own text leaves the seeded choices of the others as they were.
        text = text or rng.choice(ADDRESSED[npc] if npc else CHATTER)
        if core or not quick:
            events.append(Line(at(fraction), speaker, text, npc, overlap))

    def act(fraction: float, kind: str, who: str = "") -> None:
        events.append(Action(at(fraction), kind, who))

    talk(0.02, "Arin", "Bartok")
    talk(0.05, "Tobble", "Greymantle")
    talk(0.08, "Mirela", None, core=False)
    if first:  # late joins
        act(0.10, "join", "Dusk")
        talk(0.11, "Dusk", "Bartok")
        act(0.15, "join", "Quill")
        talk(0.16, "Quill", "Captain Vessa")
    act(0.20, "loss_on")
    talk(0.21, "Quill", "Bartok", core=False)
    talk(0.23, "Arin", "Greymantle")
    act(0.25, "loss_off")
    act(0.30, "mute", "Bartok")
    talk(0.31, "Tobble", "Bartok")  # muted: must stay silent
    talk(0.33, "Dusk", "Captain Vessa", core=False)
    act(0.35, "unmute", "Bartok")
    talk(0.36, "Dusk", "Bartok", core=False)
    # A drop and a rejoin: two commits, two new epochs. Mirela's client misses them.
    act(0.40, "stale", "Mirela")
    act(0.41, "leave", "Tobble")
    talk(0.43, "Arin", "Bartok")
    act(0.45, "join", "Tobble")
    talk(0.47, "Tobble", "Bartok")
    talk(0.50, "Mirela", "Bartok", overlap=True)  # undecryptable, over a healthy player
    talk(0.50, "Quill", "Greymantle")
    talk(0.53, "Mirela", None, overlap=True, core=False)
    talk(0.53, "Arin", "Bartok", core=False)
    act(0.56, "resync", "Mirela")
    talk(0.57, "Mirela", "Captain Vessa")
    act(0.60, "override", "Greymantle")
    talk(0.61, "Tobble", "Greymantle")
    act(0.65, "clear", "Greymantle")
    talk(0.66, "Quill", None)
    act(0.70, "move")
    talk(0.72, "Arin", "Bartok")
    talk(0.75, "Dusk", "Greymantle", core=False)
    act(0.78, "loss_on")
    talk(0.80, "Mirela", "Bartok")
    act(0.83, "loss_off")
    if first:
        act(0.84, "stall", "Quill")  # Quill talks; nothing reaches the bot until it rejoins
        talk(0.845, "Mirela", "Bartok", text="Bartok, is the stew any good?")
        act(0.87, "idle")  # nobody talks for a while (wall-clock time)
        talk(0.875, "Tobble", "Bartok", text="Bartok, what's on tap tonight?")
    talk(0.86, "Quill", "Bartok", core=False)
    talk(0.90, "Tobble", None, core=False)
    talk(0.94, "Arin", "Captain Vessa", core=False)
    return events


def night(hours: float, *, quick: bool = False, seed: int = 16) -> list[SoakEvent]:
    """The whole night, sorted by time (stable: overlapping lines keep their order)."""
    rng = random.Random(seed)
    if quick:
        return _block(0.0, 20 * 60.0, rng, first=True, quick=True)
    blocks = max(1, round(hours))
    length = hours * 3600.0 / blocks
    events: list[SoakEvent] = []
    for index in range(blocks):
        events += _block(index * length, length, rng, first=index == 0, quick=False)
    return sorted(events, key=lambda event: event.at)


def players_at_start() -> tuple[str, ...]:
    return _AT_START
