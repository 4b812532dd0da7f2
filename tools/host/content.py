"""MCP tool results turned into what an LLM (and the Realtime bridge) can read.

Chat Completions ``tool`` messages and Realtime ``function_call_output`` items carry text only,
so every content block becomes a line of text: text as is; an embedded text resource with its
URI and MIME type followed by its text; a binary resource, an image or audio as a labelled line
with its size (the bytes go to ``attachments``, never into the prompt); a resource link with its
name, URI and description. Structured content is kept beside the text (and, as JSON, stands
in for the text blocks that repeat it).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any, Literal

import mcp.types as mt

__all__ = ["Attachment", "ShapedResult", "from_mcp_result", "from_value"]

AttachmentKind = Literal["image", "audio", "resource", "resource_link"]


@dataclass(frozen=True, slots=True)
class Attachment:
    """Non-text output of a tool call (an image, audio, a binary resource or a link to one).

    ``data`` holds the decoded bytes when the server sent them inline; a link has only a URI.
    """

    kind: AttachmentKind
    mime_type: str | None = None
    uri: str | None = None
    name: str | None = None
    description: str | None = None
    data: bytes | None = field(default=None, repr=False)

    @property
    def size(self) -> int | None:
        return len(self.data) if self.data is not None else None


@dataclass(frozen=True, slots=True)
class ShapedResult:
    """A tool's output as text for the model, its structure and its attachments."""

    text: str
    structured: Any = None
    attachments: tuple[Attachment, ...] = ()


def from_value(value: Any) -> ShapedResult:
    """Text and structure of a built-in handler's return value."""
    if isinstance(value, str):
        return ShapedResult(value)
    if value is None:
        return ShapedResult("done")
    return ShapedResult(json.dumps(value, ensure_ascii=False, default=str), value)


def from_mcp_result(result: mt.CallToolResult) -> ShapedResult:
    """Every content block as text (see the module docstring), plus structured content.

    With structured content, its compact JSON stands for the text blocks (which, by the spec,
    carry the same data serialized for older clients); other blocks are still rendered.
    """
    structured = result.structured_content
    lines: list[str] = []
    if structured is not None:
        lines.append(json.dumps(structured, ensure_ascii=False, default=str))
    attachments: list[Attachment] = []
    for block in result.content:
        if structured is not None and isinstance(block, mt.TextContent):
            continue
        text, attachment = _block(block)
        if text:
            lines.append(text)
        if attachment is not None:
            attachments.append(attachment)
    return ShapedResult("\n".join(lines), structured, tuple(attachments))


def _block(block: Any) -> tuple[str, Attachment | None]:
    if isinstance(block, mt.TextContent):
        return block.text, None
    if isinstance(block, mt.ImageContent | mt.AudioContent):
        data = _decode(block.data)
        attachment = Attachment(block.type, block.mime_type, data=data)
        return f"[{block.type} {block.mime_type}, {_size(data)}]", attachment
    if isinstance(block, mt.EmbeddedResource):
        return _embedded(block.resource)
    if isinstance(block, mt.ResourceLink):
        return _link(block)
    kind = getattr(block, "type", None) or type(block).__name__
    return f"[{kind} content]", None


def _embedded(
    resource: mt.TextResourceContents | mt.BlobResourceContents,
) -> tuple[str, Attachment]:
    label = _label(resource.uri, resource.mime_type)
    if isinstance(resource, mt.TextResourceContents):
        attachment = Attachment("resource", resource.mime_type, resource.uri)
        return f"[resource {label}]\n{resource.text}", attachment
    data = _decode(resource.blob)
    attachment = Attachment("resource", resource.mime_type, resource.uri, data=data)
    return f"[resource {label}, binary, {_size(data)}]", attachment


def _link(link: mt.ResourceLink) -> tuple[str, Attachment]:
    name = link.title or link.name
    parts = [f"[resource link {name!r}: {_label(link.uri, link.mime_type)}"]
    if link.size is not None:
        parts.append(f", {link.size} bytes")
    if link.description:
        parts.append(f" - {link.description}")
    parts.append("]")
    attachment = Attachment(
        "resource_link", link.mime_type, link.uri, name=link.name, description=link.description
    )
    return "".join(parts), attachment


def _label(uri: str, mime_type: str | None) -> str:
    return f"{uri} ({mime_type})" if mime_type else uri


def _decode(data: str) -> bytes | None:
    """Base64 payload as bytes; None when the server sent something that is not base64."""
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def _size(data: bytes | None) -> str:
    if data is None:
        return "undecodable data"
    if len(data) < 1024:
        return f"{len(data)} bytes"
    return f"{len(data) / 1024:.1f} KB"
