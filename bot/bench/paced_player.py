"""One talking player at Discord's pace through one tree's receive path: the CPU of the process.

Run as a script (``python paced_player.py ROOT PATH SECONDS LINE_JSON``), never imported: ROOT
goes first on ``sys.path``, so ``bot`` is that tree's code. ``glyphoxa bench receive`` runs it on
this tree and on the baseline receive path (``receive_paced.BEFORE_COMMIT``, from git), in
turns. So it only uses what both trees have (``LocalDaveGroup``, ``LoopbackSpeaker``,
``VoiceReceiver``, ``SpeakerLane``, ``SileroVad``), each from where that tree keeps it: the audio
room is ``bot.audio`` now and was ``bot`` itself in the baseline.

PATH: ``before`` (that tree's Discord path: 48 kHz decode, ``SpeakerQueues`` on the loop, each
frame pushed to the lane), ``loop`` (this tree, 16 kHz, each frame pushed through the loop) or
``now`` (this tree as the Discord client runs it: packets in pairs, frames heard on the socket
thread). Prints one JSON line: the process's CPU in % of a core while the player talked, and
while a socket thread only kept the same pace (``idle``).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import resource
import sys
import threading
import time
from typing import Any


class _NoWords:
    """The lane's recognizer: no words, at once (``glyphoxa bench speech`` measures that)."""

    cpu_bound = False

    async def transcribe(self, audio: Any, *, partial: bool = False, vocabulary: Any = None) -> str:
        return ""


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _audio(module: str) -> Any:
    """``module`` (``speech.vad``) of this tree's audio room."""
    try:
        return importlib.import_module(f"bot.audio.{module}")
    except ModuleNotFoundError:  # the baseline tree: the audio room was bot itself
        return importlib.import_module(f"bot.{module}")


async def _main(path: str, seconds: float, line: list[bytes], voiced: int) -> dict[str, Any]:
    speech, dave_room = _audio("speech"), _audio("voice.dave")
    SpeakerLane, SpeechEnded = speech.SpeakerLane, speech.SpeechEnded
    SileroVad = _audio("speech.vad").SileroVad
    OPUS_SILENCE, DaveReceiver = dave_room.OPUS_SILENCE, dave_room.DaveReceiver
    try:
        loopback = importlib.import_module("bot.bench.doubles.voice_loopback")
    except ModuleNotFoundError:  # the baseline tree keeps the loopback beside the receiver
        loopback = _audio("voice.loopback")
    LocalDaveGroup, LoopbackSpeaker = loopback.LocalDaveGroup, loopback.LoopbackSpeaker
    ensure_opus_loaded = _audio("voice.opus_decode").ensure_opus_loaded
    VoiceReceiver = _audio("voice.receiver").VoiceReceiver
    make_cipher = _audio("voice.transport_crypto").make_cipher

    ensure_opus_loaded()
    said = [*line[:voiced], *[OPUS_SILENCE] * 5]  # a client sends five silence frames, then none
    schedule: list[tuple[float, bytes]] = []
    at = 0.0
    while at < seconds:
        for opus in said:
            schedule.append((at, opus))
            at += 0.02
        at += 1.0
    group = LocalDaveGroup(channel_id=77)
    bot, remote = group.new_session(1), group.new_session(100)
    group.join([bot, remote])
    mode, key = "aead_aes256_gcm_rtpsize", bytes(range(32))
    sender = LoopbackSpeaker(1000, make_cipher(mode, key), remote)
    datagrams = [(t, sender.packet(o, encrypt_dave=o != OPUS_SILENCE)) for t, o in schedule]
    loop = asyncio.get_running_loop()
    lane = SpeakerLane("player", stt=_NoWords(), vad=SileroVad())
    dave = DaveReceiver(lambda: (bot, 1))
    if path == "before":
        SpeakerQueues = _audio("voice.speakers").SpeakerQueues
        receiver = VoiceReceiver(loop, SpeakerQueues(lambda f: lane.push(f.pcm)), dave=dave)
    else:
        SttSpeakerDecoder = _audio("voice.stt_decode").SttSpeakerDecoder

        def push(frames: Any) -> None:
            for frame in frames:
                lane.push(frame.pcm)

        receiver = VoiceReceiver(
            loop, push, dave=dave, decoder=SttSpeakerDecoder, hold_at_pace=path == "now"
        )
        if path == "now":
            receiver.hear = lambda frames: [] if lane.hear(*(f.pcm for f in frames)) else frames
    receiver.set_transport(mode, key)
    receiver.map_ssrc(1000, 100)
    ended = 0

    async def read() -> None:
        nonlocal ended
        async for event in lane:
            ended += isinstance(event, SpeechEnded)

    reader = loop.create_task(read())

    async def measure(on_datagram: Any) -> float:
        def run() -> None:
            started = time.perf_counter()
            for t, datagram in datagrams:
                delay = started + t - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                on_datagram(datagram)

        cpu, wall = _cpu_s(), time.perf_counter()
        thread = threading.Thread(target=run, name="socket-reader")
        thread.start()
        await asyncio.to_thread(thread.join)
        await asyncio.sleep(max(0.0, wall + schedule[-1][0] + 1.5 - time.perf_counter()))
        return (_cpu_s() - cpu) / (time.perf_counter() - wall) * 100

    idle = await measure(lambda datagram: None)
    used = await measure(receiver.on_datagram)
    lane.end_input()
    await asyncio.wait_for(reader, timeout=30)
    engine = getattr(lane._segmenter._vad, "engine", "onnxruntime")
    return {"path": path, "idle": idle, "used": used, "ended": ended, "engine": engine}


if __name__ == "__main__":
    _root, _path, _seconds, _line_file = sys.argv[1:5]
    sys.path[0] = _root  # instead of this file's folder: ``bot`` is ROOT's
    with open(_line_file, encoding="utf-8") as _file:
        _line = json.load(_file)
    _opus = [bytes.fromhex(frame) for frame in _line["opus"]]
    print(json.dumps(asyncio.run(_main(_path, float(_seconds), _opus, _line["voiced"]))))
