"""A discord.py ``VoiceClient`` that can hear, built on discord.py 2.7.1's own hooks.

discord.py runs the voice gateway, UDP socket and DAVE handshake but never reads audio. We pass
a websocket ``hook`` to ``VoiceConnectionState`` (it sees every voice gateway JSON message after
discord.py handled it: READY, SESSION_DESCRIPTION, SPEAKING, CLIENT_DISCONNECT) and register a
socket listener that hands each UDP datagram to our :class:`~bot.voice.receiver.VoiceReceiver`.
The DAVE session stays discord.py's: we only read ``dave_session`` and ``dave_protocol_version``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import discord
from discord.voice_state import VoiceConnectionState

from bot.voice.dave import DaveReceiver
from bot.voice.receiver import FrameSink, VoiceFrame, VoiceReceiver
from bot.voice.stt_decode import SttSpeakerDecoder

if TYPE_CHECKING:
    import davey
    from discord.gateway import DiscordVoiceWebSocket

__all__ = ["ListeningVoiceClient"]

log = logging.getLogger(__name__)


def _discard(frames: Sequence[VoiceFrame]) -> None:
    del frames


class ListeningVoiceClient(discord.VoiceClient):
    """Voice client with a DAVE-aware receive path. Pass as ``cls=`` to ``channel.connect``.

    Frames go to the sink set with :meth:`listen` (on the event loop, in batches).
    """

    def __init__(self, client: discord.Client, channel: discord.abc.Connectable) -> None:
        self._sink: FrameSink = _discard
        self._recovery: asyncio.Task[None] | None = None
        self._ticker: asyncio.Task[None] | None = None
        super().__init__(client, channel)
        self.receiver = VoiceReceiver(
            self.loop,
            self._deliver,
            dave=DaveReceiver(self._dave_source, on_recovery_needed=self._request_dave_recovery),
            decoder=SttSpeakerDecoder,  # players' audio only goes to the speech lanes
        )
        self._listening = False

    def create_connection_state(self) -> VoiceConnectionState:
        return VoiceConnectionState(self, hook=self._on_voice_gateway)

    def listen(self, sink: FrameSink) -> None:
        """Send decoded frames to ``sink`` (called on the event loop; must not block)."""
        self._sink = sink

    async def connect(self, *, reconnect: bool, timeout: float, **kwargs: Any) -> None:  # noqa: ASYNC109 (discord.py signature)
        await super().connect(reconnect=reconnect, timeout=timeout, **kwargs)
        self.start_listening()

    def start_listening(self) -> None:
        """Register the socket listener (after connecting: an idle reader must not spin)."""
        if not self._listening:
            self._listening = True
            self._connection.add_socket_listener(self.receiver.on_datagram)
            self._ticker = self.loop.create_task(self._tick(), name="voice-receive-ticker")

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(0.1)
            self.receiver.tick()

    async def disconnect(self, *, force: bool = False) -> None:
        self.receiver.close()
        if self._listening:
            self._listening = False
            self._connection.remove_socket_listener(self.receiver.on_datagram)
        for task in (self._recovery, self._ticker):
            if task is not None:
                task.cancel()
        await super().disconnect(force=force)

    # -- hooks -------------------------------------------------------------------------------

    async def _on_voice_gateway(self, ws: DiscordVoiceWebSocket, message: dict[str, Any]) -> None:
        self.receiver.handle_gateway(message)

    def _deliver(self, frames: Sequence[VoiceFrame]) -> None:
        self._sink(frames)

    def _dave_source(self) -> tuple[davey.DaveSession | None, int]:
        state = self._connection
        return state.dave_session, state.dave_protocol_version

    def _request_dave_recovery(self) -> None:
        """Socket thread: persistent DAVE failures; re-join the MLS group from the loop."""
        self.loop.call_soon_threadsafe(self._start_recovery)

    def _start_recovery(self) -> None:
        if self._recovery is None or self._recovery.done():
            self._recovery = self.loop.create_task(self._recover_dave(), name="dave-recovery")

    async def _recover_dave(self) -> None:
        state = self._connection
        if state.dave_protocol_version == 0 or not state.ws:
            return
        log.warning("re-initialising the DAVE session after persistent decryption failures")
        try:
            await state.reinit_dave_session()
        except Exception:
            log.exception("DAVE recovery failed")
