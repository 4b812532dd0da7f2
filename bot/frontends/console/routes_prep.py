"""Campaign preparation: the cast with voice previews, the NPC editor, what an NPC sees, the
world graph, past sessions and the review queue of facts.

Pages read the campaign folder and the campaign memory; the editor writes NPC files (checked
first, written atomically), which a running table's hot reload picks up by itself; the review
queue approves, edits or rejects the facts NPCs proposed. Nothing here talks to the table.
"""

from __future__ import annotations

import asyncio
import io
import logging
import wave
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from bot.frontends.console.editor import MAX_NPC_BYTES, check_draft, npc_file, save_draft
from bot.frontends.console.guard import check_csrf, require_dm
from bot.frontends.console.hub import ConsoleHub
from bot.frontends.console.prep_data import PrepData
from bot.frontends.console.render import answer, render_page
from bot.settings.loader import env_templates
from bot.settings.redact import shown_config
from campaigns.basics import GlyphoxaError

__all__ = ["prep_routes"]

log = logging.getLogger(__name__)

_PREVIEW_CHARS = 300


def _hub(request: Request) -> ConsoleHub:
    require_dm(request)
    hub: ConsoleHub = request.app.state.hub
    return hub


def _data(request: Request) -> PrepData:
    data: PrepData = request.app.state.prep_data
    return data


async def cast(request: Request) -> Response:
    hub = _hub(request)
    scan = await asyncio.to_thread(_data(request).scan)
    return render_page(request, "cast.html", scan=scan, prep=hub.prep)


