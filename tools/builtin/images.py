"""The ``images`` server: ``generate_image(prompt, style)`` via an OpenAI-compatible images API.

The image is saved under ``tools.image_output_dir`` and, when Discord runs, posted to the
session's text channel through ``ctx.publish_image``. The endpoint, key, model and size are the
``tools.image_*`` settings of glyphoxa.yaml (``ctx.settings.images``).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import os
import re
import time
import uuid
from pathlib import Path
from typing import Any

from campaigns.providers.openai_client import openai_client
from tools.builtin._common import deep, define_tool, object_schema
from tools.spec import BuiltinServer, ToolContext, ToolError

__all__ = ["create_server", "image_suffix"]

log = logging.getLogger(__name__)

#: How long one request may take. The host abandons the call at the tool's declared maximum
#: anyway; this bounds a request when another MCP host serves the tool with a longer timeout.
_REQUEST_TIMEOUT_S = 60.0
_STYLES = ("fantasy illustration", "ink sketch", "oil painting", "watercolor", "map", "portrait")


def image_suffix(data: bytes) -> str:
    """File suffix from the image's magic bytes (PNG unless recognised otherwise)."""
    if data.startswith(b"\xff\xd8\xff"):
        return ".jpg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return ".webp"
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return ".png"
    raise ToolError("the image service returned data that is not a PNG, JPEG or WebP image")


def _file_name(prompt: str, suffix: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", prompt.lower()).strip("-")[:40] or "image"
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{slug}-{uuid.uuid4().hex[:6]}{suffix}"


def _save(path: Path, data: bytes) -> None:
    """Write atomically so a half-written image is never posted."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def create_server(ctx: ToolContext) -> BuiltinServer:
    """Image generation; a remote model takes seconds, so DEEP only."""
    settings = ctx.settings.images
    state: dict[str, Any] = {}

    def client() -> Any:
        if "client" not in state:
            key = settings.api_key.get_secret_value() if settings.api_key is not None else ""
            if not key:
                raise ToolError(
                    "image generation is not configured (tools.image_api_key or OPENAI_API_KEY)"
                )
            state["client"] = openai_client(
                key, settings.base_url, timeout_s=_REQUEST_TIMEOUT_S, max_retries=0
            )
        return state["client"]

    async def shutdown() -> None:
        current = state.pop("client", None)
        if current is not None:
            await current.close()

    async def generate_image(prompt: str, style: str = "fantasy illustration") -> dict[str, Any]:
        import openai

        model = settings.model
        extra: dict[str, Any] = {}
        if model.startswith("dall-e"):
            extra["response_format"] = "b64_json"
        try:
            response = await client().images.generate(
                model=model,
                prompt=f"{prompt.strip()}. Style: {style.strip()}.",
                n=1,
                size=settings.size,
                **extra,
            )
        except openai.APIStatusError as error:
            raise ToolError(f"the image service refused: HTTP {error.status_code}") from None
        except openai.APIError as error:
            raise ToolError(f"image generation failed: {type(error).__name__}") from None
        if not response.data or not response.data[0].b64_json:
            raise ToolError("the image service returned no image data (b64_json)")
        try:
            data = base64.b64decode(response.data[0].b64_json, validate=True)
        except (binascii.Error, ValueError):
            raise ToolError("the image service returned invalid base64 image data") from None
        path = settings.output_dir / _file_name(prompt, image_suffix(data))
        await asyncio.to_thread(_save, path, data)
        published = False
        if ctx.publish_image is not None:
            try:
                await ctx.publish_image(path, prompt)
                published = True
            except Exception as error:  # the file is still there; say so instead of failing
                log.warning("could not post image %s: %s", path, error)
        result: dict[str, Any] = {"path": str(path), "bytes": len(data), "published": published}
        revised = getattr(response.data[0], "revised_prompt", None)
        if revised:
            result["revised_prompt"] = revised
        return result

    return BuiltinServer(
        name="images",
        shutdown=shutdown,
        tools=[
            define_tool(
                "generate_image",
                "Draw a picture of a scene, character or item; it is shown in the session's "
                "text channel (or saved to a file). Slow: several seconds.",
                object_schema(
                    {
                        "prompt": {"type": "string", "minLength": 3, "maxLength": 1000},
                        "style": {
                            "type": "string",
                            "maxLength": 80,
                            "description": f"e.g. {', '.join(_STYLES)}",
                        },
                    },
                    ["prompt"],
                ),
                generate_image,
                deep(estimated=3000, maximum=4000, read_only=False, idempotent=False),
            )
        ],
    )
