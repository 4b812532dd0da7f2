"""Notice a voice connection that stopped receiving: Discord says a player speaks, no RTP comes.

The deaf detector (:mod:`bot.audio.voice.deaf`) judges packets that arrive; a relay that stopped
sending to the bot (a NAT or voice server that forgot its endpoint, a stuck session) delivers
none, so only the voice gateway can tell: SPEAKING (op 5) says a player started transmitting.
Each SPEAKING is a claim that their packets are on the way; their first RTP packet after it
settles it (decryptable or not: arriving is what counts here). A claim unsettled for
``after_s`` is a stall: ``relay`` when no RTP from anyone has arrived since (the whole path is
down), ``speaker`` when others' packets arrive but not theirs. The owner rejoins.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Stall", "StallCause", "StallWatch"]


class StallCause(StrEnum):
    RELAY = "relay"
    """No voice packet from anyone since a player began to speak."""
    SPEAKER = "speaker"
    """Other players' packets arrive, this player's do not."""


@dataclass(frozen=True, slots=True)
class Stall:
    user_id: int
    """The player Discord said was speaking."""
    cause: StallCause
    waited_s: float
    """Since Discord said so."""

    def describe(self, name: str | None = None) -> str:
        who = name or f"user {self.user_id}"
        if self.cause is StallCause.RELAY:
            return (
                f"Discord said {who} was speaking {self.waited_s:.0f} s ago, but no voice "
                "packet from anyone has arrived since (cause: relay)"
            )
        return (
            f"Discord said {who} was speaking {self.waited_s:.0f} s ago, but none of their "
            "packets arrived while others' did (cause: speaker)"
        )


class StallWatch:
    """Feed it the gateway's SPEAKING and CLIENT_DISCONNECT, and :meth:`check` every tick.

    Args:
        after_s: a SPEAKING with none of that player's packets this long is a stall.
    """

    def __init__(self, *, after_s: float = 20.0) -> None:
        if after_s <= 0:
            raise ValueError("after_s must be positive")
        self.after_s = after_s
        self._claims: dict[int, float] = {}
        self.stalls = 0

    def speaking(self, user_id: int, now: float) -> None:
        """SPEAKING (op 5) with a speaking flag: ``user_id``'s packets should come now. An
        older unsettled claim stands (the wait counts from it)."""
        self._claims.setdefault(user_id, now)

    def left(self, user_id: int) -> None:
        """CLIENT_DISCONNECT (op 13): nothing more is owed."""
        self._claims.pop(user_id, None)

    def reset(self) -> None:
        """A new voice session (READY): SSRCs are announced again, old claims mean nothing."""
        self._claims.clear()

    @property
    def waiting(self) -> dict[int, float]:
        """Unsettled claims: user id -> when SPEAKING came."""
        return dict(self._claims)

    def check(
        self, now: float, rtp_at: Callable[[int], float | None], last_rtp_at: float
    ) -> Stall | None:
        """Settle claims by the packets that came (``rtp_at(user)``: their last RTP arrival;
        ``last_rtp_at``: anyone's) and report the oldest claim older than ``after_s``."""
        stalled: tuple[int, float] | None = None
        for user_id, since in list(self._claims.items()):
            seen = rtp_at(user_id)
            if seen is not None and seen >= since:
                del self._claims[user_id]
            elif now - since >= self.after_s and (stalled is None or since < stalled[1]):
                stalled = (user_id, since)
        if stalled is None:
            return None
        user_id, since = stalled
        self._claims.clear()  # one stall per connection: the owner rejoins
        self.stalls += 1
        cause = StallCause.RELAY if last_rtp_at < since else StallCause.SPEAKER
        return Stall(user_id, cause, now - since)
