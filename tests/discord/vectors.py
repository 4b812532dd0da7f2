"""Real Discord voice packets with their keys, published by discord.js.

Source: discord.js ``packages/voice/__mocks__/rtp.ts`` (MIT), as found in the public code
corpus in the fork ovencord/ovencord at commit 0a23a5af356f7ca1c0b03cc68935785c34a181c9
(the same constants are imported by discord.js ``packages/voice/__tests__/VoiceReceiver.test.ts``,
which also states the expected sequence numbers, timestamps and SSRCs used below). The first
three are silence packets captured from Discord clients without their keys (useful for the
clear-text header and the extension/strip logic); the last two carry their transport keys.
"""

from __future__ import annotations

# Desktop client, X bit set, one-word extension; SSRC 341124, seq 10217, ts 4157324497.
RTP_PACKET_DESKTOP = bytes(
    [0x90, 0x78, 0x27, 0xE9, 0xF7, 0xCB, 0xBC, 0xD1, 0x00, 0x05, 0x34, 0x84, 0xBE, 0xDE, 0x00,
     0x01, 0x8A, 0xBB, 0xE2, 0x97, 0x21, 0x9F, 0x1F, 0x67, 0xCD, 0x17, 0x91, 0x56, 0x43, 0xA0,
     0x98, 0xFD, 0xA9, 0x25, 0x81, 0x63, 0x13, 0xB4, 0x1E, 0xAE, 0x88, 0xE4, 0x00, 0xED, 0x00,
     0x00, 0x00]
)  # fmt: skip
RTP_PACKET_DESKTOP_DECRYPTED = bytes([0x10, 0xFF, 0x90, 0x00, 0xF8, 0xFF, 0xFE])

# Chrome client, no extension; SSRC 172360, seq 18143, ts 660155095.
RTP_PACKET_CHROME = bytes(
    [0x80, 0x78, 0x46, 0xDF, 0x27, 0x59, 0x2A, 0xD7, 0x00, 0x02, 0xA1, 0x48, 0x42, 0x9E, 0x53,
     0xEC, 0x73, 0xC1, 0x71, 0x22, 0x71, 0x60, 0x90, 0xFF, 0x1B, 0x20, 0x47, 0x2C, 0xDC, 0x86,
     0xC4, 0x9A, 0x00, 0x00, 0x00]
)  # fmt: skip
RTP_PACKET_CHROME_DECRYPTED = bytes([0xF8, 0xFF, 0xFE])

# Android client, one-word extension; SSRC 172596, seq 14800, ts 3763991879.
RTP_PACKET_ANDROID = bytes(
    [0x90, 0x78, 0x39, 0xD0, 0xE0, 0x59, 0xF5, 0x47, 0x00, 0x02, 0xA2, 0x34, 0xBE, 0xDE, 0x00,
     0x01, 0x12, 0x6D, 0x87, 0x56, 0x25, 0xC8, 0x3E, 0x96, 0xC0, 0x71, 0x9A, 0x01, 0x83, 0x0E,
     0x01, 0x62, 0x91, 0x95, 0x1F, 0x76, 0x57, 0x15, 0x41, 0xAB, 0xEE, 0x5B, 0xAC, 0x8B, 0x00,
     0x00, 0x00]
)  # fmt: skip
RTP_PACKET_ANDROID_DECRYPTED = bytes([0x10, 0xFF, 0x90, 0x00, 0xF8, 0xFF, 0xFE])

OPUS_SILENCE = bytes([0xF8, 0xFF, 0xFE])

# aead_xchacha20_poly1305_rtpsize, X bit with a two-word extension; SSRC 48921, seq 22118,
# ts 3220386864. The 61-byte plaintext starts with the 8-byte extension body.
XCHACHA20_ENCRYPTED = bytes(
    [144, 120, 86, 102, 191, 243, 52, 48, 0, 0, 191, 25, 190, 222, 0, 2, 211, 29, 103, 76, 73,
     102, 37, 162, 65, 41, 39, 252, 26, 85, 90, 228, 241, 169, 112, 65, 95, 183, 236, 4, 87, 207,
     215, 195, 180, 39, 60, 224, 221, 89, 32, 187, 208, 228, 145, 252, 132, 189, 103, 208, 180,
     183, 217, 50, 70, 86, 20, 28, 142, 66, 251, 122, 214, 17, 7, 173, 203, 117, 148, 232, 118,
     103, 8, 136, 227, 136, 249, 243, 135, 41, 31, 103, 146, 15, 1, 0, 0]
)  # fmt: skip
XCHACHA20_KEY = bytes(
    [105, 217, 109, 27, 247, 101, 71, 49, 71, 151, 172, 85, 91, 11, 201, 23, 43, 242, 147, 81,
     96, 60, 157, 50, 63, 200, 133, 174, 108, 144, 251, 110]
)  # fmt: skip
XCHACHA20_DECRYPTED = bytes.fromhex(
    "3264e66210e390027807d62f5223209aab2ccc1c888ecbd94de5337a4b2beda7af5f8db259997536f288f5c7"
    "9f47af925a963bd89f3ab413ce2fae0a37"
)

# aead_aes256_gcm_rtpsize, no extension; SSRC 50615, seq 41884, ts 2668332016; a silence frame.
AES256GCM_ENCRYPTED = bytes(
    [128, 120, 163, 156, 159, 11, 131, 240, 0, 0, 197, 183, 175, 91, 102, 101, 195, 6, 200, 143,
     117, 72, 108, 44, 165, 123, 121, 49, 111, 38, 3, 0, 0, 0, 90]
)  # fmt: skip
AES256GCM_KEY = bytes(
    [109, 77, 195, 27, 111, 50, 231, 84, 179, 255, 217, 217, 34, 227, 19, 106, 195, 20, 150, 237,
     38, 4, 101, 210, 5, 90, 8, 241, 58, 223, 24, 24]
)  # fmt: skip
AES256GCM_DECRYPTED = OPUS_SILENCE
