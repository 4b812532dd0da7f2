"""Child process for the resource tests: runs built-in tool calls and reports, per call, how
long it took and how it ended, then the process's peak resident memory above its baseline.

Usage: ``python tests/security/tool_probe.py < SPEC_JSON``. The address space is capped at the
baseline plus 1.5 GiB, so a regression fails with MemoryError instead of taking the machine.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tools.builtin import create_server
from tools.config import BuiltinToolsConfig
from tools.settings import BuiltinSettings
from tools.spec import ToolContext, ToolError


def _vm_size() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize")


def _summary(value: Any) -> str:
    """The result with long strings replaced by their length, so flags stay visible."""
    if isinstance(value, dict):
        value = {
            k: (v if not isinstance(v, str) or len(v) <= 80 else f"<{len(v)} chars>")
            for k, v in value.items()
        }
    return json.dumps(value)[:500]


async def main(spec: dict[str, Any]) -> None:
    ctx = ToolContext(
        settings=BuiltinSettings.from_config(
            BuiltinToolsConfig.model_validate(spec.get("settings", {}))
        ),
        sandbox_dir=Path(spec["sandbox_dir"]) if spec.get("sandbox_dir") else None,
        campaign_dir=Path(spec["campaign_dir"]) if spec.get("campaign_dir") else None,
    )
    server = create_server(spec["server"], ctx)
    tools = {t.name: t for t in server.tools}
    if server.startup is not None:
        await server.startup()
    limit = _vm_size() + 1536 * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for call in spec["calls"]:
        tool = tools[call["tool"]]
        started = time.perf_counter()
        try:
            value = await tool.handler(**call["args"])
            outcome, detail = "ok", _summary(value)
        except ToolError as error:
            outcome, detail = "tool_error", str(error)[:300]
        except BaseException as error:  # what the host would count as a crash
            outcome, detail = "crash", f"{type(error).__name__}: {error}"[:300]
        report = {
            "tool": call["tool"],
            "label": call.get("label", ""),
            "seconds": time.perf_counter() - started,
            "max_ms": tool.latency.max_duration_ms,
            "outcome": outcome,
            "detail": detail,
        }
        print(json.dumps(report), flush=True)
    if server.shutdown is not None:
        await server.shutdown()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"extra_rss_mb": (peak - baseline) / 1024}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.stdin.read())))
