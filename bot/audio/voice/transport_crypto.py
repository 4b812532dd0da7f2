"""Discord voice transport encryption (the ``aead_*_rtpsize`` modes), both directions.

The nonce on the wire is a 4-byte counter appended to the datagram; the AEAD nonce is those 4
bytes followed by zeros (24 bytes for XChaCha20-Poly1305, 12 for AES-256-GCM). The associated
data is the RTP header through the extension preamble (see :mod:`bot.audio.voice.rtp`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

import nacl.exceptions
import nacl.secret
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = [
    "SUPPORTED_MODES",
    "Aes256GcmCipher",
    "TransportCipher",
    "TransportDecryptError",
    "XChaCha20Cipher",
    "make_cipher",
]

log = logging.getLogger(__name__)

XCHACHA_MODE = "aead_xchacha20_poly1305_rtpsize"
AES_GCM_MODE = "aead_aes256_gcm_rtpsize"
SUPPORTED_MODES = (AES_GCM_MODE, XCHACHA_MODE)


class TransportDecryptError(Exception):
    """Authentication failed: wrong key, tampered or truncated datagram."""


class TransportCipher(Protocol):
    mode: str

    def decrypt(self, aad: bytes, ciphertext: bytes, nonce: bytes) -> bytes: ...

    def encrypt(self, aad: bytes, plaintext: bytes, nonce: bytes) -> bytes: ...


class XChaCha20Cipher:
    """``aead_xchacha20_poly1305_rtpsize`` via libsodium (PyNaCl)."""

    mode = XCHACHA_MODE
    __slots__ = ("_box",)
    _PAD = bytes(20)

    def __init__(self, key: bytes) -> None:
        self._box = nacl.secret.Aead(key)

    def decrypt(self, aad: bytes, ciphertext: bytes, nonce: bytes) -> bytes:
        try:
            return self._box.decrypt(ciphertext, aad, nonce + self._PAD)
        except (nacl.exceptions.CryptoError, ValueError, TypeError) as error:
            raise TransportDecryptError(str(error)) from None

    def encrypt(self, aad: bytes, plaintext: bytes, nonce: bytes) -> bytes:
        return bytes(self._box.encrypt(plaintext, aad, nonce + self._PAD).ciphertext)


class Aes256GcmCipher:
    """``aead_aes256_gcm_rtpsize`` via OpenSSL (``cryptography``)."""

    mode = AES_GCM_MODE
    __slots__ = ("_aead",)
    _PAD = bytes(8)

    def __init__(self, key: bytes) -> None:
        self._aead = AESGCM(key)

    def decrypt(self, aad: bytes, ciphertext: bytes, nonce: bytes) -> bytes:
        try:
            return self._aead.decrypt(nonce + self._PAD, ciphertext, aad)
        except (InvalidTag, ValueError) as error:
            raise TransportDecryptError(type(error).__name__) from None

    def encrypt(self, aad: bytes, plaintext: bytes, nonce: bytes) -> bytes:
        return self._aead.encrypt(nonce + self._PAD, plaintext, aad)


def make_cipher(mode: str, key: bytes | Sequence[int]) -> TransportCipher:
    """Build the cipher for the mode Discord chose in SESSION_DESCRIPTION (op 4).

    Raises:
        ValueError: for a mode we do not implement or a key that is not 32 bytes.
    """
    raw = bytes(key)
    if len(raw) != 32:
        raise ValueError(f"voice secret key must be 32 bytes, got {len(raw)}")
    if mode == XCHACHA_MODE:
        return XChaCha20Cipher(raw)
    if mode == AES_GCM_MODE:
        return Aes256GcmCipher(raw)
    raise ValueError(f"unsupported voice encryption mode {mode!r}; supported: {SUPPORTED_MODES}")
