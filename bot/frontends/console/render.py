"""Server-side HTML: one Jinja environment with autoescape on, for pages and live fragments.

Every text a player, an NPC or a campaign file wrote (``<script>``, ``{{``, Markdown links) is
escaped by Jinja and shown as text; no page puts data into the DOM as HTML on the client side.
Fragments are the macros of ``templates/fragments.html``, rendered once per change and sent to
every open page as they are.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import Response

from bot.frontends.console.views import STAGE_GROUPS, dom_id

__all__ = ["TEMPLATES", "Renderer", "answer", "render_page"]

TEMPLATES = Path(__file__).parent / "templates"


def _clock(ms: int | float | None) -> str:
    if ms is None:
        return ""
    return time.strftime("%H:%M:%S", time.localtime(ms / 1000))


def _day(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds))


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms"


def _as_json(value: Any) -> str:
    """JSON for a ``data-`` attribute (autoescaping makes it attribute-safe)."""
    return json.dumps(value, separators=(",", ":"), default=str)


class Renderer:
    """The console's templates; ``fragment(name, ...)`` renders one macro of fragments.html."""

    def __init__(self) -> None:
        self.env = Environment(
            loader=FileSystemLoader(TEMPLATES),
            autoescape=select_autoescape(["html"], default=True),
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters.update(clock=_clock, day=_day, ms=_ms, as_json=_as_json)
        self.env.globals.update(dom_id=dom_id, stage_groups=list(STAGE_GROUPS))
        self._fragments = self.env.get_template("fragments.html").module
        for template in sorted(TEMPLATES.glob("*.html")):  # compiled now, not mid-table
            self.env.get_template(template.name)

    def fragment(self, name: str, **values: Any) -> str:
        macro = getattr(self._fragments, name)
        return str(Markup(macro(**values)))

    def page(self, template: str, **values: Any) -> str:
        return self.env.get_template(template).render(**values)


def render_page(request: Request, template: str, **values: Any) -> Response:
    """A whole page of the console (the app's renderer adds the viewer's role and token)."""
    response: Response = request.app.state.page(request, template, **values)
    return response


def answer(request: Request, text: str, *, status: int = 200) -> Response:
    """What a change says: a line beside its control (htmx), or, when a browser without
    JavaScript posted the form, a page that says it and leads back where the DM was."""
    from starlette.responses import HTMLResponse

    renderer: Renderer = request.app.state.hub.renderer
    if request.headers.get("hx-request"):
        html = renderer.fragment("flash", text=text, error=status >= 400)
        return HTMLResponse(html, status_code=status)
    return render_page(
        request, "result.html", text=text, error=status >= 400, back=back_path(request),
        status_code=status,
    )  # fmt: skip


def back_path(request: Request) -> str:
    """The console page the request came from (its Referer, when it is this console's)."""
    referer = request.headers.get("referer") or ""
    base = f"{request.url.scheme}://{request.headers.get('host', '')}"
    if referer.startswith(base + "/"):
        path = referer[len(base) :]
        if not path.startswith("//"):
            return path
    return "/"
