"""Every kind of tool result content reaches the model: against the reference everything
server (npm) and our own MCP server for audio."""

from __future__ import annotations

from campaigns.basics import Tier
from tools.host import ToolHost

ALL = ["*"]


async def call(host: ToolHost, name: str, arguments: dict) -> object:
    return await host.call(name, arguments, whitelist=ALL, tier=Tier.DEEP, npc="Greymantle")


async def test_embedded_text_resource_keeps_uri_mime_and_text(everything_host: ToolHost):
    args = {"resourceType": "Text", "resourceId": 1}
    result = await call(everything_host, "get-resource-reference", args)
    assert result.status == "ok"
    text = result.model_text()
    assert "[resource demo://resource/dynamic/text/1 (text/plain)]" in text
    assert "Resource 1: This is a plaintext resource" in text
    assert "[resource]" not in text
    (attachment,) = result.attachments
    assert (attachment.kind, attachment.uri) == ("resource", "demo://resource/dynamic/text/1")


async def test_embedded_blob_resource_is_labelled_and_kept_as_bytes(everything_host: ToolHost):
    args = {"resourceType": "Blob", "resourceId": 1}
    result = await call(everything_host, "get-resource-reference", args)
    text = result.model_text()
    (attachment,) = result.attachments
    assert attachment.data and attachment.uri == "demo://resource/dynamic/blob/1"
    # The blob holds the server's clock time ("9:05 PM" or "10:05 PM"): its size varies.
    size = len(attachment.data)
    assert f"[resource demo://resource/dynamic/blob/1 (text/plain), binary, {size} bytes]" in text
    assert attachment.data.decode() not in text  # bytes never go into the prompt


async def test_resource_links_keep_name_uri_and_description(everything_host: ToolHost):
    result = await call(everything_host, "get-resource-links", {"count": 2})
    text = result.model_text()
    assert "[resource link 'Blob Resource 1': demo://resource/dynamic/blob/1" in text
    assert "[resource link 'Text Resource 2': demo://resource/dynamic/text/2 (text/plain)" in text
    assert "Resource 2: plaintext resource" in text
    assert [a.name for a in result.attachments] == ["Blob Resource 1", "Text Resource 2"]


async def test_image_is_described_and_attached(everything_host: ToolHost):
    result = await call(everything_host, "get-tiny-image", {})
    lines = result.model_text().splitlines()
    assert lines[0] == "Here's the image you requested:"
    assert lines[1].startswith("[image image/png, ") and lines[1].endswith(" KB]")
    assert lines[2] == "The image above is the MCP logo."
    (image,) = result.attachments
    assert image.kind == "image" and image.data is not None
    assert image.data.startswith(b"\x89PNG")


async def test_structured_content_is_kept_with_its_text(everything_host: ToolHost):
    result = await call(everything_host, "get-structured-content", {"location": "Chicago"})
    assert set(result.structured) == {"temperature", "conditions", "humidity"}
    assert '"temperature"' in result.model_text()


async def test_audio_from_our_own_server(stdio_host: ToolHost):
    result = await call(stdio_host, "sound", {})
    assert result.model_text() == "a bell\n[audio audio/wav, 44 bytes]"
    (audio,) = result.attachments
    assert audio.kind == "audio" and audio.data is not None and audio.data.startswith(b"RIFF")


async def test_long_embedded_resource_is_cut_with_a_marker(stdio_host: ToolHost):
    result = await call(stdio_host, "scroll", {"n": 20000})
    assert result.content.startswith("[resource lore://scroll (text/markdown)]\n")
    assert "[truncated " in result.content and len(result.content) < 8100
