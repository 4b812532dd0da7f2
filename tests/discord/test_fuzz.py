"""Fuzz: 100,000 random and mutated datagrams; nothing escapes and every packet is accounted for."""

from __future__ import annotations

import random
import time

from bot.audio.voice.receive_counters import DropReason
from bot.audio.voice.rtp import build_header
from bot.audio.voice.transport_crypto import XChaCha20Cipher

from .conftest import KEY, SPEAKER_SSRC, Rig, tone

TOTAL = 100_000


def _datagrams(rig: Rig, rng: random.Random) -> list[bytes]:
    opus = [rig.speaker.encode(pcm) for pcm in tone(50)]
    valid = [rig.speaker.packet(opus[i % 50]) for i in range(TOTAL // 10)]
    sent = 0
    cipher = XChaCha20Cipher(KEY)
    out: list[bytes] = []
    for i in range(TOTAL):
        kind = i % 10
        # Mutations start from packets already sent: nobody can forge a *future* valid one.
        base = valid[rng.randrange(max(sent, 1))]
        if kind == 0:  # pure noise of any length
            out.append(rng.randbytes(rng.randrange(0, 120)))
        elif kind == 1:  # noise with a plausible RTP header for the known SSRC
            header = build_header(rng.randrange(65536), 0, SPEAKER_SSRC)
            out.append(header + rng.randbytes(rng.randrange(0, 80)))
        elif kind in (2, 3):  # bit flips anywhere in a valid packet
            packet = bytearray(base)
            for _ in range(rng.randrange(1, 4)):
                packet[rng.randrange(len(packet))] ^= 1 << rng.randrange(8)
            out.append(bytes(packet))
        elif kind == 4:  # truncated or extended
            cut = rng.randrange(len(base))
            out.append(base[:cut] if rng.random() < 0.7 else base + rng.randbytes(cut))
        elif kind == 5:  # transport-valid, hostile contents: bad padding/extension/DAVE/Opus
            header = build_header(
                rng.randrange(65536),
                0,
                SPEAKER_SSRC,
                extension=rng.random() < 0.5,
                extension_words=rng.randrange(0, 40),
                padded=rng.random() < 0.5,
            )
            nonce = rng.randbytes(4)
            body = rng.randbytes(rng.randrange(0, 60))
            out.append(header + cipher.encrypt(header, body, nonce) + nonce)
        elif kind == 6:  # header fields rewritten: CC, X, P bits and payload type
            packet = bytearray(base)
            packet[0] = (packet[0] & 0xC0) | rng.randrange(64)
            if rng.random() < 0.3:
                packet[1] = rng.randrange(256)
            out.append(bytes(packet))
        elif kind == 7:  # the genuine stream, in order, interleaved with the garbage
            out.append(valid[sent])
            sent += 1
        else:  # replays of genuine packets already sent (an attacker cannot know later ones)
            out.append(valid[rng.randrange(max(sent, 1))])
    return out


async def test_fuzz_no_exception_escapes_and_books_balance() -> None:
    rig = Rig()
    rng = random.Random(7)
    datagrams = _datagrams(rig, rng)
    started = time.perf_counter()
    for datagram in datagrams:
        rig.receiver.on_datagram(datagram)  # the socket-thread entry point itself
    elapsed = time.perf_counter() - started
    rig.receiver.flush()
    c = rig.receiver.snapshot()
    assert c.received == TOTAL
    assert c.dropped[DropReason.INTERNAL_ERROR] == 0
    assert c.accepted + sum(c.dropped.values()) == TOTAL
    accounted = c.decoded + c.late + c.duplicate + c.decode_errors + c.discarded
    assert accounted + rig.receiver.buffered() == c.accepted
    # Every kind of rejection was exercised.
    for reason in ("short", "not_rtp", "payload_type", "decrypt_failed", "dave_failed"):
        assert c.dropped[DropReason(reason)] > 0, reason
    assert c.dropped[DropReason.BAD_PADDING] + c.dropped[DropReason.BAD_EXTENSION] > 0
    assert c.decoded > 5_000
    assert elapsed < 30, f"fuzz loop took {elapsed:.1f}s"
