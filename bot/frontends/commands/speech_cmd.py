"""``glyphoxa transcribe FILE`` and ``glyphoxa say``: the speech stack from the command line.

``transcribe`` runs a recording through the very lane a Discord player gets (resample, VAD,
streaming STT with the campaign's names as vocabulary); ``say`` speaks a line in an NPC's voice
(from the campaign) or in a voice given by flags, into a WAV file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

from bot.frontends.commands._options import (
    Subcommands,
    add_campaign_option,
    add_json_option,
    load_campaign,
    load_config,
)

__all__ = ["register"]

log = logging.getLogger(__name__)


def register(sub: Subcommands) -> None:
    transcribe = sub.add_parser("transcribe", help="transcribe a recording like a live player")
    transcribe.add_argument("file", type=Path, help="audio file (WAV; other formats via PyAV)")
    transcribe.add_argument("--partials", action="store_true", help="also print partials, live")
    transcribe.add_argument("--model", help="Whisper size name or model directory")
    transcribe.add_argument("--vad", choices=["silero", "webrtc"], help="voice activity detector")
    add_campaign_option(transcribe)
    transcribe.add_argument(
        "--no-campaign", action="store_true", help="do not use campaign names as vocabulary"
    )
    add_json_option(transcribe, "the utterances (start and end in seconds, text)")
    transcribe.set_defaults(func=_transcribe)

    say = sub.add_parser("say", help="speak a line in an NPC's voice into a WAV file")
    say.add_argument("text", help="what to say")
    say.add_argument("--npc", metavar="NAME", help="NPC whose voice to use (from the campaign)")
    add_campaign_option(say)
    say.add_argument("--out", type=Path, required=True, help="output WAV (48 kHz stereo)")
    say.add_argument(
        "--voice-provider",
        choices=["piper", "openai", "espeak"],
        help="speech engine (default: the NPC's, else piper)",
    )
    say.add_argument("--voice", help="voice id or Piper model path")
    say.add_argument("--speed", type=float, help="speaking rate, 0.5-2.0")
    say.add_argument("--pitch", type=float, help="pitch shift in semitones, -12..12")
    say.set_defaults(func=_say)


async def _transcribe(args: argparse.Namespace) -> int:
    from bot.audio.speech import (
        FRAME_BYTES,
        Backchannel,
        FinalTranscript,
        PartialTranscript,
        SpeakerLane,
        Vocabulary,
        decode_audio_file,
    )
    from bot.table.assembly.providers import load_stt
    from campaigns.basics import GlyphoxaError

    config = load_config(args)
    if args.model:
        config.providers.stt.model = args.model
    if args.vad:
        config.speech.vad.provider = args.vad
    vocabulary = None
    if args.no_campaign and args.campaign:
        raise GlyphoxaError("transcribe: --campaign and --no-campaign contradict; give one")
    if not args.no_campaign:
        try:
            vocabulary = Vocabulary.from_campaign(load_campaign(args, config))
        except GlyphoxaError as error:
            if args.campaign:  # asked for by name: its problems are the user's to fix
                raise
            log.info("no campaign vocabulary: %s", error)
    stereo = await asyncio.to_thread(decode_audio_file, args.file)
    pcm = stereo.tobytes()
    stt = await load_stt(config.providers.stt)
    lane = SpeakerLane("file", stt=stt, config=config.speech, vocabulary=vocabulary)

    async def feed() -> None:
        start = time.monotonic()
        for index, offset in enumerate(range(0, len(pcm), FRAME_BYTES)):
            frame = pcm[offset : offset + FRAME_BYTES]
            lane.push(frame.ljust(FRAME_BYTES, b"\0"))
            if args.partials and index % 5 == 4:  # live pace, so partials happen as they would
                await asyncio.sleep(max(0.0, start + (index + 1) * 0.02 - time.monotonic()))
        for _ in range(50):  # one second of silence closes the last utterance
            lane.push(bytes(FRAME_BYTES))
        lane.end_input()

    feeder = asyncio.create_task(feed(), name="transcribe-feed")
    finals: list[dict[str, Any]] = []
    live = not args.json
    try:
        async for event in lane:
            if isinstance(event, PartialTranscript) and args.partials and live:
                print(f"  ... {event.text}", flush=True)
            elif isinstance(event, FinalTranscript):
                finals.append(
                    {"start": event.started_at, "end": event.ended_at, "text": event.text}
                )
                if live:
                    print(
                        f"[{event.started_at:7.2f} - {event.ended_at:7.2f}] {event.text}",
                        flush=True,
                    )
            elif isinstance(event, Backchannel) and args.partials and live:
                print(f"  (backchannel: {event.text})", flush=True)
        await feeder
    finally:
        feeder.cancel()
        await lane.aclose()
    if args.json:
        print(json.dumps({"transcript": finals}, indent=2, ensure_ascii=False))
    elif not finals:
        print("(no speech found)")
    return 0


async def _say(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from bot.audio.speech import Mixer, VoiceRouter, WavSink, speak_text
    from campaigns.basics import GlyphoxaError
    from campaigns.providers.voices import VoiceSettings
    from npcs.sentences import split_sentences

    config = load_config(args)
    flags = {
        "provider": args.voice_provider,
        "voice": args.voice,
        "speed": args.speed,
        "pitch_shift": args.pitch,
    }
    overrides = {k: v for k, v in flags.items() if v is not None}
    voice = VoiceSettings()
    name = args.npc or "narrator"
    if args.npc:
        campaign = load_campaign(args, config)
        npc = campaign.find_npc(args.npc)
        if npc is None:
            known = ", ".join(sorted(campaign.npcs)) or "none"
            raise GlyphoxaError(f"no NPC named {args.npc!r} in {config.campaign.path} ({known})")
        voice, name = npc.voice, npc.name
    try:
        voice = VoiceSettings.model_validate({**voice.model_dump(), **overrides})
    except ValidationError as error:
        problem = error.errors()[0]
        field = ".".join(str(part) for part in problem["loc"])
        raise GlyphoxaError(f"invalid voice setting {field}: {problem['msg']}") from None
    sentences = split_sentences(args.text)
    if not sentences:
        raise GlyphoxaError("nothing to say: the text is empty")
    router = VoiceRouter.from_config(config.providers.tts)
    mixer = Mixer(config.speech)
    started = time.monotonic()
    handle = mixer.speak(name)
    with WavSink(mixer, args.out) as sink:
        speaking = asyncio.create_task(speak_text(handle, router, voice, sentences))
        await sink.drain()
        result = await speaking
    first = (handle.playback_started_at or started) - started
    print(
        f"{name} ({voice.provider}) said {result.played_s:.2f} s into {args.out} "
        f"(first audio after {first * 1000:.0f} ms)"
    )
    return 0
