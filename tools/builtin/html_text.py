"""Readable text of an HTML page in linear time, with a deadline.

Python's ``html.parser`` rescans an unfinished construct from its start on every step, so
``"<a " * N`` costs O(N^2) (a 48 KiB page takes seconds) and some inputs (``"<!["`` repeated) trip
its assertions. This extractor is a small tokenizer after the HTML5 rules that matter for text:
every scan starts where the previous one ended and never backtracks (possessive regular
expressions, ``str.find``), so a page costs time proportional to its size; an unfinished tag,
comment or script at the end of the input is dropped (as browsers do at end of file).

It runs in a worker thread; ``deadline`` (``time.monotonic()``) bounds it even so.
"""

from __future__ import annotations

import html
import re
import time

__all__ = ["html_to_text"]

_SKIP = frozenset({"noscript", "template", "svg", "iframe", "head", "canvas", "object"})
"""Elements whose content is not page text (nested: counted)."""
_RAW = frozenset({"script", "style", "xmp", "noembed", "noframes", "textarea", "title"})
"""Elements whose content is not markup: skipped to their end tag (title is kept as title)."""
_BLOCK = frozenset(
    """p div br li h1 h2 h3 h4 h5 h6 tr section article header footer pre blockquote ul ol
    table nav aside main dt dd hr figure figcaption form""".split()
)
_RELEVANT = _SKIP | _RAW | _BLOCK | {"body"}
_CHECK_EVERY = 512
"""Tags between two looks at the clock."""

_MARKUP = re.compile(r"<[a-zA-Z/!?]")
# A tag, or the opening of a comment/declaration. Attribute quotes count only after "=", and
# every repetition is possessive, so a failed match costs one pass and never backtracks.
_TOKEN = re.compile(
    r"""<(?:
        (?P<end>/)?(?P<name>[a-zA-Z][^\s/>\x00]*+)
        (?P<attrs>(?:[^>=]++|=\s*+(?:"[^"]*+"|'[^']*+'|[^\s>"']*+))*+)>
        |!--|[!?/])""",
    re.VERBOSE,
)
_SPACES = re.compile(r"[ \t\r\f\v]+")
_ALL_SPACE = re.compile(r"\s+")
_raw_end_cache: dict[str, re.Pattern[str]] = {}


def _raw_end(name: str) -> re.Pattern[str]:
    pattern = _raw_end_cache.get(name)
    if pattern is None:
        pattern = _raw_end_cache[name] = re.compile(rf"</{name}(?=[\s/>])", re.IGNORECASE)
    return pattern


class _Text:
    """Accumulates text and block breaks as the tokenizer meets them."""

    __slots__ = ("parts", "skip", "title")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.skip = 0
        self.title: str | None = None

    def data(self, text: str) -> None:
        if text and not self.skip:
            self.parts.append(html.unescape(text) if "&" in text else text)

    def start(self, name: str, closed: bool) -> None:
        if name == "body":
            self.skip = 0  # an unclosed <head> ends where the body starts
        elif name in _SKIP and not closed:
            self.skip += 1
        elif name in _BLOCK and not self.skip:
            self.parts.append("\n- " if name == "li" else "\n")

    def end(self, name: str) -> None:
        if name in _SKIP:
            self.skip = max(0, self.skip - 1)
        elif name in _BLOCK and not self.skip:
            self.parts.append("\n")


def html_to_text(page: str, *, deadline: float | None = None) -> tuple[str, str]:
    """(title, readable text) of an HTML document; scripts, styles and markup removed.

    Raises:
        TimeoutError: ``time.monotonic()`` passed ``deadline`` before the page was read.
    """
    out = _Text()
    _tokenize(page, out, deadline)
    lines = (_SPACES.sub(" ", line).strip() for line in "".join(out.parts).split("\n"))
    text = "\n".join(line for line in lines if line and line != "-")
    return _ALL_SPACE.sub(" ", out.title or "").strip(), text


def _tokenize(page: str, out: _Text, deadline: float | None) -> None:
    """Feed ``out`` from ``page``. Well-formed tags go through one C-level ``finditer``; a
    comment, declaration or raw-text element is scanned by hand and the iteration restarts
    after it. Nothing after the last ">" can close, so the iteration stops there."""
    limit = page.rfind(">") + 1
    pos, steps = 0, 0
    data, start, end = out.data, out.start, out.end
    while True:
        restart = -1
        for token in _TOKEN.finditer(page, pos, limit):
            steps += 1
            if deadline is not None and steps % _CHECK_EVERY == 0 and time.monotonic() > deadline:
                raise TimeoutError("reading the page took too long")
            begin = token.start()
            if begin > pos:
                data(page[pos:begin])
            pos = token.end()
            name = token.group("name")
            if name is None:
                restart = _skip_declaration(page, token)
                break
            name = name.lower()
            if name not in _RELEVANT:
                continue  # inline markup (a, b, span, img, ...): only its text counts
            if token.group("end"):
                end(name)
                continue
            closed = token.group("attrs").endswith("/")
            if name in _RAW and not closed:
                restart = _raw_element(page, pos, name, out)
                break
            start(name, closed)
        else:
            found = _MARKUP.search(page, pos)  # past the last ">": an unfinished tag, if any
            data(page[pos : found.start() if found is not None else len(page)])
            return
        if restart < 0:
            return
        pos = restart


def _skip_declaration(page: str, token: re.Match[str]) -> int:
    """Past a comment, doctype, CDATA section or processing instruction; -1 if unfinished."""
    if token.group() == "<!--":
        end = page.find("-->", token.end())
        return end + 3 if end >= 0 else -1
    end = page.find(">", token.end())
    return end + 1 if end >= 0 else -1


def _raw_element(page: str, start: int, name: str, out: _Text) -> int:
    """Past a raw-text element's content and end tag (keeping a title); -1 if unfinished."""
    finish = _raw_end(name).search(page, start)
    content_end = finish.start() if finish is not None else len(page)
    if name == "title" and out.title is None:
        out.title = html.unescape(page[start:content_end])
    elif name == "textarea":
        out.data(page[start:content_end])
    if finish is None:
        return -1
    close = page.find(">", finish.end())
    return close + 1 if close >= 0 else -1
