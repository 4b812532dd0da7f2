"""Offline stand-ins for the other end of a Discord voice connection.

:class:`LocalDaveGroup` plays the voice server's role in DAVE: it is the MLS *external sender*
that signs Add proposals (ECDSA P-256, basic credential) so real ``davey.DaveSession`` objects
form a group without Discord. :class:`LoopbackSpeaker` is a remote client: it Opus-encodes PCM,
DAVE-encrypts, wraps in RTP and transport-encrypts exactly as a Discord client does. Tests and
``glyphoxa bench receive`` use them to drive the real receive path.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

import davey
import discord.opus
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from bot.voice.opus_decode import ensure_opus_loaded
from bot.voice.rtp import build_header
from bot.voice.transport_crypto import TransportCipher

__all__ = ["LocalDaveGroup", "LoopbackSpeaker", "mls_vector"]

_MLS10 = 1
_PUBLIC_MESSAGE = 1
_SENDER_EXTERNAL = 2
_CONTENT_PROPOSAL = 2
_PROPOSAL_ADD = 1
_BASIC_CREDENTIAL = 1


def _varint(value: int) -> bytes:
    """MLS variable-length vector prefix (RFC 9420 section 2.1.2)."""
    if value < 0x40:
        return bytes([value])
    if value < 0x4000:
        return struct.pack(">H", 0x4000 | value)
    return struct.pack(">I", 0x80000000 | value)


def mls_vector(data: bytes) -> bytes:
    return _varint(len(data)) + data


class LocalDaveGroup:
    """A DAVE group on one channel whose members are real davey sessions.

    ``join`` adds members: the first joiner's pending group becomes the group; later joiners
    are added by a commit from an existing member, which every member then processes, so the
    epoch advances as on Discord (opcodes 27 proposals, 28 commit, 29 commit, 30 welcome).
    """

    def __init__(self, channel_id: int) -> None:
        self.channel_id = channel_id
        self._key = ec.generate_private_key(ec.SECP256R1())
        public = self._key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        credential = struct.pack(">H", _BASIC_CREDENTIAL) + mls_vector(b"\0" * 8)
        #: opcode 25 payload (DAVE_MLS_EXTERNAL_SENDER_PACKAGE)
        self.external_sender = mls_vector(public) + credential
        self.members: dict[int, davey.DaveSession] = {}

    def new_session(self, user_id: int) -> davey.DaveSession:
        session = davey.DaveSession(davey.DAVE_PROTOCOL_VERSION, user_id, self.channel_id)
        session.set_external_sender(self.external_sender)
        return session

    def add_proposals(self, key_packages: Iterable[bytes], epoch: int) -> bytes:
        """opcode 27 payload after its operation byte: signed external Add proposals."""
        messages = b"".join(self._add_proposal(kp, epoch) for kp in key_packages)
        return mls_vector(messages)

    def join(self, sessions: Sequence[davey.DaveSession]) -> None:
        """Add ``sessions`` (fresh, external sender set) to the group in one commit."""
        pending = list(sessions)
        if not self.members:
            founder = pending.pop(0)
            founder.get_serialized_key_package()
            self.members[founder.user_id] = founder
            if not pending:
                return
        committer = next(iter(self.members.values()))
        packages = [s.get_serialized_key_package() for s in pending]
        proposals = self.add_proposals(packages, committer.epoch or 0)
        # The voice server broadcasts proposals to every member (opcode 27); each one stores
        # them (and may offer a commit); the server picks one commit (here the first member's).
        results = [
            m.process_proposals(davey.ProposalsOperationType.append, proposals)
            for m in self.members.values()
        ]
        result = results[0]
        if result is None:
            raise RuntimeError("the committer produced no commit for the Add proposals")
        for member in self.members.values():
            member.process_commit(result.commit)
        for session in pending:
            if result.welcome is None:
                raise RuntimeError("commit without a welcome for new members")
            session.process_welcome(result.welcome)
            self.members[session.user_id] = session

    def _add_proposal(self, key_package: bytes, epoch: int) -> bytes:
        content = (
            mls_vector(struct.pack(">Q", self.channel_id))
            + struct.pack(">QBI", epoch, _SENDER_EXTERNAL, 0)
            + mls_vector(b"")
            + struct.pack(">BH", _CONTENT_PROPOSAL, _PROPOSAL_ADD)
            + key_package
        )
        wire = struct.pack(">HH", _MLS10, _PUBLIC_MESSAGE)
        to_sign = mls_vector(b"MLS 1.0 FramedContentTBS") + mls_vector(wire + content)
        signature = self._key.sign(to_sign, ec.ECDSA(hashes.SHA256()))
        return wire + content + mls_vector(signature)


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
