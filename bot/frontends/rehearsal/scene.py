"""The scene script a DM writes to rehearse a table without Discord.

A scene lists player lines (who speaks, what, when) and DM commands at given times. Player
lines are text (synthesized with a distinct local voice per player) or a recorded WAV file.
Times are seconds from the start of the scene; lines may overlap on purpose to exercise barge-in.

Example::

    title: Evening at the Rusty Flagon
    campaign: .            # campaign folder, relative to this file (default: the config's)
    dm_speaker: Dana       # Dana's lines come from the DM's voice lane (DM voice commands)
    players:
      Aria: {provider: piper, speed: 1.05}
      Bram: {provider: espeak, voice: en-us+m3}
    characters:            # the table calls Aria "Arin" (as /iam Arin does on Discord)
      Aria: Arin
    lines:
      - {at: 0.5, speaker: Aria, text: "Bartok, what's on tap tonight?"}
      - {at: 5, speaker: Dana, text: "Greymantle, take your time.",
         expect_command: tier deep for Greymantle}
      - {at: 7, speaker: Aria, text: "Greymantle, hello!", expect_tier: deep}
      - {at: 9, speaker: Bram, wav: recordings/bram.wav}
    dm:
      - {at: 15, tier: deep, npc: Greymantle, duration_s: 60}
      - {at: 30, mute: Bartok}
      - {at: 40, say: "The door bursts open!", npc: Bartok}
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.json_schema import SkipJsonSchema

from bot.frontends.rehearsal.approvals import ScriptedApproval
from campaigns.basics import GlyphoxaError, Tier
from campaigns.providers.voices import VoiceSettings

__all__ = ["DmCommand", "PlayerLine", "Scene", "load_scene", "player_voice"]


class _Strict(BaseModel):
    # Field docstrings become the schema's descriptions: the docs' scene reference is built
    # from Scene.model_json_schema().
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class PlayerLine(_Strict):
    at: float = Field(ge=0)
    """Seconds from the start of the scene when the player starts speaking."""
    speaker: str = Field(min_length=1, max_length=64)
    text: str | None = None
    """What the player says; synthesized with the player's voice."""
    wav: str | None = None
    """A recorded line instead of text (relative to the scene file); any rate, mono or stereo."""
    expect_npc: str | None = None
    """Optional: the NPC that should answer (checked in the report); ``nobody``: no NPC may
    answer (table talk, a name only talked about)."""
    expect_tools: list[str] = Field(default_factory=list)
    """Optional: tools the answer must run successfully (checked; needs ``expect_npc``)."""
    interrupt: bool = False
    """Talk over an NPC: start at ``at`` or later, once an NPC is audible (barge-in)."""
    expect_tier: Literal["fast", "standard", "deep"] | None = None
    """Optional: the effective tier of the turn that answers this line (checked)."""
    expect_command: str | None = None
    """Optional, for the DM speaker's lines: the DM voice command it must be taken for, e.g.
    ``tier deep for Greymantle``, ``mute Bartok``, ``stop all NPCs`` (checked)."""
    overlap: bool = False
    """Table talk: start at ``at`` (shifted with the scene) whatever else is going on, and
    never make other lines wait (players chatting among themselves at a full table)."""

    @model_validator(mode="after")
    def _text_or_wav(self) -> PlayerLine:
        if (self.text is None) == (self.wav is None):
            raise ValueError("a line needs exactly one of 'text' or 'wav'")
        if self.text is not None and not self.text.strip():
            raise ValueError("'text' is empty")
        if self.expect_tools and (not self.expect_npc or self.expects_nobody):
            raise ValueError("'expect_tools' needs 'expect_npc': whose answer runs them")
        if self.overlap and self.interrupt:
            raise ValueError("a line is either 'overlap' (table talk) or 'interrupt' (barge-in)")
        return self

    @property
    def expects_nobody(self) -> bool:
        """``expect_npc: nobody``: no NPC may answer this line."""
        return (self.expect_npc or "").strip().lower() == "nobody"


class DmCommand(_Strict):
    """One DM action: exactly one of ``tier``, ``mute``, ``unmute`` or ``say``."""

    at: float = Field(ge=0)
    tier: Literal["fast", "standard", "deep", "auto"] | None = None
    """Tier override (``auto`` clears it); ``npc`` limits it to one NPC."""
    duration_s: float | None = Field(default=None, gt=0)
    """How long a tier override lasts; empty: until changed."""
    mute: str | None = None
    """NPC name to mute, or ``all``."""
    unmute: str | None = None
    say: str | None = None
    """Make ``npc`` speak this line verbatim (DM puppeting)."""
    npc: str | None = None

    @model_validator(mode="after")
    def _one_action(self) -> DmCommand:
        actions = [a for a in ("tier", "mute", "unmute", "say") if getattr(self, a) is not None]
        if len(actions) != 1:
            raise ValueError("a DM command needs exactly one of: tier, mute, unmute, say")
        if self.say is not None and not self.npc:
            raise ValueError("'say' needs 'npc': who speaks the line")
        return self

    @property
    def action(self) -> str:
        for name in ("tier", "mute", "unmute", "say"):
            if getattr(self, name) is not None:
                return name
        raise AssertionError("validated")  # pragma: no cover

    @property
    def tier_value(self) -> Tier | None:
        """The override tier, or None for ``auto``."""
        return None if self.tier in (None, "auto") else Tier.parse(self.tier)

    def describe(self) -> str:
        if self.tier is not None:
            scope = f" for {self.npc}" if self.npc else ""
            until = f" for {self.duration_s:g}s" if self.duration_s else ""
            return f"tier {self.tier}{scope}{until}"
        if self.mute is not None:
            return f"mute {self.mute}"
        if self.unmute is not None:
            return f"unmute {self.unmute}"
        return f"say as {self.npc}: {self.say}"


