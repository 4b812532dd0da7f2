"""The live table: its page, its server-sent events, and the DM's controls.

Server push is Server-Sent Events: one long HTTP response per page that the browser's
``EventSource`` reconnects by itself (resuming from ``Last-Event-ID``). The console only
pushes; every change the DM makes is an ordinary POST, so SSE is all a live dashboard needs,
with no WebSocket protocol to secure. Each control calls the very ``TableSession`` method the
Discord slash commands call.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from bot.frontends.console.feed import Message, TableFeed
from bot.frontends.console.guard import check_csrf, require_dm, require_viewer, session_of
from bot.frontends.console.render import answer, render_page
from campaigns.basics import GlyphoxaError, Tier

__all__ = ["live_routes", "sse_message"]

log = logging.getLogger(__name__)

_KEEPALIVE_S = 15.0


def sse_message(message: Message) -> str:
    """One SSE event: its name, ``<seq>.<emitted ms>`` as the id, the HTML as data lines."""
    data = "\n".join(f"data: {line}" for line in (message.html.splitlines() or [""]))
    return f"event: {message.name}\nid: {message.seq}.{message.emitted_ms}\n{data}\n\n"


def _feed(request: Request) -> TableFeed:
    feed: TableFeed | None = request.app.state.hub.tables.get(request.path_params["table"])
    if feed is None:
        raise HTTPException(404, "no such table: it ended, or the bot restarted")
    return feed


async def live_page(request: Request) -> Response:
    role = require_viewer(request)
    hub = request.app.state.hub
    table = request.path_params["table"]
    if table not in hub.tables and table in hub.ended:  # its URL leads to its record
        record = hub.ended[table]
        if role == "dm" and record:
            return RedirectResponse(f"/sessions/{record}", status_code=303)
        raise HTTPException(404, "this table ended; its record is in past sessions")
    feed = _feed(request)
    dm = role == "dm"
    return render_page(
        request, "live.html", feed=feed, view=feed.page(dm=dm), tiers=[t.label for t in Tier]
    )


def _after(request: Request) -> int | None:
    """The last update the page has (``Last-Event-ID`` or ``?after=``); None for anything
    that is not one (a fresh start)."""
    raw = request.headers.get("last-event-id") or request.query_params.get("after")
    if not raw:
        return None
    head = raw.split(".", 1)[0]
    if not (head.isascii() and head.isdigit()) or len(head) > 18:
        return None
    return int(head)


async def events(request: Request) -> Response:
    role = require_viewer(request)
    feed = request.app.state.hub.tables.get(request.path_params["table"])
    if feed is None or feed.ended:
        return Response(status_code=204)  # EventSource stops reconnecting
    owner = session_of(request)
    subscriber, backlog = feed.subscribe(dm=role == "dm", after=_after(request), owner=owner)
    shares = request.app.state.hub.shares
    share = owner.share if owner is not None else None

    async def stream() -> AsyncIterator[str]:
        try:
            yield "retry: 1000\n: glyphoxa console\n\n"
            for message in backlog:
                yield sse_message(message)
            while not subscriber.missed:
                try:
                    message = await asyncio.wait_for(subscriber.queue.get(), _KEEPALIVE_S)
                except TimeoutError:
                    if role == "viewer" and not shares.alive(share):
                        return  # the read-only link was revoked
                    if owner is None or owner.revoked:
                        return  # logged out
                    yield ": keepalive\n\n"
                    continue
                if message is None or (role == "viewer" and not shares.alive(share)):
                    break
                if owner is None or owner.revoked:
                    break
                yield sse_message(message)
            if subscriber.missed:
                html = request.app.state.hub.renderer.fragment("missed", count=subscriber.missed)
                yield sse_message(Message(feed.last_seq, "reload", html, 0, False))
        finally:
            feed.unsubscribe(subscriber)

    return StreamingResponse(
        stream(),
        media_type="text/event-stream",
        headers={"cache-control": "no-store", "x-accel-buffering": "no"},
    )


def _flash(request: Request, text: str, *, status: int = 200) -> Response:
    """The answer to a control: a line beside it (htmx), or a page saying it and leading
    back (a browser without JavaScript posted the form)."""
    return answer(request, text, status=status)


async def _control(request: Request) -> tuple[TableFeed, dict[str, Any]]:
    require_dm(request)
    form = await check_csrf(request)
    return _feed(request), form


async def control(request: Request) -> Response:
    """One DM control on a table's session (the action is the last path part)."""
    feed, form = await _control(request)
    session = feed.session
    action = request.path_params["action"]
    npc = str(form.get("npc") or "").strip() or None
    try:
        with session.controls.acting_from("console"):
            text = await _apply(session, action, npc, form)
    except GlyphoxaError as error:
        return _flash(request, str(error), status=400)
    return _flash(request, text)


