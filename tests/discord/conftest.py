"""Fixtures for the Discord front end: real libopus, real DAVE groups, real AEAD ciphers."""

from __future__ import annotations

import asyncio
import math
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import discord
import discord.http
import discord.opus
import pytest
import yarl
from discord.gateway import DiscordWebSocket

from bot.audio.voice.dave import DaveReceiver
from bot.audio.voice.opus_decode import SpeakerDecoder, ensure_opus_loaded
from bot.audio.voice.receiver import VoiceFrame, VoiceReceiver
from bot.audio.voice.transport_crypto import XChaCha20Cipher
from bot.bench.doubles.local_discord import LocalDiscord
from bot.bench.doubles.voice_loopback import LocalDaveGroup, LoopbackSpeaker

from .discord_api import APP_ID, BOT_ID, FakeDiscordApi

BOT_USER = 900
SPEAKER_USER = 101
SPEAKER_SSRC = 4242
CHANNEL = 555
KEY = bytes(range(32))

OpenWorld = Callable[..., Awaitable[tuple[LocalDiscord, FakeDiscordApi]]]


@pytest.fixture(scope="session", autouse=True)
def opus_loaded() -> str:
    return ensure_opus_loaded()


@pytest.fixture(scope="session")
def whisper_stt() -> Any:
    """The real local recognizer (tiny.en), loaded once for the tests that need a session."""
    from bot.audio.speech import FasterWhisperStt

    return FasterWhisperStt()


def tone(frames: int, freq: float = 440.0, amplitude: int = 9000) -> list[bytes]:
    """``frames`` 20 ms frames of a stereo tone with a slow vibrato (not trivially periodic)."""
    out = []
    for f in range(frames):
        samples = []
        for i in range(960):
            t = (f * 960 + i) / 48000
            v = int(amplitude * math.sin(2 * math.pi * (freq + 30 * math.sin(3 * t)) * t))
            samples.append(struct.pack("<hh", v, v))
        out.append(b"".join(samples))
    return out


def reference_decode(packets: list[bytes], *, stt: bool = False) -> list[bytes]:
    """What a fresh libopus decoder makes of ``packets`` in order: the PCM we must reproduce
    (48 kHz stereo, or with ``stt`` 16 kHz mono as the bot's client decodes for the lanes)."""

    class Mono16k(discord.opus.Decoder):
        SAMPLING_RATE = 16_000
        CHANNELS = 1

    decoder = Mono16k() if stt else discord.opus.Decoder()
    return [decoder.decode(p, fec=False) for p in packets]


class Rig:
    """A bot-side receiver in a real DAVE group with one remote speaker."""

    def __init__(
        self,
        *,
        dave: bool = True,
        recovery: Callable[[], None] | None = None,
        decoder: type[SpeakerDecoder] = SpeakerDecoder,
        clock: Callable[[], float] | None = None,
        hold_at_pace: bool = False,
    ) -> None:
        self.group = LocalDaveGroup(CHANNEL)
        self.bot_session = self.group.new_session(BOT_USER) if dave else None
        self.remote_session = self.group.new_session(SPEAKER_USER) if dave else None
        if dave:
            self.group.join([self.bot_session, self.remote_session])
        self.frames: list[VoiceFrame] = []
        self.dave = DaveReceiver(
            lambda: (self.bot_session, 1 if dave else 0),
            on_recovery_needed=recovery,
            failure_threshold=5,
        )
        loop = asyncio.get_running_loop()
        options: dict[str, Any] = {"decoder": decoder, "hold_at_pace": hold_at_pace}
        if clock is not None:
            options["clock"] = clock
        self.receiver = VoiceReceiver(loop, self.frames.extend, dave=self.dave, **options)
        self.receiver.set_transport("aead_xchacha20_poly1305_rtpsize", KEY)
        self.receiver.set_own_ssrc(1)
        self.receiver.handle_gateway(
            {"op": 5, "d": {"user_id": str(SPEAKER_USER), "ssrc": SPEAKER_SSRC, "speaking": 1}}
        )
        self.speaker = LoopbackSpeaker(SPEAKER_SSRC, XChaCha20Cipher(KEY), self.remote_session)

    def feed(self, datagrams: list[bytes], *, flush: bool = True) -> list[VoiceFrame]:
        """Process datagrams; with ``flush`` also release what reorder buffers still hold."""
        out: list[VoiceFrame] = []
        for d in datagrams:
            out += self.receiver.process(d)
        return out + self.flush() if flush else out

    def flush(self) -> list[VoiceFrame]:
        return self.receiver.flush()


@pytest.fixture
async def rig() -> Rig:
    return Rig()


@pytest.fixture
async def client(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[discord.Client]:
    """A real discord.Client logged in to the local REST API (see ``voice_rig``)."""
    from .voice_rig import logged_in_client

    async for bot in logged_in_client(monkeypatch):
        yield bot


@pytest.fixture
async def local_world(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[OpenWorld]:
    """Opens a guild on a local Discord speaking the real protocols (gateway, voice) and a REST
    stand-in that also answers interactions, with discord.py pointed at both: only Discord's
    addresses change, every byte is produced and parsed by discord.py.

    Call it as ``await local_world(guild=, text=, voice=, dm_role=, players={user: name})``:
    the first player is the DM (role ``DM``), and every player sits in the voice channel.
    Everything it opened is closed after the test.
    """
    opened: list[tuple[LocalDiscord, FakeDiscordApi]] = []

    async def open_world(
        *, guild: int, text: int, voice: int, dm_role: int, players: dict[int, str]
    ) -> tuple[LocalDiscord, FakeDiscordApi]:
        api = FakeDiscordApi()
        await api.start()
        dm_user = next(iter(players))
        local = LocalDiscord(
            players=players, guild_id=guild, text_id=text, voice_id=voice, bot_id=BOT_ID,
            app_id=APP_ID, roles={dm_role: "DM"}, member_roles={dm_user: [dm_role]},
        )  # fmt: skip
        opened.append((local, api))
        await local.start()
        for user_id in players:
            await local.player_joins(user_id)
        monkeypatch.setattr(discord.http.Route, "BASE", api.base)
        monkeypatch.setattr(DiscordWebSocket, "DEFAULT_GATEWAY", yarl.URL(local.gateway_url))
        return local, api

    yield open_world
    for local, api in reversed(opened):
        await local.close()
        await api.close()