class Scene(_Strict):
    title: str = "Rehearsal"
    campaign: str | None = None
    """Campaign folder relative to the scene file; empty: the configured campaign."""
    dm_speaker: str | None = Field(default=None, min_length=1, max_length=64)
    """The speaker who is the DM: their lines come from the DM's voice lane, so spoken commands
    ("Greymantle, take your time", "everyone stop") steer the table; anyone else saying the
    same words is an ordinary player turn."""
    players: dict[str, VoiceSettings] = Field(default_factory=dict)
    """Voice per player; players not listed get distinct voices automatically."""
    characters: dict[str, str] = Field(default_factory=dict)
    """The character each speaker plays (speaker -> character name): transcripts, NPC prompts
    and memory call the speaker by it, as ``/iam`` does at a Discord table. Speakers not
    listed go by their own name."""
    lines: list[PlayerLine] = Field(min_length=1)
    dm: list[DmCommand] = Field(default_factory=list)
    approvals: list[ScriptedApproval] = Field(default_factory=list)
    """The DM's answers when a tool call asks for approval
    (``bot.frontends.rehearsal.approvals``)."""
    tail_s: float = Field(default=60.0, ge=0)
    """After the last line, wait at most this long for NPCs to finish."""
    wait_for_answers: bool = True
    """A line (other than ``interrupt`` ones) waits until no NPC is thinking or speaking;
    later lines and DM commands shift by the same delay, so slow models keep the scene's
    shape instead of piling up turns."""
    base_dir: SkipJsonSchema[Path] = Field(default=Path("."), exclude=True)
    """The scene file's folder (set by :func:`load_scene`, never written in the file)."""

    @model_validator(mode="after")
    def _sorted(self) -> Scene:
        self.lines.sort(key=lambda line: line.at)
        self.dm.sort(key=lambda cmd: cmd.at)
        for line in self.lines:
            if line.expect_command and line.speaker != self.dm_speaker:
                raise ValueError(
                    f"line at {line.at:g}s: expect_command needs the speaker to be the "
                    f"scene's dm_speaker ({self.dm_speaker or 'none set'}), not {line.speaker}"
                )
        for speaker in self.characters:
            if speaker not in self.speakers():
                raise ValueError(
                    f"characters: {speaker} speaks no line; the speakers are "
                    + ", ".join(self.speakers())
                )
        return self

    def called(self, speaker: str) -> str:
        """The name the table calls ``speaker`` by: their character, else their own."""
        return self.characters.get(speaker, speaker)

    def speakers(self) -> list[str]:
        """Speakers in order of first appearance."""
        return list(dict.fromkeys(line.speaker for line in self.lines))

    def table_talkers(self) -> set[str]:
        """Speakers whose every line is ``overlap`` table talk (nobody waits for them)."""
        turn_takers = {line.speaker for line in self.lines if not line.overlap}
        return set(self.speakers()) - turn_takers

    def campaign_dir(self) -> Path | None:
        return None if self.campaign is None else (self.base_dir / self.campaign).resolve()

    def wav_path(self, line: PlayerLine) -> Path:
        assert line.wav is not None
        return (self.base_dir / line.wav).resolve()


#: Distinct local voices for players not given one: Piper joe at other speeds and pitches,
#: then espeak-ng voices. NPCs usually sound like unshifted joe, so players stay apart.
_PALETTE: tuple[VoiceSettings, ...] = (
    VoiceSettings(provider="piper", speed=1.1, pitch_shift=3.0),
    VoiceSettings(provider="espeak", voice="en-us+m3", speed=1.0),
    VoiceSettings(provider="piper", speed=0.95, pitch_shift=-3.0),
    VoiceSettings(provider="espeak", voice="en+f3", speed=1.0),
    VoiceSettings(provider="piper", speed=1.2, pitch_shift=5.0),
    VoiceSettings(provider="espeak", voice="en-gb+m5", speed=1.0),
)


def player_voice(scene: Scene, speaker: str) -> VoiceSettings:
    """The voice for ``speaker``: the scene's choice, else a free palette voice."""
    if speaker in scene.players:
        return scene.players[speaker]
    taken = list(scene.players.values())
    free = [voice for voice in _PALETTE if voice not in taken] or list(_PALETTE)
    unlisted = [s for s in scene.speakers() if s not in scene.players]
    index = unlisted.index(speaker) if speaker in unlisted else len(unlisted)
    return free[index % len(free)]


def load_scene(path: str | Path) -> Scene:
    """Read and validate a scene file; errors name the file and the offending entry."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GlyphoxaError(f"scene file not found: {path}") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        raise GlyphoxaError(f"{path}{where}: invalid YAML: {error}") from None
    if not isinstance(raw, dict):
        raise GlyphoxaError(f"{path}: a scene is a mapping with 'lines' (and optional 'dm')")
    try:
        scene = Scene.model_validate({**raw, "base_dir": path.resolve().parent})
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in error.errors()
        )
        raise GlyphoxaError(f"{path}: invalid scene: {problems}") from None
    for line in scene.lines:
        if line.wav is not None and not scene.wav_path(line).is_file():
            raise GlyphoxaError(f"{path}: line at {line.at:g}s: WAV file not found: {line.wav}")
    return scene
