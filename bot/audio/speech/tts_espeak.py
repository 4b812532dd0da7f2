"""espeak-ng (fallback voice): robotic but always there, streamed straight from its stdout.

espeak-ng writes a 22.05 kHz mono WAV whose header claims an unknown length, so we read the
header once, then pass PCM through in ~50 ms pieces as it arrives.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import struct
from collections.abc import AsyncIterator

from campaigns.basics import AudioChunk, GlyphoxaError
from campaigns.providers.voices import VoiceSettings

__all__ = ["EspeakTts"]

log = logging.getLogger(__name__)

_BASE_WPM = 175
_BASE_PITCH = 50


class EspeakTts:
    """``TtsProvider`` over the ``espeak-ng`` command (Debian package ``espeak-ng``)."""

    def __init__(self, executable: str = "espeak-ng", default_voice: str = "en-us") -> None:
        self._executable = executable
        self.default_voice = default_voice

    def available(self) -> bool:
        return shutil.which(self._executable) is not None

    async def synthesize(self, text: str, voice: VoiceSettings) -> AsyncIterator[AudioChunk]:
        executable = shutil.which(self._executable)
        if executable is None:
            raise GlyphoxaError("espeak-ng is not installed (apt-get install espeak-ng)")
        pitch = max(0, min(99, round(_BASE_PITCH + 4 * voice.pitch_shift)))
        process = await asyncio.create_subprocess_exec(
            executable,
            "--stdout",
            "-v",
            voice.voice or self.default_voice,
            "-s",
            str(round(_BASE_WPM * voice.speed)),
            "-p",
            str(pitch),
            "--",
            text,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert process.stdout is not None
        try:
            header = await process.stdout.readexactly(44)
            if header[:4] != b"RIFF" or header[36:40] != b"data":
                raise GlyphoxaError("espeak-ng produced no WAV audio")
            (rate,) = struct.unpack_from("<I", header, 24)
            piece = rate // 20 * 2  # 50 ms of s16 mono
            carry = b""
            while True:
                data = await process.stdout.read(piece)
                if not data:
                    break
                data = carry + data
                usable = len(data) - len(data) % 2
                carry = data[usable:]
                if usable:
                    yield AudioChunk(data[:usable], rate)
            await process.wait()
        except asyncio.IncompleteReadError:
            stderr = await process.stderr.read() if process.stderr else b""
            raise GlyphoxaError(
                f"espeak-ng failed for voice {voice.voice or self.default_voice!r}: "
                f"{stderr.decode(errors='replace').strip()}"
            ) from None
        finally:
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
