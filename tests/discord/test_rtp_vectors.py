"""The receive path against real packets published by discord.js (see vectors.py)."""

from __future__ import annotations

import asyncio

import pytest

from bot.audio.voice.receive_counters import DropReason
from bot.audio.voice.receiver import VoiceReceiver
from bot.audio.voice.rtp import (
    RtpParseError,
    build_header,
    parse_header,
    strip_padding_and_extension,
)
from bot.audio.voice.transport_crypto import Aes256GcmCipher, XChaCha20Cipher, make_cipher

from . import vectors as v


@pytest.mark.parametrize(
    ("packet", "ssrc", "sequence", "timestamp", "decrypted"),
    [
        (v.RTP_PACKET_DESKTOP, 341_124, 10_217, 4_157_324_497, v.RTP_PACKET_DESKTOP_DECRYPTED),
        (v.RTP_PACKET_CHROME, 172_360, 18_143, 660_155_095, v.RTP_PACKET_CHROME_DECRYPTED),
        (v.RTP_PACKET_ANDROID, 172_596, 14_800, 3_763_991_879, v.RTP_PACKET_ANDROID_DECRYPTED),
    ],
)
def test_client_packets_parse_and_strip_to_the_opus_frame(
    packet: bytes, ssrc: int, sequence: int, timestamp: int, decrypted: bytes
) -> None:
    header = parse_header(packet)
    assert (header.ssrc, header.sequence, header.timestamp) == (ssrc, sequence, timestamp)
    assert strip_padding_and_extension(header, decrypted) == v.OPUS_SILENCE


def test_xchacha20_sample_decrypts_and_strips_the_two_word_extension() -> None:
    header = parse_header(v.XCHACHA20_ENCRYPTED)
    assert (header.sequence, header.timestamp, header.ssrc) == (22_118, 3_220_386_864, 48_921)
    assert header.extension_words == 2
    assert header.aad_size == 16
    data = v.XCHACHA20_ENCRYPTED
    plain = XChaCha20Cipher(v.XCHACHA20_KEY).decrypt(data[:16], data[16:-4], data[-4:])
    assert plain == v.XCHACHA20_DECRYPTED
    assert strip_padding_and_extension(header, plain) == v.XCHACHA20_DECRYPTED[8:]


def test_aes256gcm_sample_decrypts_to_silence() -> None:
    data = v.AES256GCM_ENCRYPTED
    header = parse_header(data)
    assert (header.sequence, header.timestamp, header.ssrc) == (41_884, 2_668_332_016, 50_615)
    plain = Aes256GcmCipher(v.AES256GCM_KEY).decrypt(data[:12], data[12:-4], data[-4:])
    assert strip_padding_and_extension(header, plain) == v.AES256GCM_DECRYPTED


@pytest.mark.parametrize(
    ("mode", "key", "packet", "ssrc"),
    [
        ("aead_xchacha20_poly1305_rtpsize", v.XCHACHA20_KEY, v.XCHACHA20_ENCRYPTED, 48_921),
        ("aead_aes256_gcm_rtpsize", v.AES256GCM_KEY, v.AES256GCM_ENCRYPTED, 50_615),
    ],
)
async def test_receiver_decodes_real_packets_to_a_20ms_frame(
    mode: str, key: bytes, packet: bytes, ssrc: int
) -> None:
    frames: list = []
    receiver = VoiceReceiver(asyncio.get_running_loop(), frames.extend)
    receiver.handle_gateway({"op": 4, "d": {"mode": mode, "secret_key": list(key)}})
    receiver.handle_gateway({"op": 5, "d": {"user_id": "77", "ssrc": ssrc, "speaking": 1}})
    assert receiver.process(packet) == []  # a new stream holds its first packets briefly
    out = receiver.flush()
    assert [(f.user_id, f.ssrc, len(f.pcm), f.concealed) for f in out] == [(77, ssrc, 3840, False)]
    assert receiver.snapshot().decoded == 1


async def test_wrong_key_and_tampering_count_as_decrypt_failures() -> None:
    receiver = VoiceReceiver(asyncio.get_running_loop(), lambda f: None)
    receiver.set_transport("aead_xchacha20_poly1305_rtpsize", bytes(32))
    receiver.map_ssrc(48_921, 5)
    assert receiver.process(v.XCHACHA20_ENCRYPTED) == []
    receiver.set_transport("aead_xchacha20_poly1305_rtpsize", v.XCHACHA20_KEY)
    tampered = bytearray(v.XCHACHA20_ENCRYPTED)
    tampered[20] ^= 1
    assert receiver.process(bytes(tampered)) == []
    aad_tampered = bytearray(v.XCHACHA20_ENCRYPTED)
    aad_tampered[5] ^= 1  # timestamp is authenticated data
    assert receiver.process(bytes(aad_tampered)) == []
    assert receiver.counters.dropped[DropReason.DECRYPT_FAILED] == 3
    receiver.process(v.XCHACHA20_ENCRYPTED)
    assert len(receiver.flush()) == 1


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda p: p[:20], "short"),
        (lambda p: bytes([p[0] & 0x3F]) + p[1:], "not_rtp"),
        (lambda p: p[:1] + bytes([0x60]) + p[2:], "payload_type"),
        (lambda p: p[:1] + bytes([0xC9]) + p[2:], "payload_type"),  # RTCP receiver report
    ],
)
def test_header_filter(mutate, reason: str) -> None:
    with pytest.raises(RtpParseError) as info:
        parse_header(mutate(v.XCHACHA20_ENCRYPTED))
    assert info.value.reason == reason


def test_own_ssrc_is_ignored() -> None:
    with pytest.raises(RtpParseError, match="own_ssrc"):
        parse_header(v.XCHACHA20_ENCRYPTED, own_ssrc=48_921)


def test_csrc_list_and_extension_shift_the_associated_data() -> None:
    header = build_header(1, 2, 3, csrcs=(10, 11), extension=True, extension_words=1)
    packet = header + bytes(40)
    parsed = parse_header(packet)
    assert parsed.aad_size == 12 + 8 + 4 == len(header)
    assert parsed.extension_words == 1


def test_unsupported_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="unsupported"):
        make_cipher("xsalsa20_poly1305", bytes(32))
    with pytest.raises(ValueError, match="32 bytes"):
        make_cipher("aead_aes256_gcm_rtpsize", bytes(16))
