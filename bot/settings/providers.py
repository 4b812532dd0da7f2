"""Models of ``glyphoxa.yaml``'s ``providers`` section: each service's provider and its options.

Every provider section is ``{name, model, base_url, api_key, options}``; ``options`` is a model of
its own per service (``LlmOptions``, ``SttOptions``, ``TtsOptions``, ``RealtimeOptions``,
``EmbeddingsOptions``) that forbids unknown keys, so a misspelt option is refused at load with
its file and line and the closest known name, like every other key of the config. An option
that only one implementation reads (the bundled LLM server's ``n_ctx``, faster-whisper's
``cpu_threads``) is refused beside a provider that would ignore it. A provider ``name`` is one
that exists for its service (``name: olama`` is refused with the choices, the closest one and,
for a known OpenAI-compatible server such as Ollama, the ``name: openai`` and ``base_url`` that
reach it), so a typo never silently means OpenAI's cloud.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from campaigns.basics import Tier, TierName
from campaigns.suggest import closest

__all__ = [
    "OPENAI_COMPATIBLE_SERVERS",
    "PROVIDER_NAMES",
    "EmbeddingsOptions",
    "EmbeddingsProvider",
    "LlmOptions",
    "LlmProvider",
    "ProviderConfig",
    "RealtimeOptions",
    "RealtimeProvider",
    "RemoteOptions",
    "SttOptions",
    "SttProvider",
    "TtsOptions",
    "TtsProvider",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


LlmName = Literal["local", "openai"]
SttName = Literal["faster-whisper", "openai"]
TtsName = Literal["piper", "espeak", "openai"]
RemoteName = Literal["openai"]

#: Service -> the provider names that exist for it (the ``Literal`` of its ``name``).
PROVIDER_NAMES: dict[str, tuple[str, ...]] = {
    "llm": ("local", "openai"),
    "stt": ("faster-whisper", "openai"),
    "tts": ("piper", "espeak", "openai"),
    "realtime": ("openai",),
    "embeddings": ("openai",),
}

#: Servers that speak OpenAI's API, as a DM may name them, and the ``base_url`` that is theirs
#: by default: ``name: ollama`` is answered with ``name: openai`` and this URL.
OPENAI_COMPATIBLE_SERVERS: dict[str, tuple[str, str]] = {
    "ollama": ("Ollama", "http://localhost:11434/v1"),
    "vllm": ("vLLM", "http://localhost:8000/v1"),
    "lm-studio": ("LM Studio", "http://localhost:1234/v1"),
    "lmstudio": ("LM Studio", "http://localhost:1234/v1"),
    "llama.cpp": ("llama.cpp's server", "http://localhost:8080/v1"),
    "llamacpp": ("llama.cpp's server", "http://localhost:8080/v1"),
    "groq": ("Groq", "https://api.groq.com/openai/v1"),
    "openrouter": ("OpenRouter", "https://openrouter.ai/api/v1"),
    "together": ("Together", "https://api.together.xyz/v1"),
    "mistral": ("Mistral", "https://api.mistral.ai/v1"),
}


def _or_list(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


_KINDS = {
    "llm": "an LLM provider",
    "stt": "a speech recognition (stt) provider",
    "tts": "a voice (tts) provider",
    "realtime": "a realtime provider",
    "embeddings": "an embeddings provider",
}
_SERVED = ("llm", "embeddings")
"""The services an OpenAI-compatible server of one's own usually answers (chat, embeddings)."""


def unknown_provider_message(service: str, given: str) -> str:
    """Why ``given`` is not a provider of ``service`` and what to write instead."""
    names = PROVIDER_NAMES[service]
    message = f"'{given}' is not {_KINDS[service]}; choose {_or_list(names)}"
    best = closest(given, names)
    if best is not None:
        return f"{message}; did you mean '{best}'?"
    key = given.strip().lower()
    server = key if key in OPENAI_COMPATIBLE_SERVERS else closest(key, OPENAI_COMPATIBLE_SERVERS)
    if server is not None and service in _SERVED:
        label, url = OPENAI_COMPATIBLE_SERVERS[server]
        return (
            f"{message}; {label} speaks OpenAI's API: write name: openai and base_url: {url} "
            "(or where yours listens)"
        )
    return message