async def preview(request: Request) -> Response:
    """The NPC's voice saying its greeting (or ``text``), as WAV, through the configured TTS."""
    _hub(request)
    data = _data(request)
    path = _npc_path(request)
    try:
        npc = await asyncio.to_thread(data.npc_at, path)
    except GlyphoxaError as error:
        raise HTTPException(404, str(error)) from None
    text = request.query_params.get("text") or npc.greeting or f"Well met. I am {npc.name}."
    text = " ".join(text.split())[:_PREVIEW_CHARS]
    try:
        chunks = [chunk async for chunk in data.tts().synthesize(text, npc.voice)]
    except GlyphoxaError as error:
        raise HTTPException(502, f"{npc.name}'s voice: {error}") from None
    if not chunks:
        raise HTTPException(502, f"{npc.name}'s voice produced no audio")
    body = io.BytesIO()
    with wave.open(body, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(chunks[0].sample_rate)
        wav.writeframes(b"".join(chunk.pcm for chunk in chunks))
    return Response(body.getvalue(), media_type="audio/wav")


def _npc_path(request: Request) -> Any:
    hub: ConsoleHub = request.app.state.hub
    try:
        return npc_file(hub.prep.campaign_dir, request.path_params["file"])
    except GlyphoxaError as error:
        raise HTTPException(400, str(error)) from None


async def edit_page(request: Request) -> Response:
    hub = _hub(request)
    path = _npc_path(request)
    text = await asyncio.to_thread(_read, path)
    report = await asyncio.to_thread(
        check_draft, hub.prep.campaign_dir, path, text, config_path=hub.prep.config_path
    )
    return render_page(
        request, "npc_edit.html", file=path.name, text=text, report=report, lines=_lines(text),
        max_kb=MAX_NPC_BYTES // 1024, saved=None,
    )  # fmt: skip


def _read(path: Any) -> str:
    try:
        return str(path.read_text(encoding="utf-8")) if path.exists() else ""
    except (OSError, UnicodeDecodeError) as error:
        raise HTTPException(400, f"{path}: cannot read: {error}") from None


def _lines(text: str) -> int:
    return max(1, text.count("\n") + (0 if text.endswith("\n") else 1))


async def _draft(request: Request) -> tuple[ConsoleHub, Any, str]:
    hub = _hub(request)
    length = int(request.headers.get("content-length") or 0)
    if length > MAX_NPC_BYTES * 2:  # refused before reading a huge body
        limit = MAX_NPC_BYTES // 1024
        raise HTTPException(
            413, f"the file is {length // 1024} KB; an NPC file is at most {limit} KB"
        )
    form = await check_csrf(request)
    return hub, _npc_path(request), str(form.get("text") or "")


async def check(request: Request) -> Response:
    """Validate a draft as the DM types (htmx, debounced): the issues beside their lines."""
    hub, path, text = await _draft(request)
    report = await asyncio.to_thread(
        check_draft, hub.prep.campaign_dir, path, text, config_path=hub.prep.config_path
    )
    return _editor_answer(request, path, text, report, None)


async def save(request: Request) -> Response:
    hub, path, text = await _draft(request)
    report = await asyncio.to_thread(
        save_draft, hub.prep.campaign_dir, path, text, config_path=hub.prep.config_path
    )
    saved = path.name if report.ok else False
    return _editor_answer(request, path, text, report, saved, status=200 if report.ok else 422)


def _editor_answer(
    request: Request, path: Any, text: str, report: Any, saved: Any, *, status: int = 200
) -> Response:
    """The issues beside the lines (htmx), or the whole editor with the draft as sent (a
    browser without JavaScript)."""
    hub: ConsoleHub = request.app.state.hub
    if request.headers.get("hx-request"):
        html = hub.renderer.fragment(
            "editor_issues", report=report, lines=_lines(text), saved=saved
        )  # fmt: skip
        return HTMLResponse(html, status_code=status)
    return render_page(
        request, "npc_edit.html", file=path.name, text=text, report=report, lines=_lines(text),
        max_kb=MAX_NPC_BYTES // 1024, saved=saved, status_code=status,
    )  # fmt: skip


async def sees(request: Request) -> Response:
    hub = _hub(request)
    path = _npc_path(request)
    try:
        view = await _data(request).npc_view(path)
    except GlyphoxaError as error:
        raise HTTPException(400, str(error)) from None
    return render_page(request, "npc_sees.html", view=view, file=path.name, hub=hub)


async def world(request: Request) -> Response:
    _hub(request)
    picture = await asyncio.to_thread(_data(request).world)
    return render_page(request, "world.html", picture=picture)


async def sessions(request: Request) -> Response:
    """Past sessions; ``?q=`` searches every session's transcript."""
    _hub(request)
    memory = await _data(request).memory()
    items = await memory.list_sessions(limit=200)
    query = " ".join((request.query_params.get("q") or "").split())[:200]
    hits: list[dict[str, Any]] = []
    if query:
        try:
            hits = await memory.search_sessions(query, limit=50)
        except GlyphoxaError as error:
            raise HTTPException(400, str(error)) from None
    titles = {item["id"]: item for item in items}
    return render_page(
        request, "sessions.html", sessions=items, query=query, hits=hits, titles=titles
    )


async def session_detail(request: Request) -> Response:
    _hub(request)
    memory = await _data(request).memory()
    query = (request.query_params.get("q") or "").strip()[:200]
    try:
        summary = await memory.session_summary(request.path_params["session"])
        lines = await memory.session_lines(summary["id"], query or None)
        every_line = await memory.session_lines(summary["id"]) if query else lines
    except GlyphoxaError as error:
        raise HTTPException(404, str(error)) from None
    latency = _data(request).latency_of(summary["id"], every_line)
    return render_page(
        request, "session.html", summary=summary, lines=lines, query=query, latency=latency
    )


#: How the review queue records a decision made in the console (the console has one DM).
_DECIDER = "the DM (console)"


async def review(request: Request) -> Response:
    _hub(request)
    memory = await _data(request).memory()
    pending = await memory.list_facts("pending")
    decided = [f for f in await memory.list_facts(None) if f["status"] != "pending"][-20:]
    return render_page(request, "review.html", pending=pending, decided=decided)


async def review_decide(request: Request) -> Response:
    hub = _hub(request)
    form = await check_csrf(request)
    memory = await _data(request).memory()
    fact_id = request.path_params["fact"]
    action = str(form.get("action") or "")
    try:
        if action == "approve":  # as the NPC worded it, or as the DM edited it in the page
            text = str(form.get("text") or "") or None
            fact = await memory.approve_fact(fact_id, text, by=_DECIDER)
        elif action == "reject":
            fact = await memory.reject_fact(fact_id, by=_DECIDER)
        else:
            raise GlyphoxaError(f"unknown review action {action!r}")
    except GlyphoxaError as error:
        return answer(request, str(error), status=409)
    for feed in hub.tables.values():  # the running tables see the decision at the next mention
        feed.session.entities.forget()
    hub.pulse.changed()  # the navigation's count
    if not request.headers.get("hx-request"):
        return answer(request, f"Proposal #{fact['id']} {fact['status']}.")
    return HTMLResponse(hub.renderer.fragment("fact_decided", fact=fact))


async def settings(request: Request) -> Response:
    hub = _hub(request)
    config = hub.prep.config  # as written: ${VAR} shown as the reference, secrets masked
    shown = shown_config(config, env_templates(config))
    return render_page(request, "settings.html", shown=shown, prep=hub.prep)


def prep_routes() -> list[Route]:
    return [
        Route("/cast", cast),
        Route("/npcs/{file}/voice.wav", preview),
        Route("/npcs/{file}/edit", edit_page),
        Route("/npcs/{file}/check", check, methods=["POST"]),
        Route("/npcs/{file}/save", save, methods=["POST"]),
        Route("/npcs/{file}/sees", sees),
        Route("/world", world),
        Route("/sessions", sessions),
        Route("/sessions/{session}", session_detail),
        Route("/review", review),
        Route("/review/{fact:id}", review_decide, methods=["POST"]),
        Route("/settings", settings),
    ]
