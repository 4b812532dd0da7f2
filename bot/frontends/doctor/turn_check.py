"""Doctor check of the end-of-turn model: it loads, and a finished line sounds finished."""

from __future__ import annotations

import asyncio

import numpy as np

from bot.audio.speech import STT_SAMPLE_RATE
from bot.frontends.doctor.runner import DoctorContext, Problem
from campaigns.basics import GlyphoxaError

__all__ = ["check_turn"]


async def check_turn(context: DoctorContext) -> str:
    """Smart Turn v3.2 (``speech.turn``) loads from the pipecat-ai wheel and scores the
    synthesized sample line, followed by a short pause, as a finished turn."""
    from bot.audio.speech.turn_model import SmartTurnModel

    turn = context.config.speech.turn
    hangover = context.config.speech.vad.hangover_ms
    if turn.detector == "off":
        return f"off (speech.turn.detector): turns end after the {hangover} ms VAD hangover"
    try:
        model = await asyncio.to_thread(SmartTurnModel, turn.model_path)
    except GlyphoxaError as error:
        raise Problem(
            f"{error}; turns would end after the {hangover} ms hangover instead",
            "./scripts/setup (installs pipecat-ai==1.14.0 --no-deps), or set "
            "speech.turn.model_path",
        ) from None
    if context.sample is None:
        raise Problem("no synthesized audio to test with", "fix the voices check first")
    pause = np.zeros(STT_SAMPLE_RATE // 5, dtype=np.float32)
    audio = np.concatenate([context.sample, pause])
    probability = await asyncio.to_thread(model.probability, audio)
    if probability < turn.threshold:
        raise Problem(
            f"the turn model scored a finished line {probability:.2f} (below "
            f"speech.turn.threshold {turn.threshold}): every turn would wait "
            f"{turn.incomplete_ms} ms",
            "reinstall pipecat-ai==1.14.0 (./scripts/setup), or check speech.turn.model_path",
        )
    return (
        f"Smart Turn v3.2: a finished line scores {probability:.2f}; finished turns end after "
        f"{turn.complete_ms} ms of silence, unfinished ones after {turn.incomplete_ms} ms"
    )