def _known_name(service: str, value: Any) -> Any:
    if isinstance(value, str) and value not in PROVIDER_NAMES[service]:
        raise ValueError(unknown_provider_message(service, value))
    return value


class RemoteOptions(_Strict):
    """How a service talks to an inference server of its own (``openai``, or ``local`` with a
    ``base_url``); empty: the service's default (``npcs.inference.pools.DEFAULTS``)."""

    timeout_s: float | None = Field(default=None, gt=0)
    """Per request: the longest wait for the next bytes of an answer (60 s for the LLM, 15 s for
    speech)."""
    connect_timeout_s: float | None = Field(default=None, gt=0)
    """The longest wait for a connection (3 s)."""
    retries: int | None = Field(default=None, ge=0)
    """Extra attempts after a 408/429/5xx answer or a refused connection (2)."""
    backoff_s: float | None = Field(default=None, ge=0)
    """First retry delay, doubling each time, with up to 25 % jitter (0.25 s)."""
    max_backoff_s: float | None = Field(default=None, ge=0)
    """The longest retry delay, ``Retry-After`` included (2 s)."""
    per_table: int | None = Field(default=None, ge=1)
    """Requests one table may have in flight to this server (4 for the LLM and TTS, 2 for STT),
    so a busy table cannot starve the others."""
    pool_size: int | None = Field(default=None, ge=1)
    """Connections to this server, shared by every table of the process (100)."""


_BUNDLED_SERVER = ("model_path", "n_ctx", "n_threads", "prompt_cache", "nice")


class LlmOptions(RemoteOptions):
    """``providers.llm.options``: the bundled server, how answers are produced, and (for an
    inference server of its own) the connection settings."""

    model_path: str | None = None
    """Bundled server: a GGUF of your own; empty: the bundled SmolLM2."""
    n_ctx: int = 2048
    """Bundled server: the context window in tokens."""
    n_threads: int = Field(default=1, ge=1)
    """Bundled server: CPU threads; more only where cores are spare (``glyphoxa bench llm``):
    speech recognition and the voices share them."""
    prompt_cache: bool = True
    """Bundled server: keep KV snapshots of each NPC's prompt prefix."""
    nice: int = 10
    """Bundled server: its CPU priority below the bot's, so the voices and the ears go first."""
    speculate: bool = True
    """Start answering at the player's pause, before the final transcript; dropped if the words
    change."""
    prefill: bool | None = None
    """Evaluate the prompt while the player is still talking; empty: on for ``local``, off for
    cloud APIs (they cache prefixes themselves and bill each request)."""
    warm_up: bool | None = None
    """Evaluate each NPC's stable prompt prefix when the table opens; empty: on for the bundled
    server."""
    max_tool_depth: int | None = Field(default=None, ge=1)
    """Rounds of tool calls per turn; empty: 2 for ``local``, 4 otherwise."""
    stream_tool_rounds: bool = True
    """Stream the rounds that may call tools, so a spoken answer starts at once."""
    stop_at_speakers: bool | None = None
    """Stop an answer where the model starts another speaker's line; empty: on for ``local``."""
    # npcs.context.MAX_SCENE_CHARS, written out (a test keeps them equal): the speech stack
    # reads this config and imports nothing from npcs, not even through it.
    scene_chars: int = Field(default=1500, ge=0)
    """Characters of recent scene in each prompt (a sliding window breaks prefix reuse)."""
    follow_up_scene: bool = True
    """Give the scene again in a turn's follow-up rounds after tool calls."""
    retry_in_character: bool | None = None
    """An answer asked again because the model wrote another speaker's line starts as the NPC's
    quoted line; empty: on for the bundled server."""
    open_in_character: bool | None = None
    """A FAST answer starts as the NPC's quoted line from its first sample (no tool call in that
    round: the table runs a FAST turn's rolls and recall itself); empty: on for the bundled
    server."""
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    """Sampling temperature of NPCs that set none in their YAML (``llm.temperature``); empty:
    0.3 for ``local`` (chosen on ``glyphoxa bench words``), the server's default otherwise."""
    frequency_penalty: float | None = Field(default=None, ge=-2.0, le=2.0)
    """Sampling: penalise words by how often the answer used them already (OpenAI's
    ``frequency_penalty``); empty: the server's default."""
    repeat_penalty: float | None = Field(default=None, ge=0.5, le=2.0)
    """Sampling: penalise repeated tokens (sent as ``repeat_penalty``, which llama.cpp servers
    and vLLM read; OpenAI's API has no such setting); empty: 1.1 for ``local``, none otherwise."""

    def bundled_options_set(self) -> list[str]:
        """The bundled server's options that were written (for the check beside ``openai``)."""
        return [name for name in _BUNDLED_SERVER if name in self.model_fields_set]


