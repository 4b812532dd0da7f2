"""Offline stand-ins for the other end of a Discord voice connection.

:class:`~bot.bench.doubles.local_dave.LocalDaveGroup` plays the voice server's role in DAVE (the MLS
external sender), so real ``davey.DaveSession`` objects form a group without Discord.
:class:`LoopbackSpeaker` is a remote client: it Opus-encodes PCM,
DAVE-encrypts, wraps in RTP and transport-encrypts exactly as a Discord client does. Tests and
``glyphoxa bench receive`` use them to drive the real receive path.
"""

from __future__ import annotations

import struct

import davey
import discord.opus

from bot.audio.voice.opus_decode import ensure_opus_loaded
from bot.audio.voice.rtp import build_header
from bot.audio.voice.transport_crypto import TransportCipher
from bot.bench.doubles.local_dave import LocalDaveGroup, mls_vector

__all__ = ["LocalDaveGroup", "LoopbackSpeaker", "mls_vector"]


class LoopbackSpeaker:
    """A remote Discord client sending voice: PCM -> Opus -> DAVE -> RTP -> transport AEAD."""

    def __init__(
        self,
        ssrc: int,
        cipher: TransportCipher,
        dave_session: davey.DaveSession | None = None,
        *,
        sequence: int = 0,
        timestamp: int = 0,
    ) -> None:
        ensure_opus_loaded()
        self.ssrc = ssrc
        self._cipher = cipher
        self.dave_session = dave_session
        self._encoder = discord.opus.Encoder(application="voip", fec=True)
        self.sequence = sequence
        self.timestamp = timestamp
        self._nonce = 0

    def encode(self, pcm: bytes) -> bytes:
        """One 20 ms frame of 48 kHz stereo s16le -> Opus."""
        return self._encoder.encode(pcm, discord.opus.Encoder.SAMPLES_PER_FRAME)

    def packet(
        self,
        opus: bytes,
        *,
        extension: bytes | None = None,
        padding: int = 0,
        csrcs: tuple[int, ...] = (),
        encrypt_dave: bool = True,
    ) -> bytes:
        """Wrap one Opus frame; advances sequence, timestamp and nonce like a real sender.

        ``extension`` is the header-extension body (a multiple of 4 bytes), ``padding`` the
        number of RTP padding bytes (the last one holds the count).
        """
        payload = opus
        if encrypt_dave and self.dave_session is not None and opus != b"\xf8\xff\xfe":
            payload = self.dave_session.encrypt_opus(opus)
        if extension is not None and len(extension) % 4:
            raise ValueError("extension body must be whole 32-bit words")
        header = build_header(
            self.sequence,
            self.timestamp,
            self.ssrc,
            csrcs=csrcs,
            extension=extension is not None,
            extension_words=len(extension or b"") // 4,
            padded=padding > 0,
        )
        body = (extension or b"") + payload
        if padding:
            body += bytes(padding - 1) + bytes([padding])
        nonce = struct.pack(">I", self._nonce)
        self._nonce = (self._nonce + 1) & 0xFFFFFFFF
        self.sequence = (self.sequence + 1) & 0xFFFF
        self.timestamp = (self.timestamp + 960) & 0xFFFFFFFF
        return header + self._cipher.encrypt(header, body, nonce) + nonce
