"""``glyphoxa bench e2e --peer pipecat``: the same FAST lines through another voice framework,
in the same run, with the same models, alternated line by line with ours.

The peer runs in its own virtualenv (:mod:`bot.bench.peer_venv`, created on first use) as a
long-lived process (``pipecat_peer/main.py``); ours runs as one too (:mod:`bot.bench.our_side`).
Both load the identical model files (Silero v6 from faster-whisper, Smart Turn v3.2, Whisper
tiny.en, the NPC's Piper voice) and talk to one llama.cpp server started here, the one our table
would start, with the NPC's system prompt, tools and sampling; the peer's tool calls run on our
tool host. The lines are synthesized once, in the FAST sample's player voice, and the same WAV
bytes go to both. See docs/peer-comparison.md for every setting and how to read the ratio.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import wave
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bot.bench.duel import alternate, duel_results
from bot.bench.line_protocol import LineRequest
from bot.bench.line_server import LineServer, SideFailed
from bot.bench.peer_venv import PeerPackage, PeerUnavailable, ensure_venv
from bot.bench.result import BenchResult
from campaigns.basics import GlyphoxaError

__all__ = ["PEERS", "WARM_UP_LINE", "PeerComparison", "check_peer", "compare_with_peer"]

Say = Callable[[str], None]

PEERS: dict[str, PeerPackage] = {
    "pipecat": PeerPackage(
        name="pipecat",
        requirement="pipecat-ai[whisper,piper,openai]==1.14.0",
        version="1.14.0",
        check="import pipecat.services.whisper.stt, pipecat.services.piper.tts, "
        "pipecat.services.openai.llm, pipecat.audio.vad.silero",
        size_note="about 300 MB from PyPI, 900 MB on disk, 2-3 min",
    ),
}
"""Peers ``--peer`` knows: name -> the pinned package of its virtualenv."""

_SCRIPTS = {"pipecat": Path(__file__).with_name("pipecat_peer") / "main.py"}
WARM_UP_LINE = "Bartok, good evening to you."
"""Said to each side first and left out of the figures: a first turn pays one-off costs."""
_OURS = "glyphoxa"
_QUICK_LINES = 4
_WHISPER_DECODE = {"beam_size": 1, "temperature": 0.0, "without_timestamps": True,
                   "condition_on_previous_text": False, "vad_filter": False}  # fmt: skip
"""How our recognizer decodes (bot.audio.speech.stt_whisper); the peer's Whisper decodes the
same."""


def check_peer(name: str) -> None:
    """Refuse an unknown ``--peer`` with the list of known ones."""
    if name not in PEERS:
        raise GlyphoxaError(
            f"--peer {name!r} is not a known peer; known peers: {', '.join(sorted(PEERS))}"
        )


class PeerComparison:
    """One ``--peer`` run: :meth:`prepare` early (the virtualenv, a config the peer cannot
    match: said at once, not after the rest of the bench), :meth:`rows` at the end."""

    def __init__(self, name: str, say: Say) -> None:
        check_peer(name)
        self.package = PEERS[name]
        self.say = say
        self.python: Path | None = None
        self.failure: str | None = None

    async def prepare(self) -> None:
        """Check the config and make (or find) the peer's virtualenv; a failure is kept."""
        try:
            _model_files(*_table_parts())
            self.python = await ensure_venv(self.package, self.say)
        except PeerUnavailable as error:
            self._failed(error)

    async def rows(self, *, quick: bool) -> list[BenchResult]:
        """The comparison rows; when the peer (or our side) cannot run, one row saying why."""
        if self.python is None and self.failure is None:
            await self.prepare()
        if self.python is not None and self.failure is None:
            try:
                return await _compare(self.package, self.python, quick=quick, say=self.say)
            except (PeerUnavailable, SideFailed) as error:
                self._failed(error)
        name = self.package.name
        title = f"{name} voice-to-voice p50 (FAST lines, alone, alternated)"
        return [BenchResult(title, float("nan"), "ms", f"{name} could not run: {self.failure}")]

    def _failed(self, error: GlyphoxaError) -> None:
        self.failure = str(error)
        self.say(f"{self.package.name}: {error}")


async def compare_with_peer(name: str, *, quick: bool, say: Say) -> list[BenchResult]:
    """Prepare and run one comparison (see :class:`PeerComparison`)."""
    return await PeerComparison(name, say).rows(quick=quick)