_WHISPER = ("cpu_threads", "beam_size", "window_s", "partial_window_s")


class SttOptions(RemoteOptions):
    """``providers.stt.options``: faster-whisper's settings, or the connection to a server."""

    cpu_threads: int = Field(default=2, ge=1)
    """faster-whisper: CPU threads of the recognizer."""
    beam_size: int = Field(default=1, ge=1)
    """faster-whisper: beam search width (1: greedy, the fastest)."""
    window_s: float = Field(default=10.0, gt=0)
    """faster-whisper: the window a final transcript is first heard over, in seconds."""
    partial_window_s: float = Field(default=10.0, gt=0)
    """faster-whisper: the window partial transcripts are heard over, in seconds."""


class TtsOptions(RemoteOptions):
    """``providers.tts.options``: where more Piper voices are, and what an OpenAI-compatible
    speech server speaks."""

    voice_dirs: str = ""
    """Folders of more Piper voices (``<name>.onnx`` with its ``.onnx.json``), ``:``-separated."""
    all_voices: bool = False
    """``openai``: send the NPCs' Piper voices to that server too (it knows their names)."""


class RealtimeOptions(_Strict):
    """``providers.realtime.options``."""

    voice: str = "alloy"
    """The voice of realtime NPCs whose own voice is not an OpenAI one."""
    max_realtime_tier: TierName = Tier.STANDARD
    """Turns whose tools are slower go through the cascaded engine and ``providers.llm``."""
    session_limit_s: float = Field(default=1800.0, gt=0)
    """The provider's maximum session length in seconds (OpenAI: 30 minutes). Sessions are
    renewed before it, carrying the conversation over."""
    renew_margin_s: float = Field(default=120.0, ge=0)
    """Renew this many seconds before ``session_limit_s``, between turns."""
    carry_turns: int = Field(default=8, ge=0, le=100)
    """The recent turns a renewed session is told word for word (older ones as a summary)."""

    @model_validator(mode="after")
    def _margin_fits_the_limit(self) -> Self:
        if self.renew_margin_s >= self.session_limit_s:
            raise ValueError(
                f"renew_margin_s ({self.renew_margin_s:g}) must be smaller than "
                f"session_limit_s ({self.session_limit_s:g}): sessions are renewed that long "
                "before the limit"
            )
        return self


class EmbeddingsOptions(_Strict):
    """``providers.embeddings.options``: none yet (the model and endpoint are the section's)."""


