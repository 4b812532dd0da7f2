"""Start the NPC's answer on the words heard at a pause, before the turn is declared over.

When the lane judges a pause (``TurnCheck``) and the words so far go to one NPC, the engine
is started on them. Its events are buffered, nothing is spoken. If
the final transcript says the same words (and routes to the same NPC at the same tier), the turn
adopts the running answer (and the first sentence's audio, synthesized ahead) and saves the
endpointing wait and the final's recognition time; otherwise the speculation is cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

from bot.audio.speech import TtsProvider
from bot.audio.speech.scheduler import CpuScheduler
from campaigns.basics import AudioChunk, Tier
from campaigns.providers.voices import VoiceSettings
from npcs.context import SceneLine
from npcs.engines import Engine, EngineEvent, Filler, Sentence, TurnRequest
from npcs.schema import NpcDefinition

__all__ = ["Speculation", "normalize"]

log = logging.getLogger(__name__)

_WORDS = re.compile(r"[a-z0-9']+")


def normalize(text: str) -> str:
    """Words only, lower case: what must match between a partial and the final."""
    return " ".join(_WORDS.findall(text.lower()))


@dataclass(slots=True)
class Speculation:
    """An engine turn running on a partial; ``events()`` replays it for the adopting turn."""

    speaker: str
    utterance_id: int
    npc: str
    text: str
    tier: Tier
    snapshot: Callable[[], Awaitable[str | None]] | None = None
    scheduler: CpuScheduler | None = None
    """While it thinks, table talk and chatter step back (this is the answer the player will
    most likely hear, and its first token is the turn's latency)."""
    brief: str | None = None
    """What the DM asks of the answer (``NpcSeat.brief``): the final adopts the guess only if
    its answer is asked the same."""
    started: float = field(default_factory=time.monotonic)
    task: asyncio.Task[None] | None = None
    voiced: dict[str, asyncio.Task[list[AudioChunk]]] = field(default_factory=dict)
    """First sentence -> its audio, synthesized ahead (never fed to the mixer until adopted)."""
    _queue: asyncio.Queue[EngineEvent | None] = field(default_factory=asyncio.Queue)
    _adopted: asyncio.Event = field(default_factory=asyncio.Event)
    _error: BaseException | None = None
    _tts: TtsProvider | None = None
    _voice: VoiceSettings | None = None

    @property
    def key(self) -> str:
        return normalize(self.text)

    def start(
        self,
        engine: Engine,
        npc: NpcDefinition,
        scene: list[SceneLine],
        tts: TtsProvider | None = None,
    ) -> Speculation:
        """Run the engine now; with ``tts``, also synthesize the first sentence ahead."""
        self._tts, self._voice = tts, npc.voice
        lines = [*scene, SceneLine(self.speaker, self.text, None, self.started)]
        self.task = asyncio.create_task(
            self._run(engine, npc, lines), name=f"table:speculate:{self.npc}"
        )
        log.debug("speculating %s on %r", self.npc, self.text)
        return self

    async def _run(self, engine: Engine, npc: NpcDefinition, scene: list[SceneLine]) -> None:
        on_its_way = self.scheduler.guessing() if self.scheduler else contextlib.nullcontext()
        try:
            request = TurnRequest(
                npc=npc,
                speaker=self.speaker,
                text=self.text,
                tier=self.tier,
                scene=scene,
                entity_snapshot=await self.snapshot() if self.snapshot is not None else None,
                confirmed=self._adopted.wait,  # tools with side effects wait for the final
                direction=self.brief,
            )
            events = engine.respond(request)
            with on_its_way:
                async with contextlib.aclosing(events):
                    async for event in events:
                        self._queue.put_nowait(event)
                        if isinstance(event, Sentence | Filler) and not self.voiced:
                            self._synthesize_ahead(event.text)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # handed to the adopting turn, which records it
            self._error = error
        finally:
            self._queue.put_nowait(None)

    async def events(self) -> AsyncIterator[EngineEvent]:
        while (event := await self._queue.get()) is not None:
            yield event
        if self._error is not None:
            raise self._error

    def _synthesize_ahead(self, sentence: str) -> None:
        if self._tts is None or self._voice is None:
            return
        tts, voice = self._tts, self._voice

        async def collect() -> list[AudioChunk]:
            return [chunk async for chunk in tts.synthesize(sentence, voice)]

        name = f"table:speculate-tts:{self.npc}"
        self.voiced[sentence] = asyncio.create_task(collect(), name=name)

    def adopt(self) -> None:
        """The final transcript confirmed the guess: tools with side effects may run now."""
        self._adopted.set()

    def cancel(self) -> None:
        for ahead in self.voiced.values():
            ahead.cancel()
        if self.task is not None and not self.task.done():
            self.task.cancel()
            log.debug("speculation for %s on %r dropped", self.npc, self.text)
