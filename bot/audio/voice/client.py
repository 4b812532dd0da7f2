"""A discord.py ``VoiceClient`` that can hear, built on discord.py 2.7.1's own hooks.

discord.py runs the voice gateway, UDP socket and DAVE handshake but never reads audio. We pass
a websocket ``hook`` to ``VoiceConnectionState`` (it sees every voice gateway JSON message after
discord.py handled it: READY, SESSION_DESCRIPTION, SPEAKING, CLIENT_DISCONNECT, the DAVE
transitions) and register a socket listener that hands each UDP datagram to our
:class:`~bot.audio.voice.receiver.VoiceReceiver`. The DAVE session stays discord.py's; we read it,
and recover it as discord.js does (opcode 31, then a new key package).

It keeps its UDP path open with discord.js's keepalive (:mod:`bot.audio.voice.keepalive`: 8 bytes
every 5 s from IP discovery on, whether or not audio plays), so a NAT or a voice server that
forgets silent endpoints keeps relaying to an idle bot.

The client also watches itself: a deaf spell (players' packets, nothing decoded) runs recovery,
a stall (Discord says a player speaks, none of their packets arrive: :mod:`bot.audio.voice.stall`)
rejoins, and every way the connection ends (our ``disconnect``, a kick, a deleted channel,
discord.py giving up after a close code or failed reconnects, a connection that stays down) resolves
:attr:`ended` with a :class:`VoiceEnd` saying whether rejoining makes sense.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import discord
from discord.voice_state import VoiceConnectionState

from bot.audio.voice.close_watch import CloseWatch
from bot.audio.voice.dave import DaveReceiver
from bot.audio.voice.deaf import DeafCause, DeafDetector, DeafSpell
from bot.audio.voice.keepalive import KEEPALIVE_INTERVAL_S, UdpKeepalive
from bot.audio.voice.receiver import FrameHearer, FrameSink, VoiceFrame, VoiceReceiver
from bot.audio.voice.rtp import parse_user_id
from bot.audio.voice.stall import Stall, StallWatch
from bot.audio.voice.stt_decode import SttSpeakerDecoder
from bot.telemetry.metrics import METRICS, Metrics

if TYPE_CHECKING:
    import davey
    from discord.gateway import DiscordVoiceWebSocket

__all__ = ["ListeningVoiceClient", "VoiceEnd"]

log = logging.getLogger(__name__)

_TICK_S = 0.1
_OP_READY = 2
_OP_SESSION_DESCRIPTION = 4
_OP_SPEAKING = 5
_OP_CLIENT_DISCONNECT = 13
_OP_RESUMED = 9
_OP_PREPARE_TRANSITION = 21
_OP_EXECUTE_TRANSITION = 22


@dataclass(frozen=True, slots=True)
class VoiceEnd:
    """Why a voice connection ended."""

    reason: str
    """``stopped`` (we left), ``kicked``, ``channel_deleted``, ``deaf``, ``stall`` (players
    speak, their packets do not arrive), ``lost`` (down too long; ``detail`` has the close code
    if any), or ``closed`` (discord.py gave up)."""
    rejoin: bool
    """Joining again makes sense (nobody removed us on purpose, the channel exists)."""
    detail: str = ""


def _discard(frames: Sequence[VoiceFrame]) -> None:
    del frames


class ListeningVoiceClient(discord.VoiceClient):
    """Voice client with a DAVE-aware receive path. Pass as ``cls=`` to ``channel.connect``.

    Frames go to the sink set with :meth:`listen` (on the event loop, in batches). To tune it,
    pass ``cls=lambda client, channel: ListeningVoiceClient(client, channel, ...)``.

    Args:
        deaf_after_s: players' packets with nothing decoded this long is a deaf spell.
        down_after_s: a connection down this long (discord.py not done reconnecting) is left,
            and :attr:`ended` asks the owner to rejoin.
        stall_after_s: Discord saying a player speaks with none of their packets arriving
            this long is a stall: the connection is left and :attr:`ended` asks to rejoin.
        keepalive_s: seconds between UDP keepalives.
        metrics: counts deaf spells, stalls and DAVE recoveries
            (``glyphoxa_voice_events_total``).
    """

    def __init__(
        self,
        client: discord.Client,
        channel: discord.abc.Connectable,
        *,
        deaf_after_s: float = 2.0,
        down_after_s: float = 5.0,
        stall_after_s: float = 20.0,
        keepalive_s: float = KEEPALIVE_INTERVAL_S,
        metrics: Metrics = METRICS,
    ) -> None:
        self.down_after_s = down_after_s
        self._metrics = metrics
        self._sink: FrameSink = _discard
        self._recovery: asyncio.Task[None] | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._last_transition = 0
        self._end: VoiceEnd | None = None
        self._down_since: float | None = None
        self._leaving: asyncio.Task[None] | None = None
        self.closes = CloseWatch()
        """The voice server's own close code and reason (discord.py reports its own)."""
        super().__init__(client, channel)
        self.ended: asyncio.Future[VoiceEnd] = self.loop.create_future()
        """Resolves once, when the connection is over for good."""
        self.deaf = DeafDetector(after_s=deaf_after_s)
        self.stalls = StallWatch(after_s=stall_after_s)
        self.last_stall: Stall | None = None
        """The stall that ended this connection, if one did."""
        self.keepalive = UdpKeepalive(self._send_datagram, interval_s=keepalive_s)
        self.dave_recoveries = 0
        self.receiver = VoiceReceiver(
            self.loop,
            self._deliver,
            dave=DaveReceiver(
                self._dave_source,
                pending=self._transition_pending,
                on_recovery_needed=self._request_dave_recovery,
            ),
            decoder=SttSpeakerDecoder,  # players' audio only goes to the speech lanes
            hold_at_pace=True,  # a talking player's packets run in pairs, on warm caches
        )
        self._listening = False

    def create_connection_state(self) -> VoiceConnectionState:
        return VoiceConnectionState(self, hook=self._on_voice_gateway)

    def listen(self, sink: FrameSink, hear: FrameHearer | None = None) -> None:
        """Send decoded frames to ``sink`` (called on the event loop; must not block), after
        ``hear`` took those it can on the socket thread."""
        self._sink = sink
        self.receiver.hear = hear

    async def connect(self, *, reconnect: bool, timeout: float, **kwargs: Any) -> None:  # noqa: ASYNC109 (discord.py signature)
        await super().connect(reconnect=reconnect, timeout=timeout, **kwargs)
        self.start_listening()

    def start_listening(self) -> None:
        """Register the socket listener (after connecting: an idle reader must not spin)."""
        if not self._listening and not self.ended.done():
            self._listening = True
            self._connection.add_socket_listener(self.receiver.on_datagram)
            self._ticker = self.loop.create_task(self._tick(), name="voice-receive-ticker")

    async def disconnect(self, *, force: bool = False, reason: str = "stopped") -> None:
        """Leave voice. ``reason`` other than ``stopped`` asks the owner to rejoin."""
        if self._end is None:
            self._end = VoiceEnd(reason, rejoin=reason != "stopped")
        # discord.py's own reconnect may be running (its poll loop or a connect attempt): stop
        # it first, or it would join the channel again behind our back (discord.py's connect()
        # does the same before it starts).
        state = self._connection
        for task in (state._runner, state._connector):
            if task is not None and task is not asyncio.current_task():
                task.cancel()
        state._runner = state._connector = None
        await super().disconnect(force=force)
        self.cleanup()

    def cleanup(self) -> None:
        """discord.py calls this whenever the connection is over (whoever ended it)."""
        self._shutdown()
        super().cleanup()
        if not self.ended.done():
            end = self._end or self._why_closed()
            log.info("voice connection to %s ended: %s %s", self.channel, end.reason, end.detail)
            self.ended.set_result(end)

    async def on_voice_state_update(self, data: Any) -> None:
        # Our own reconnects leave the channel first (expected); anything else removed us.
        if data.get("channel_id") is None and not self._connection._expecting_disconnect:
            if self._end is None:
                self._end = self._removed()
        await super().on_voice_state_update(data)

    # -- hooks -------------------------------------------------------------------------------

    async def _on_voice_gateway(self, ws: DiscordVoiceWebSocket, message: dict[str, Any]) -> None:
        self.closes.watch(ws.ws)
        self.receiver.handle_gateway(message)
        op, data = message.get("op"), message.get("d")
        if op in (_OP_SESSION_DESCRIPTION, _OP_RESUMED):
            self.closes.clear()  # connected again: an older close explains nothing now
        if op == _OP_READY and not self.ended.done():
            # discord.py handled READY: IP discovery is done on this (maybe new) socket.
            self.stalls.reset()
            self.keepalive.kick()
        if isinstance(data, dict) and op in (_OP_SPEAKING, _OP_CLIENT_DISCONNECT):
            self._watch_speaking(op, data)
        if op == _OP_RESUMED and ws.secret_key is None and self._connection.secret_key:
            # discord.py 2.7.1 waits for a new SESSION_DESCRIPTION after RESUME, which never
            # comes: a resumed session keeps its key, so hand it over and let the handshake end.
            ws.secret_key = self._connection.secret_key
        if not isinstance(data, dict):
            return
        executed = op == _OP_EXECUTE_TRANSITION or (
            op == _OP_PREPARE_TRANSITION and data.get("transition_id") == 0
        )
        if executed and isinstance(data.get("transition_id"), int):
            self._last_transition = data["transition_id"]
            if self.receiver.dave is not None:
                self.receiver.dave.transition_executed()

    def _watch_speaking(self, op: int, data: dict[str, Any]) -> None:
        try:
            user_id = parse_user_id(data.get("user_id"))
        except (TypeError, ValueError, OverflowError):
            return  # the receiver logs malformed messages
        if op == _OP_CLIENT_DISCONNECT:
            self.stalls.left(user_id)
        elif data.get("speaking") and user_id != self.user.id:
            self.stalls.speaking(user_id, time.monotonic())

    def _send_datagram(self, packet: bytes) -> bool:
        """The keepalive's way out: the connection's current UDP socket (connected to the
        voice server by discord.py at IP discovery; a move or reconnect replaces it)."""
        state = self._connection
        sock = state.socket
        if not sock or not state.ip or self.ended.done():
            return False
        try:
            sock.send(packet)
        except OSError:  # closed or not connected yet (a socket being replaced)
            return False
        return True

    def _deliver(self, frames: Sequence[VoiceFrame]) -> None:
        self._sink(frames)

    def _dave_source(self) -> tuple[davey.DaveSession | None, int]:
        state = self._connection
        return state.dave_session, state.dave_protocol_version

    def _transition_pending(self) -> bool:
        return bool(self._connection.dave_pending_transitions)

    # -- recovery ----------------------------------------------------------------------------

    def _request_dave_recovery(self) -> None:
        """Socket thread: DAVE failures past the threshold; re-join the group from the loop."""
        self.loop.call_soon_threadsafe(self._start_recovery)

    def _start_recovery(self) -> None:
        if self._recovery is None or self._recovery.done():
            self._recovery = self.loop.create_task(self._recover_dave(), name="dave-recovery")

    async def _recover_dave(self) -> None:
        """Opcode 31 (invalid commit/welcome) for the last transition, then a new key package:
        the voice server removes our stale leaf and welcomes us back."""
        state = self._connection
        dave = self.receiver.dave
        if state.dave_protocol_version == 0 or not state.ws or not self.is_connected():
            if dave is not None:
                dave.recovery_failed()
            return
        self.dave_recoveries += 1
        self._metrics.voice_events.labels("dave_recovery", "failures").inc()
        log.warning("re-joining the DAVE group (transition %d invalid)", self._last_transition)
        try:
            await state._recover_from_invalid_commit(self._last_transition)
        except Exception:
            log.exception("DAVE recovery failed")
            if dave is not None:
                dave.recovery_failed()
            return
        if dave is not None:
            dave.reinitialised()

    # -- watching ----------------------------------------------------------------------------

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(_TICK_S)
            self.receiver.tick()
            now = time.monotonic()
            if not self.is_connected():
                # discord.py reconnects by itself after a voice server move or a dropped
                # websocket (usually within a second); past ``down_after_s`` it is stuck
                # (e.g. waiting its whole timeout after 4015 or 4022), so we rejoin instead.
                self._down_since = self._down_since or now
                down_s = now - self._down_since
                if down_s >= self.down_after_s:
                    close = self._close()
                    why = f"down for {down_s:.1f} s" + (f", {close}" if close else "")
                    self._leave("lost", why)
                continue
            self._down_since = None
            receiver = self.receiver
            spell = self.deaf.check(now, receiver.snapshot(), receiver.last_decoded_at)
            if spell is not None:
                self._on_deaf(spell, now)
            stall = self.stalls.check(now, receiver.rtp_at, receiver.last_rtp_at)
            if stall is not None:
                self._on_stall(stall)

    def _on_stall(self, stall: Stall) -> None:
        member = self.guild.get_member(stall.user_id)
        why = stall.describe(member.display_name if member is not None else None)
        log.warning("voice receive stalled: %s; rejoining", why)
        self._metrics.voice_events.labels("stall", stall.cause.value).inc()
        self.last_stall = stall
        self._leave("stall", why)

    def _on_deaf(self, spell: DeafSpell, now: float) -> None:
        log.warning("voice receive is %s", spell.describe(now))
        if spell.count == 1:
            self._metrics.voice_events.labels("deaf", spell.cause.value).inc()
        dave = self.receiver.dave
        first = spell.count == 1
        if first and spell.cause is DeafCause.DAVE and dave is not None and not dave.recovering:
            self._start_recovery()
        elif first and spell.cause is DeafCause.DECODER:
            log.error("Opus decodes nothing from accepted packets; not reconnecting for that")
        else:
            self._leave("deaf", spell.describe(now))

    def _leave(self, reason: str, detail: str) -> None:
        if self._end is not None:
            return
        self._end = VoiceEnd(reason, rejoin=True, detail=detail)
        self._leaving = self.loop.create_task(
            self.disconnect(force=True, reason=reason), name="voice-leave"
        )

    def _removed(self) -> VoiceEnd:
        if self.guild.get_channel(self.channel.id) is None:
            return VoiceEnd("channel_deleted", rejoin=False, detail=f"#{self.channel.id}")
        return VoiceEnd("kicked", rejoin=False, detail="removed from the voice channel")

    def _why_closed(self) -> VoiceEnd:
        if self.guild.get_channel(self.channel.id) is None:
            return VoiceEnd("channel_deleted", rejoin=False, detail=f"#{self.channel.id}")
        return VoiceEnd("closed", rejoin=True, detail=self._close())

    def _close(self) -> str:
        """How the voice websocket last closed: the server's code and reason when it closed
        it, else discord.py's own code; "" if it did not close."""
        if self.closes.last is not None:
            return self.closes.last.describe()
        ws = self._connection.ws
        if not ws:
            return ""
        code = getattr(ws, "_close_code", None) or getattr(ws.ws, "close_code", None)
        return f"close code {code}" if isinstance(code, int) else ""

    def _shutdown(self) -> None:
        self.receiver.close()
        self.keepalive.close()
        if self._listening:
            self._listening = False
            self._connection.remove_socket_listener(self.receiver.on_datagram)
        current = asyncio.current_task() if self.loop.is_running() else None
        for task in (self._recovery, self._ticker):
            if task is not None and task is not current:
                task.cancel()
