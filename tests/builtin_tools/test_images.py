"""generate_image against a local server speaking the OpenAI images API (b64_json)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tools.builtin.images import create_server
from tools.config import BuiltinToolsConfig
from tools.settings import BuiltinSettings
from tools.spec import ToolContext, ToolError

from .conftest import FakeOpenAIImages, result_text, stdio_session, tiny_png


def _ctx(api: FakeOpenAIImages, out: Path, **extra: object) -> ToolContext:
    config = BuiltinToolsConfig.model_validate(
        {
            "image_base_url": f"{api.url}/v1",
            "image_api_key": "sk-local-test",
            "image_output_dir": str(out),
            **extra,
        }
    )
    return ToolContext(settings=BuiltinSettings.from_config(config))


async def test_generates_saves_and_publishes(images_api: FakeOpenAIImages, tmp_path: Path) -> None:
    posted: list[tuple[Path, str]] = []

    async def publish(path: Path, caption: str) -> None:
        posted.append((path, caption))

    ctx = _ctx(images_api, tmp_path / "img", image_model="dall-e-3")
    ctx.publish_image = publish
    server = create_server(ctx)
    try:
        result = await server.tools[0].handler(prompt="Bartok pouring stout", style="ink sketch")
    finally:
        await server.shutdown()
    path = Path(result["path"])
    assert path.parent == tmp_path / "img" and path.suffix == ".png"
    assert await asyncio.to_thread(path.read_bytes) == tiny_png()
    assert result["published"] is True and posted == [(path, "Bartok pouring stout")]
    sent = images_api.requests[0]
    assert sent["auth"] == "Bearer sk-local-test"
    assert sent["body"]["model"] == "dall-e-3" and sent["body"]["response_format"] == "b64_json"
    assert (
        "Bartok pouring stout" in sent["body"]["prompt"] and "ink sketch" in sent["body"]["prompt"]
    )


async def test_service_errors_are_tool_errors(images_api: FakeOpenAIImages, tmp_path: Path) -> None:
    images_api.fail_status = 400
    server = create_server(_ctx(images_api, tmp_path))
    try:
        with pytest.raises(ToolError, match="refused: HTTP 400"):
            await server.tools[0].handler(prompt="a dragon")
        with pytest.raises(ToolError, match="prompt"):
            await server.tools[0].handler(prompt="")
    finally:
        await server.shutdown()
    no_key = BuiltinSettings.from_config(
        BuiltinToolsConfig(image_base_url=images_api.url), environ={}
    )
    unconfigured = create_server(ToolContext(settings=no_key))
    with pytest.raises(ToolError, match="not configured"):
        await unconfigured.tools[0].handler(prompt="a dragon")


async def test_over_stdio(images_api: FakeOpenAIImages, tmp_path: Path) -> None:
    args = [
        "--set",
        f"image_base_url={images_api.url}/v1",
        "--set",
        "image_api_key=sk-local-test",
        "--set",
        f"image_output_dir={tmp_path}",
    ]
    async with stdio_session("tools.builtin", "images", *args) as session:
        listing = (await session.list_tools()).tools
        meta = listing[0].meta["io.glyphoxa/latency"]
        assert meta["estimated_duration_ms"] > 1500 and meta["idempotent"] is False
        result = await session.call_tool("generate_image", {"prompt": "the Rusty Flagon at dusk"})
        assert not result.is_error
        saved = Path(json.loads(result_text(result))["path"])
        assert (await asyncio.to_thread(saved.read_bytes))[:8] == b"\x89PNG\r\n\x1a\n"
        bad = await session.call_tool("generate_image", {"style": "oil"})
        assert bad.is_error and "prompt" in result_text(bad)
