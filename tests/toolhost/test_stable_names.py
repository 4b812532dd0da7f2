"""Exposed names come from the configuration, never from which server happens to be up.

Two instances of the stdio test server ("alpha" listed first, "beta" second) offer the same
tools; a gate file keeps one of them down until the test opens it.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from campaigns.basics import Tier
from tools.host import ToolHost

pytestmark = pytest.mark.slow  # several Python MCP servers start per test

ALL = ["*"]
STDIO_SERVER = Path(__file__).parent / "servers" / "stdio_server.py"


def gated(name: str, gate: Path, **extra: object):
    from tools.config import McpServerConfig

    return McpServerConfig(
        name=name,
        transport="stdio",
        command=[sys.executable, str(STDIO_SERVER)],
        env={"GATE_FILE": str(gate)},
        connect_timeout_s=20,
        **extra,
    )


def names(host: ToolHost) -> dict[str, str]:
    return {
        t.name: f"{t.server}/{t.original_name}"
        for t in host.list_tools()
        if t.original_name in ("fast", "slow")
    }


EXPECTED = {
    "fast": "alpha/fast",
    "slow": "alpha/slow",
    "beta_fast": "beta/fast",
    "beta_slow": "beta/slow",
}


async def call(host: ToolHost, name: str) -> object:
    args = {"x": 1} if "fast" in name else {"ms": 1}
    return await host.call(name, args, whitelist=ALL, tier=Tier.DEEP, npc="Bartok")


@pytest.mark.parametrize("down_first", ["alpha", "beta"])
async def test_same_names_whichever_server_comes_up_first(
    make_host: Callable[..., ToolHost], tmp_path: Path, down_first: str
):
    gates = {"alpha": tmp_path / "alpha.gate", "beta": tmp_path / "beta.gate"}
    for gate in gates.values():
        gate.touch()
    first = make_host(gated("alpha", gates["alpha"]), gated("beta", gates["beta"]))
    await first.start()  # both up once: their listings are remembered beside calibration
    assert names(first) == EXPECTED
    await first.close()

    gates[down_first].unlink()
    host = make_host(gated("alpha", gates["alpha"]), gated("beta", gates["beta"]))
    await host.start()
    assert host.server_states()[down_first]["state"] != "up"
    assert names(host) == EXPECTED  # the down server's tools keep their names (shown DOWN)
    name = "fast" if down_first == "alpha" else "beta_fast"
    result = await call(host, name)
    assert result.status == "error"
    assert (
        f"MCP server '{down_first}' is" in result.content and "no tool named" not in result.content
    )
    assert name not in [t.name for t in host.visible_tools(ALL, Tier.DEEP)]

    gates[down_first].touch()
    assert await host.wait_for(lambda h: h.server_states()[down_first]["state"] == "up", 20)
    assert names(host) == EXPECTED
    assert (await call(host, name)).status == "ok"


async def test_first_session_pins_names_and_reports_a_collision_once(
    make_host: Callable[..., ToolHost], tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    """With nothing remembered, the server that is up first keeps the shared name for the
    whole session; the later one is renamed, and that is reported exactly once."""
    alpha_gate, beta_gate = tmp_path / "alpha.gate", tmp_path / "beta.gate"
    beta_gate.touch()
    host = make_host(gated("alpha", alpha_gate), gated("beta", beta_gate))
    with caplog.at_level(logging.WARNING, logger="tools.host.naming"):
        await host.start()
        assert host.get_tool("fast").server == "beta"
        unknown = await host.call("late", {}, whitelist=ALL, tier=Tier.DEEP, npc="Bartok")
        assert "MCP server 'alpha' is" in unknown.content and "may offer it" in unknown.content
        alpha_gate.touch()
        assert await host.wait_for(lambda h: h.server_states()["alpha"]["state"] == "up", 20)
        assert host.get_tool("fast").server == "beta"  # a name never moves to another server
        assert host.get_tool("alpha_fast").server == "alpha"
        crashed = await host.call("alpha_crash", {}, whitelist=ALL, tier=Tier.DEEP, npc="n")
        assert crashed.is_error
        assert await host.wait_for(lambda h: h.get_tool("alpha_crash").healthy, 20)
    wanted_fast = [r for r in caplog.records if "wanted 'fast'" in r.getMessage()]
    assert len(wanted_fast) == 1
    assert [c.name for c in host.collisions].count("fast") == 1


def test_cli_prints_each_collision_once(tmp_path: Path):
    config = {
        "tools": {"calibration_path": str(tmp_path / "cal.json"), "sandbox_dir": str(tmp_path)},
        "memory": {"url": f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}"},
        "mcp": {
            "servers": [
                {"name": name, "transport": "stdio", "command": [sys.executable, str(STDIO_SERVER)]}
                for name in ("alpha", "beta")
            ]
        },
    }
    path = tmp_path / "glyphoxa.yaml"
    path.write_text(yaml.safe_dump(config))
    glyphoxa = Path(sys.executable).with_name("glyphoxa")
    done = subprocess.run(
        [str(glyphoxa), "-c", str(path), "tools", "list"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "beta_fast" in done.stdout
    assert done.stderr.count("wanted 'fast'") == 1, done.stderr