def _table_parts() -> tuple[Any, Any]:
    """Our config and the NPC the FAST lines are said to (the example campaign's Bartok)."""
    from bot.settings.loader import load_config
    from npcs.campaign import load_campaign

    npc = load_campaign(_example_campaign()).find_npc("Bartok")
    assert npc is not None, "the example campaign has Bartok"
    return load_config(None), npc


def _example_campaign() -> Path:
    from bot.bench.e2e_scenes import EXAMPLE_SCENE

    return EXAMPLE_SCENE.parent


async def _compare(
    package: PeerPackage, python: Path, *, quick: bool, say: Say
) -> list[BenchResult]:
    from bot.table.assembly.providers import local_llm_server

    config, npc = _table_parts()
    models = _model_files(config, npc)
    with tempfile.TemporaryDirectory(prefix=f"glyphoxa-peer-{package.name}-") as folder:
        requests = await _lines(config, Path(folder), quick, say)
        say("starting the LLM server both sides share")
        async with local_llm_server(config.providers.llm) as server:
            model = server.model_id or config.providers.llm.model or "local"
            argv = [
                sys.executable,
                "-m",
                "bot.bench.our_side",
                "--llm-model",
                model,
                "--llm-base-url",
                server.base_url,
                "--campaign",
                str(_example_campaign()),
            ]
            ours = LineServer(_OURS, argv, cwd=os.getcwd())
            say("starting our side (the table, as glyphoxa rehearse opens it)")
            async with ours:
                settings = _peer_settings(ours.ready, models, server.base_url, model, config)
                path = Path(folder) / "peer-settings.json"
                path.write_text(json.dumps(settings, indent=2), encoding="utf-8")
                say(f"starting {package.name} {package.version} in its virtualenv")
                peer = LineServer(package.name, [str(python), str(_SCRIPTS[package.name]),
                                                 "--config", str(path)],
                                  env=_peer_env(), on_tool_call=ours.run_tool)  # fmt: skip
                async with peer:
                    say(f"alternating {len(requests) - 1} lines (and a warm-up): "
                        f"{_OURS}, {package.name}, {_OURS}, {package.name}...")  # fmt: skip
                    duel = await alternate(ours, peer, requests, say)
                method = _method(package, duel.measured(), ours.ready, peer.ready, settings)
    return duel_results(duel, _OURS, package.name, method)


def _peer_env() -> dict[str, str]:
    """Ours minus what would make the peer's python see our packages."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def _model_files(config: Any, npc: Any) -> dict[str, str]:
    """The files our table loads, for the peer to load too; a provider the peer cannot match
    (a cloud LLM, another recognizer or voice) is refused with the reason."""
    from bot.audio.speech.stt_whisper import resolve_whisper_model
    from bot.audio.speech.tts_piper import default_piper_model
    from bot.audio.speech.turn_model import smart_turn_dir
    from bot.audio.speech.vad import silero_model_path

    providers = config.providers
    if providers.llm.name != "local" or providers.llm.base_url:
        raise PeerUnavailable(
            "the peer comparison runs on the bundled local LLM; set providers.llm.name: local "
            "(without base_url) in glyphoxa.yaml"
        )
    if providers.stt.name != "faster-whisper":
        raise PeerUnavailable(
            f"the peer hears through faster-whisper, not providers.stt {providers.stt.name!r}: "
            "set providers.stt.name: faster-whisper"
        )
    if npc.voice.provider != "piper":
        raise PeerUnavailable(
            f"{npc.name}'s voice is {npc.voice.provider}; the peer speaks with Piper only"
        )
    piper = npc.voice.voice or (providers.tts.model if providers.tts.name == "piper" else None)
    turn = config.speech.turn.model_path
    return {
        "silero": str(silero_model_path()),
        "smart_turn": str(turn or smart_turn_dir() / "data" / "smart-turn-v3.2-cpu.onnx"),
        "whisper": str(resolve_whisper_model(providers.stt.model)),
        "piper": str(Path(piper).expanduser() if piper else default_piper_model()),
    }


async def _lines(config: Any, folder: Path, quick: bool, say: Say) -> list[LineRequest]:
    """The warm-up and the FAST lines in the player's voice, one 16 kHz mono WAV each."""
    from bot.audio.speech import VoiceRouter
    from bot.bench.e2e_scenes import fast_scene
    from bot.frontends.rehearsal.players import synthesize_lines

    scene = fast_scene(_example_campaign(), full_table=False)
    lines = scene.lines[:_QUICK_LINES] if quick else scene.lines
    warm = lines[0].model_copy(update={"text": WARM_UP_LINE})
    scene = scene.model_copy(update={"lines": [warm, *lines]})
    audio = await synthesize_lines(scene, VoiceRouter.from_config(config.providers.tts), say)
    requests = []
    for index, item in enumerate(audio):
        path = folder / f"line-{index:02d}.wav"
        with wave.open(str(path), "wb") as wav:
            wav.setnchannels(1)
            wav.setsampwidth(2)
            wav.setframerate(16_000)
            wav.writeframes(item.pcm)
        requests.append(LineRequest(index, str(path), round(float(item.voiced_end_s), 4),
                                    item.line.text or "", warm_up=index == 0))  # fmt: skip
    return requests