class ProviderConfig(_Strict):
    """One model provider. ``name`` picks the implementation; the rest configures it."""

    name: str
    """Which implementation: ``local`` (the bundled llama.cpp server; with ``base_url``, a
    server of your own), ``openai`` (any OpenAI-compatible API), ``faster-whisper`` (local
    speech recognition), ``piper`` or ``espeak`` (local voices)."""
    model: str | None = None
    """The model's name as its server knows it (``gpt-4o-mini``, ``qwen2.5:7b``), or a local
    model (a Whisper size or folder, a Piper voice file); empty: the provider's default."""
    base_url: str | None = None
    """The server's OpenAI-compatible API (``http://localhost:11434/v1``); empty: OpenAI's for
    ``openai``, the bundled server for ``local``."""
    api_key: SecretStr | None = None
    """The server's key; write ``${OPENAI_API_KEY}`` and keep the value in the environment."""

    service: ClassVar[str | None] = None
    """The ``providers`` key this section is (its names are ``PROVIDER_NAMES[service]``)."""

    @field_validator("name", mode="before")
    @classmethod
    def _name_exists(cls, value: Any) -> Any:
        return value if cls.service is None else _known_name(cls.service, value)


class LlmProvider(ProviderConfig):
    """``providers.llm``: ``local`` starts the bundled llama.cpp server; ``openai`` is any
    OpenAI-compatible API."""

    service: ClassVar[str | None] = "llm"
    name: LlmName
    """``local`` (the bundled llama.cpp server; with ``base_url``, a server of your own) or
    ``openai`` (any OpenAI-compatible API: OpenAI, Ollama, Groq, vLLM... by ``base_url``)."""
    options: LlmOptions = Field(default_factory=LlmOptions)
    """The bundled server, how answers are produced, and the connection to a server."""

    @model_validator(mode="after")
    def _bundled_options_need_the_bundled_server(self) -> Self:
        written = self.options.bundled_options_set()
        if self.name != "local" and written:
            raise ValueError(
                f"options.{written[0]} is for the bundled server (name: local), which "
                f"name: {self.name} does not start; remove it"
            )
        return self


class SttProvider(ProviderConfig):
    """``providers.stt``: ``faster-whisper`` (local) or ``openai`` (any server with OpenAI's
    transcription API)."""

    service: ClassVar[str | None] = "stt"
    name: SttName
    """``faster-whisper`` (local speech recognition) or ``openai`` (any server with OpenAI's
    transcription API)."""
    options: SttOptions = Field(default_factory=SttOptions)
    """faster-whisper's settings, or the connection to a server."""

    @model_validator(mode="after")
    def _whisper_options_need_whisper(self) -> Self:
        written = [name for name in _WHISPER if name in self.options.model_fields_set]
        if self.name == "openai" and written:
            raise ValueError(
                f"options.{written[0]} is for faster-whisper, which name: openai does not "
                "run; remove it"
            )
        return self


class TtsProvider(ProviderConfig):
    """``providers.tts``: ``piper`` (local), ``espeak`` or ``openai`` (any server with
    OpenAI's speech API)."""

    service: ClassVar[str | None] = "tts"
    name: TtsName
    """``piper`` (local voices), ``espeak`` (espeak-ng) or ``openai`` (any server with OpenAI's
    speech API)."""
    options: TtsOptions = Field(default_factory=TtsOptions)
    """More Piper voices, and what a speech server speaks."""

    @model_validator(mode="after")
    def _all_voices_needs_a_server(self) -> Self:
        if self.options.all_voices and self.name != "openai":
            raise ValueError(
                f"options.all_voices sends Piper voices to a speech server (name: openai); "
                f"with name: {self.name} there is none"
            )
        return self


class RealtimeProvider(ProviderConfig):
    """``providers.realtime``: speech to speech for NPCs with ``engine: realtime``."""

    service: ClassVar[str | None] = "realtime"
    name: RemoteName
    """``openai``: OpenAI Realtime or a server speaking its protocol (``base_url``)."""
    options: RealtimeOptions = Field(default_factory=RealtimeOptions)
    """The realtime voice and the slowest tier a realtime turn may take."""


class EmbeddingsProvider(ProviderConfig):
    """``providers.embeddings``: an OpenAI-compatible embeddings endpoint."""

    service: ClassVar[str | None] = "embeddings"
    name: RemoteName
    """``openai``: any server with OpenAI's embeddings API (``base_url``)."""
    options: EmbeddingsOptions = Field(default_factory=EmbeddingsOptions)
    """None yet."""