async def _apply(session: Any, action: str, npc: str | None, form: dict[str, Any]) -> str:
    if action == "ambience":
        return await _ambience(session, form)
    if action == "bookmark":
        note = " ".join(str(form.get("text") or "").split())[:200]
        session.controls.bookmark(note)
        recorder = getattr(session, "recorder", None)
        if recorder is not None:
            recorder.bookmarks.append(f"{time.strftime('%H:%M')} {note or '(no note)'}")
        return f"Bookmarked{': ' + note if note else ''}; it joins the recap."
    if action == "mute":
        session.controls.mute(npc)
        return f"Muted {npc or 'every NPC'}."
    if action == "unmute":
        session.controls.unmute(npc)
        return f"{npc or 'Every NPC'} may speak again."
    if action == "stop":
        session.controls.stop_speaking(npc)
        return f"Stopped {npc or 'everyone'}."
    if action == "tier":
        level = str(form.get("tier") or "auto")
        if level not in ("auto", *(t.label for t in Tier)):
            raise GlyphoxaError(f"unknown tier {level!r}: fast, standard, deep or auto")
        minutes = _number(form.get("minutes"), "minutes", 0, 600)  # fractions are fine
        value = None if level == "auto" else Tier.parse(level)
        session.controls.set_tier_override(
            value, npc=npc, duration_s=minutes * 60 if minutes else None
        )
        until = f" for {minutes:g} min" if minutes else ""
        return f"Tier {level} for {npc or 'all NPCs'}{until}."
    if npc is None:
        raise GlyphoxaError("choose an NPC")
    if action == "direct":
        raw = str(form.get("turns") or "").strip()
        turns = _whole(raw, "turns", 1, 20) if raw else None  # empty: until cleared
        direction = session.controls.direct(npc, str(form.get("text") or ""), turns)
        if direction is None:
            return f"{npc}'s direction cleared."
        return f"{npc} follows your direction, {direction.describe()}."
    line: str = session.controls.apply_text(action, npc, str(form.get("text") or ""))
    return line  # a control that gives the NPC words (say, ...): the controls know them


async def _ambience(session: Any, form: dict[str, Any]) -> str:
    """Play a mood's music (empty: silence) at a volume, as the ambience tool does."""
    from tools.builtin.ambience import find_moods

    player = session.mixer.ambience
    raw = str(form.get("volume") or "").strip()
    if raw:
        player.volume = _number(raw, "volume", 0, 100) / 100
    mood = str(form.get("mood") or "").strip()
    if not mood:
        player.stop()
        return "Ambience stopped."
    moods = find_moods(session.campaign.path)
    key = next((m for m in moods if m.lower() == mood.lower()), None)
    if key is None:
        known = ", ".join(sorted(moods)) or "none (add folders under ambience/)"
        raise GlyphoxaError(f"no ambience mood {mood[:40]!r}; the campaign has: {known}")
    track = sorted(moods[key])[0]
    await player.play(track, key)
    return f"Playing {key} ({track.name}) at {round(player.volume * 100)} %."


def _number(raw: Any, name: str, low: float, high: float) -> float:
    if raw in (None, ""):
        return 0.0
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise GlyphoxaError(f"{name}: {str(raw)[:20]!r} is not a number") from None
    if not low <= value <= high:  # NaN too
        raise GlyphoxaError(f"{name}: {str(raw)[:20]} is outside {low:g} to {high:g}")
    return value


def _whole(raw: Any, name: str, low: int, high: int) -> int:
    value = _number(raw, name, low, high)
    if value != int(value):
        raise GlyphoxaError(f"{name}: {str(raw)[:20]} is not a whole number")
    return int(value)


async def approve(request: Request) -> Response:
    feed, form = await _control(request)
    approval_id = request.path_params["approval"]
    approved = form.get("decision") == "approve"
    if not feed.approver.answer(approval_id, approved):
        return _flash(request, "That question was already answered or timed out.", status=409)
    return _flash(request, "Approved." if approved else "Denied.")


async def end_table(request: Request) -> Response:
    feed, _form = await _control(request)
    if feed.on_end is None:
        return _flash(request, "This table cannot be ended from the console.", status=400)
    request.app.state.spawn(feed.on_end(), f"console:end:{feed.id}")
    return _flash(request, "Ending the session...")


def live_routes() -> list[Route]:
    return [
        Route("/tables/{table}", live_page),
        Route("/tables/{table}/events", events),
        Route("/tables/{table}/control/{action}", control, methods=["POST"]),
        Route("/tables/{table}/approvals/{approval:id}", approve, methods=["POST"]),
        Route("/tables/{table}/end", end_table, methods=["POST"]),
    ]