def _peer_settings(
    persona: dict[str, Any], models: dict[str, str], base_url: str, model: str, config: Any
) -> dict[str, Any]:
    options = config.providers.stt.options
    return {
        "llm": {"base_url": base_url, "model": model, "temperature": persona.get("temperature"),
                "max_tokens": persona.get("max_tokens")},
        "system_prompt": persona["system_prompt"],
        "tools": persona.get("tools") or [],
        "models": models,
        "whisper": {"compute_type": "int8", "cpu_threads": options.cpu_threads,
                    "prompt": persona.get("whisper_prompt") or None,
                    "decode": {**_WHISPER_DECODE, "beam_size": options.beam_size}},
        "playout_speed": 8.0,
    }  # fmt: skip


def _method(
    package: PeerPackage,
    measured: list[Any],
    ours: dict[str, Any],
    peer: dict[str, Any],
    settings: dict[str, Any],
) -> str:
    """Every setting of the comparison, for the first row's method text."""
    vad, turn = peer.get("vad") or {}, peer.get("smart_turn") or {}
    whisper, llm = settings["whisper"], settings["llm"]
    tools = ", ".join(t["function"]["name"] for t in settings["tools"]) or "none"
    files = ", ".join(f"{kind} {Path(path).name}" for kind, path in settings["models"].items())
    version = peer.get(package.name, package.version)
    parts = [
        f"{len(measured)} FAST lines to {ours.get('npc')} after one warm-up line each (not "
        "counted); the same 16 kHz WAV bytes said at 1x to each side in turn, ours then "
        f"{package.name} {version}, line by line; one llama.cpp server shared "
        f"({Path(llm['model']).name}, our table's options); voice-to-voice = the 20 ms frame "
        "holding the last voiced sample pushed -> first answer audio out (ours: first NPC frame "
        "pulled from the mixer on its 20 ms clock; peer: first TTS audio written to its output "
        "transport)",
        f"{package.name}: transport in (20 ms frames at 1x) -> WhisperSTTService (segmented on "
        f"VAD stops, {peer.get('stt_trailing_silence_s')} s trailing silence) -> "
        "LLMContextAggregatorPair user aggregator (SileroVADAnalyzer confidence "
        f"{vad.get('confidence')}, start_secs {vad.get('start_secs')}, stop_secs "
        f"{vad.get('stop_secs')}, min_volume {vad.get('min_volume')}; default turn strategies: "
        "VAD or transcription starts a turn, interruptions on; TurnAnalyzerUserTurnStopStrategy "
        f"with LocalSmartTurnAnalyzerV3 (1 thread, stop_secs {turn.get('stop_secs')}, "
        f"pre_speech_ms {turn.get('pre_speech_ms')}, max_duration_secs "
        f"{turn.get('max_duration_secs')}) ends it once the transcript is final; "
        f"user_turn_stop_timeout {peer.get('user_turn_stop_timeout')} s) -> OpenAILLMService "
        f"(streamed; our system prompt; tools {tools} run on our tool host; temperature "
        f"{llm['temperature']}, max_tokens {llm['max_tokens']}) -> PiperTTSService "
        f"({peer.get('tts_text_aggregation')}) -> transport out "
        f"({peer.get('audio_out_10ms_chunks')}x10 ms chunks) -> assistant aggregator",
        f"the same model files: {files} (Silero: our v6 file behind Pipecat's analyzer; "
        "Pipecat ships another Silero export)",
        f"run as ours runs them: Whisper {whisper['compute_type']}, {whisper['cpu_threads']} "
        f"threads, beam {whisper['decode']['beam_size']}, temperature 0, no timestamps, our "
        "names prompt; Piper's onnxruntime without spinning threads; Silero on 1 thread",
        "indicative on a shared machine: read the ratios, not the absolute figures",
    ]
    return "; ".join(parts)
