"""Models of ``glyphoxa.yaml``. Every section forbids unknown keys so a typo is caught.

Loading (``${VAR}`` expansion, file:line:column errors, "did you mean") is in
``bot.settings.loader``; this module only says what a valid configuration is.
"""

from __future__ import annotations

from typing import Literal, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationInfo,
    field_validator,
)

from bot.settings.providers import (
    EmbeddingsProvider,
    LlmProvider,
    RealtimeProvider,
    SttProvider,
    TtsProvider,
)
from bot.settings.spend import PricingConfig, SessionConfig
from campaigns.basics import DEFAULT_CEILINGS_MS, Tier
from tools.config import BuiltinToolsConfig, McpConfig

__all__ = [
    "LOOPBACK_HOSTS",
    "CampaignRef",
    "ConsoleConfig",
    "DiscordConfig",
    "DmVoiceConfig",
    "GlyphoxaConfig",
    "LoggingConfig",
    "MemoryConfig",
    "MetricsConfig",
    "ProvidersConfig",
    "SessionConfig",
    "SpeechConfig",
    "TiersConfig",
    "TurnConfig",
    "VadConfig",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class DiscordConfig(_Strict):
    token: SecretStr | None = None
    """Bot token; write ``${DISCORD_TOKEN}`` and keep the value in the environment."""
    guild_ids: list[int] = Field(default_factory=list)
    """Guilds to sync slash commands to instantly (global sync can take an hour)."""
    dm_role: str | None = None
    """Role (name or id) whose members act as the Dungeon Master: they steer the table with
    slash commands and by voice."""
    dm_admins: bool = True
    """The server owner and members with Manage Server may act as the DM too, with or without
    ``dm_role``; false: only ``dm_role`` counts."""
    transcript_channel_id: int | None = None
    """Text channel for the live transcript; empty disables it."""
    transcription_notice: bool = True
    """Announce at session start that voice is being transcribed."""
    rejoin_attempts: int = Field(default=5, ge=0, le=20)
    """Rejoins (1, 2, 4, ... s apart) after the voice connection ends; then the table ends."""
    deaf_after_s: float = Field(default=2.0, gt=0.0, le=60.0)
    """Players' packets arriving with nothing decoded this long runs recovery."""
    stall_after_s: float = Field(default=20.0, ge=1.0, le=600.0)
    """Discord says a player is speaking but none of their audio arrives this long (or none
    from anyone): the bot rejoins the voice channel, and tells the DM if it happens again
    within 30 minutes."""

    @field_validator("dm_admins")
    @classmethod
    def _someone_is_dm(cls, dm_admins: bool, info: ValidationInfo) -> bool:
        if not dm_admins and not (info.data.get("dm_role") or "").strip():
            raise ValueError(
                "false while dm_role is empty, so nobody could steer the table: set dm_role to "
                "your DM role's name, or dm_admins: true"
            )
        return dm_admins


class ProvidersConfig(_Strict):
    llm: LlmProvider = Field(default_factory=lambda: LlmProvider(name="local", model="smollm2"))
    """``local`` starts the bundled llama.cpp server; ``openai`` is any OpenAI-compatible API."""
    stt: SttProvider = Field(
        default_factory=lambda: SttProvider(name="faster-whisper", model="tiny.en")
    )
    """Speech recognition: ``faster-whisper`` (local, ``tiny.en`` bundled) or ``openai`` (any
    server with OpenAI's transcription API)."""
    tts: TtsProvider = Field(default_factory=lambda: TtsProvider(name="piper"))
    """Voices: ``piper`` (local), ``espeak`` or ``openai`` (any server with OpenAI's speech
    API); each NPC's ``voice.provider`` picks among those available."""
    realtime: RealtimeProvider | None = None
    """Speech to speech for NPCs with ``engine: realtime`` (OpenAI Realtime); empty: they
    answer through the cascaded engine."""
    embeddings: EmbeddingsProvider | None = None
    """An OpenAI-compatible embeddings endpoint for recall by meaning in campaign memory;
    empty: keyword search only."""


class VadConfig(_Strict):
    """Voice activity detection: which sound in a player's stream is speech."""

    provider: Literal["silero", "webrtc"] = "silero"
    """``silero`` (a small neural model, the default) or ``webrtc`` (cheaper, less precise)."""
    engine: Literal["auto", "numpy", "onnxruntime"] = "auto"
    """How Silero runs. ``auto``: the numpy kernel, if it gives onnxruntime's probabilities and
    costs less on this machine (checked at start-up); ``numpy`` insists on it (start-up fails
    if it does not match); ``onnxruntime``: the ONNX graph as shipped."""
    threshold: float = Field(default=0.5, gt=0.0, lt=1.0)
    """Speech probability above which a frame counts as speech (silero)."""
    aggressiveness: int = Field(default=2, ge=0, le=3)
    """webrtcvad mode, 0 (lenient) to 3 (strict)."""
    min_speech_ms: int = Field(default=120, ge=0)
    """Speech shorter than this is a click or a cough, not an utterance."""
    hangover_ms: int = Field(default=500, ge=0)
    """Silence after speech before the utterance ends."""
    preroll_ms: int = Field(default=300, ge=0)
    """Audio kept from before speech was detected, so a soft first syllable is heard."""
    max_utterance_s: float = Field(default=30.0, gt=0)
    """An utterance ends here at the latest and is transcribed, so a monologue is heard too."""


class TurnConfig(_Strict):
    """End of turn: the turn model and the words decide at each pause
    (bot.audio.speech.turn_end)."""

    detector: Literal["smart-turn", "off"] = "smart-turn"
    """``smart-turn``: Smart Turn v3.2 and the transcript judge each pause; ``off`` (or the model
    missing): a turn ends after ``vad.hangover_ms`` of silence."""
    model_path: str | None = None
    """Another Smart Turn ONNX file; empty: the one inside the pipecat-ai wheel."""
    threshold: float = Field(default=0.5, gt=0.0, lt=1.0)
    """Model probability from which a turn sounds finished."""
    pause_ms: int = Field(default=32, ge=32)
    """Silence after which a pause is judged (model and transcript): one silent VAD window, so
    the words that end the turn are heard while its ``complete_ms`` pass."""
    complete_ms: int = Field(default=200, ge=0)
    """Silence before a finished-sounding turn ends."""
    short_turn_ms: int = Field(default=1000, ge=0)
    """A turn shorter than this waits for its words before ending: "Bartok," alone sounds
    finished too (longer ones end on the sound, and their words may still veto it)."""
    unsure_ms: int = Field(default=500, ge=0)
    """Silence before a turn ends when sound and words do not quite vouch for each other: a word
    or two that sound finished ("Great," and a breath before "pour me a pint"), or a whole
    question that sounds unfinished or that the recognizer closed with a comma ("Bartok, is
    the stew any good,")."""
    incomplete_ms: int = Field(default=1000, ge=0)
    """Silence before an unfinished one ends anyway ("Bartok, and um...")."""
    table_talk_ms: int = Field(default=500, ge=0)
    """Silence before table talk (a player whose words so far name no NPC and answer none)
    that sounds finished ends: nobody waits for an answer, and a comma's breath (a few
    hundred milliseconds) must not split the line."""


class SpeechConfig(_Strict):
    """Hearing players: voice activity, end of turn, barge-in; and the ambience's mix."""

    vad: VadConfig = Field(default_factory=VadConfig)
    turn: TurnConfig = Field(default_factory=TurnConfig)
    partial_interval_ms: int = Field(default=300, ge=50)
    """How often a talking player's words so far are transcribed (partials drive the tier and
    early answers)."""
    barge_in_confirm_ms: int = Field(default=250, ge=0)
    """A player talking this long over an NPC (with a real word heard) interrupts it."""
    backchannels: list[str] = Field(
        default_factory=lambda: [
            "mhm",
            "mm",
            "uh-huh",
            "uh huh",
            "yeah",
            "yep",
            "ok",
            "okay",
            "right",
            "hmm",
            "huh",
            "yes",
            "sure",
        ]
    )
    """Short acknowledgements that never start a turn or interrupt an NPC."""
    ambience_volume: float = Field(default=0.25, ge=0.0, le=1.0)
    """Gain of the ambience music under the voices."""
    ambience_duck: float = Field(default=0.4, ge=0.0, le=1.0)
    """Ambience gain multiplier while an NPC speaks."""


TierLabel = Literal["fast", "standard", "deep"]


def _default_ceilings() -> dict[TierLabel, int]:
    return {cast(TierLabel, tier.label): ms for tier, ms in DEFAULT_CEILINGS_MS.items()}


class TiersConfig(_Strict):
    """Latency tiers: how slow a turn's tools may be, and which words pick the tier."""

    ceilings_ms: dict[TierLabel, int] = Field(default_factory=_default_ceilings)
    """Parallel tool latency per tier: ``{fast: 500, standard: 1500, deep: 4000}``; a tool
    belongs to the lowest tier its p50 fits."""
    deep_phrases: list[str] | None = None
    """Phrases that ask for DEEP thought; empty means the built-in list."""
    standard_phrases: list[str] | None = None
    """Phrases that refer to the past, rules or lore (STANDARD); empty means the built-in
    list."""
    extra_deep_phrases: list[str] = Field(default_factory=list)
    """Added to the built-in DEEP list instead of replacing it."""
    extra_standard_phrases: list[str] = Field(default_factory=list)
    """Added to the built-in STANDARD list instead of replacing it."""
    deep_interval_s: float = Field(default=30.0, ge=0)
    """A second DEEP request within this window is demoted to STANDARD."""
    queue_threshold: int = Field(default=3, ge=1)
    """This many players waiting forces FAST."""
    continuation_window_s: float = Field(default=30.0, ge=0)
    """A player speaking again within this window, naming nobody, continues the conversation
    with the NPC they last addressed."""
    default_tier: Literal["fast", "standard", "deep"] = "fast"
    """The tier of a turn no rule decided."""

    def ceiling(self, tier: Tier) -> int:
        ceiling: int = self.ceilings_ms.get(tier.label, DEFAULT_CEILINGS_MS[tier])  # type: ignore[call-overload]
        return ceiling


class DmVoiceConfig(_Strict):
    enabled: bool = True
    """Commands the DM says out loud ("Greymantle, take your time", "everyone stop") steer the
    table; only the DM's own voice lane counts (``discord.dm_role``, and the server owner and
    Manage Server with ``discord.dm_admins``; a rehearsal scene's ``dm_speaker``)."""
    override_minutes: float = Field(default=5.0, gt=0)
    """How long a spoken tier override ("take your time", "quick answers") lasts."""
    ack: Literal["tone", "word", "none"] = "tone"
    """How a command is acknowledged: a short chime, the NPC saying ``ack_word`` (commands to
    everyone and "stop" still chime), or nothing."""
    ack_word: str = Field(default="Understood.", min_length=1, max_length=40)
    """What the NPC says to acknowledge a command with ``ack: word``."""


class MemoryConfig(_Strict):
    url: str = "sqlite+aiosqlite:///.glyphoxa/memory.db"
    """SQLAlchemy async URL; ``postgresql+asyncpg://user:pass@host/db`` for PostgreSQL."""
    chunk_utterances: int = Field(default=5, ge=3, le=6)
    """Lines of transcript per chunk indexed for recall."""


class LoggingConfig(_Strict):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    """Least severe records kept (``glyphoxa -v`` means DEBUG)."""
    file: str | None = None
    """Also write the log to this file, rotated by size; empty: console only."""
    json_format: bool = False
    """One JSON object per line (time, level, logger, message, exception) instead of text."""
    max_bytes: int = Field(default=10 * 1024 * 1024, ge=0)
    """Rotate the file when it reaches this size; 0 never rotates."""
    backup_count: int = Field(default=5, ge=0)
    """Rotated files kept (``glyphoxa.log.1`` ...); older ones are deleted."""


class MetricsConfig(_Strict):
    """The Prometheus endpoint, ``http://host:port/metrics``."""

    enabled: bool = False
    """Serve the metrics (one endpoint per process)."""
    host: str = "127.0.0.1"
    """Address to listen on; keep it local unless a scraper elsewhere needs it."""
    port: int = Field(default=9464, ge=1, le=65535)


#: Hosts only this machine reaches: the console binds one of them unless told otherwise.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


class ConsoleConfig(_Strict):
    """The DM's console: a web page served by the bot to watch and steer the table and to
    prepare the campaign (``glyphoxa console link`` prints a login link)."""

    enabled: bool = True
    """Serve the console while ``glyphoxa run`` runs (``glyphoxa rehearse --console`` serves it
    for one rehearsal)."""
    allow_network: bool = False
    """Let ``host`` be an address other machines can reach (logged as a warning at start):
    anyone who gets a login link then reaches the table over plain HTTP, so put it behind a
    TLS proxy you trust."""
    host: str = "127.0.0.1"
    """Address to listen on. Only this machine can reach 127.0.0.1; any other address opens
    the console to a network and needs ``allow_network: true``."""
    port: int = Field(default=8470, ge=0, le=65535)
    """Port to listen on; 0 picks a free one (the login link names it)."""
    link_file: str = ".glyphoxa/console.json"
    """Where the running bot writes its console address and the key that ``glyphoxa console
    link`` signs login links with (readable by this user only)."""
    link_minutes: float = Field(default=10.0, gt=0, le=24 * 60)
    """How long a login link stays valid (each works once)."""
    session_hours: float = Field(default=12.0, gt=0, le=24 * 7)
    """How long a browser stays logged in after a login link was opened (logging out, or
    "log out everywhere", ends it at once)."""
    read_timeout_s: float = Field(default=10.0, gt=0, le=300)
    """A request's headers must arrive within this many seconds, and its body may pause no
    longer: unfinished requests cannot hold connections open."""
    trusted_proxies: list[str] = Field(default_factory=list)
    """Addresses of reverse proxies whose ``X-Forwarded-For`` names the browser's address;
    empty: the address is the connection's own, whatever a request claims."""

    @field_validator("host")
    @classmethod
    def _local_unless_allowed(cls, host: str, info: ValidationInfo) -> str:
        if host not in LOOPBACK_HOSTS and not info.data.get("allow_network"):
            raise ValueError(
                f"{host!r} opens the console to a network; set console.allow_network: true to "
                "mean it, or keep host: 127.0.0.1"
            )
        return host


class CampaignRef(_Strict):
    path: str = "campaigns/example"
    """Campaign folder holding campaign.yaml, npcs/, entities.yaml, tables/, ambience/."""
    hot_reload: bool = True
    """Reload an NPC when its file is saved during a session (an invalid edit keeps the old
    NPC and is reported)."""


class GlyphoxaConfig(_Strict):
    discord: DiscordConfig = Field(default_factory=DiscordConfig)
    providers: ProvidersConfig = Field(default_factory=ProvidersConfig)
    campaign: CampaignRef = Field(default_factory=CampaignRef)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    mcp: McpConfig = Field(default_factory=McpConfig)
    tools: BuiltinToolsConfig = Field(default_factory=BuiltinToolsConfig)
    tiers: TiersConfig = Field(default_factory=TiersConfig)
    dm_voice: DmVoiceConfig = Field(default_factory=DmVoiceConfig)
    speech: SpeechConfig = Field(default_factory=SpeechConfig)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    metrics: MetricsConfig = Field(default_factory=MetricsConfig)
    console: ConsoleConfig = Field(default_factory=ConsoleConfig)
    pricing: PricingConfig = Field(default_factory=PricingConfig)
    """What cloud models cost, per model; written prices override the defaults."""
    session: SessionConfig = Field(default_factory=SessionConfig)
    """Per-session limits: what a night may spend, and when a table nobody is at closes."""
    _env_templates: dict[tuple[str | int, ...], str] = PrivateAttr(default_factory=dict)
    """Key path -> the text as written, where a value came from ``${VAR}`` (set by
    ``bot.settings.loader``, so pages show the reference and never the value)."""
