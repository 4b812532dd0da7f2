"""Sandboxed file tools: escapes refused (incl. symlinks), caps, atomic writes; both ways."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from tools.builtin import create_server
from tools.builtin.files import MAX_FILE_BYTES, Sandbox
from tools.spec import ToolContext, ToolError

from .conftest import result_text, stdio_session


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    root = tmp_path / "sandbox"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "loot.md").write_text("a ruby and 3 gp\n", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("do not read", encoding="utf-8")
    os.symlink(outside / "secret.txt", root / "link-out.txt")
    os.symlink(outside, root / "dir-out")
    os.symlink(root / "notes" / "loot.md", root / "link-in.md")
    return root


@pytest.fixture
def tools(sandbox: Path) -> dict:
    server = create_server("files", ToolContext(sandbox_dir=sandbox))
    return {t.name: t for t in server.tools}


async def test_read_write_list(tools: dict, sandbox: Path) -> None:
    assert (await tools["read_file"].handler(path="notes/loot.md"))[
        "content"
    ] == "a ruby and 3 gp\n"
    written = await tools["write_file"].handler(path="session2/plan.md", content="Ambush ✓")
    assert written["bytes_written"] == len("Ambush ✓".encode())
    assert (sandbox / "session2" / "plan.md").read_text(encoding="utf-8") == "Ambush ✓"
    listing = await tools["list_files"].handler()
    names = {e["name"]: e["type"] for e in listing["entries"]}
    assert (
        names["notes"] == "dir" and names["session2"] == "dir" and names["link-out.txt"] == "link"
    )
    inner = await tools["list_files"].handler(dir="notes")
    assert inner["entries"] == [{"name": "loot.md", "type": "file", "size": 16}]
    # a symlink that stays inside the sandbox is fine
    assert "ruby" in (await tools["read_file"].handler(path="link-in.md"))["content"]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../outside/secret.txt", r"'\.\.' is not allowed"),
        ("notes/../../outside/secret.txt", r"'\.\.' is not allowed"),
        ("/etc/passwd", "absolute paths"),
        ("C:/Windows/win.ini", "absolute paths"),
        ("~/.ssh/id_rsa", "'~' is not allowed"),
        ("notes/\x00evil", "NUL"),
        ("link-out.txt", "outside the sandbox"),
        ("dir-out/secret.txt", "outside the sandbox"),
        ("", "give a file path"),
    ],
)
async def test_escapes_are_refused_for_read_and_write(
    tools: dict, sandbox: Path, path: str, message: str
) -> None:
    with pytest.raises(ToolError, match=message):
        await tools["read_file"].handler(path=path) if path else Sandbox(sandbox).read(path)
    if path:
        with pytest.raises(ToolError, match=message):
            await tools["write_file"].handler(path=path, content="pwned")
    assert (sandbox.parent / "outside" / "secret.txt").read_text() == "do not read"
    assert not (sandbox.parent / "outside" / "pwned").exists()


async def test_list_through_symlink_out_refused(tools: dict) -> None:
    with pytest.raises(ToolError, match="outside the sandbox"):
        await tools["list_files"].handler(dir="dir-out")
    with pytest.raises(ToolError, match="no folder"):
        await tools["list_files"].handler(dir="nothing-here")


async def test_special_files_refused_without_blocking(tools: dict, sandbox: Path) -> None:
    os.mkfifo(sandbox / "pipe")
    with pytest.raises(ToolError, match="not a regular file"):
        await asyncio.wait_for(tools["read_file"].handler(path="pipe"), timeout=5)
    with pytest.raises(ToolError, match="not a regular file"):
        await tools["write_file"].handler(path="pipe", content="x")
    with pytest.raises(ToolError, match="is a folder"):
        await tools["read_file"].handler(path="notes")


async def test_size_caps_and_binary(tools: dict, sandbox: Path) -> None:
    (sandbox / "huge.txt").write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    with pytest.raises(ToolError, match="larger than"):
        await tools["read_file"].handler(path="huge.txt")
    with pytest.raises(ToolError, match="nothing was written"):
        await tools["write_file"].handler(path="notes/loot.md", content="y" * (MAX_FILE_BYTES + 1))
    assert (sandbox / "notes" / "loot.md").read_text() == "a ruby and 3 gp\n"
    (sandbox / "blob.bin").write_bytes(b"\xff\xfe\x00\x81")
    with pytest.raises(ToolError, match="not a UTF-8 text file"):
        await tools["read_file"].handler(path="blob.bin")


async def test_atomic_replace_leaves_no_temp_files(tools: dict, sandbox: Path) -> None:
    target = sandbox / "notes" / "loot.md"
    inode_before = target.stat().st_ino
    await tools["write_file"].handler(path="notes/loot.md", content="replaced")
    assert target.read_text() == "replaced"
    assert target.stat().st_ino != inode_before  # a new file was renamed over the old one
    assert [p.name for p in (sandbox / "notes").iterdir()] == ["loot.md"]


async def test_bad_arguments(tools: dict) -> None:
    with pytest.raises(ToolError, match="missing argument"):
        await tools["write_file"].handler(path="a.txt")
    with pytest.raises(ToolError, match="content"):
        await tools["write_file"].handler(path="a.txt", content=["not", "text"])
    unconfigured = {t.name: t for t in create_server("files", ToolContext()).tools}
    with pytest.raises(ToolError, match="no file sandbox"):
        await unconfigured["read_file"].handler(path="a.txt")


async def test_tools_over_stdio(sandbox: Path) -> None:
    async with stdio_session("tools.builtin", "files", "--sandbox", str(sandbox)) as session:
        listing = {t.name: t for t in (await session.list_tools()).tools}
        assert listing["write_file"].meta["io.glyphoxa/latency"]["read_only"] is False
        assert listing["read_file"].meta["io.glyphoxa/latency"]["read_only"] is True
        wrote = await session.call_tool("write_file", {"path": "x/y.txt", "content": "hello"})
        assert not wrote.is_error
        read = await session.call_tool("read_file", {"path": "x/y.txt"})
        assert json.loads(result_text(read))["content"] == "hello"
        escape = await session.call_tool("read_file", {"path": "link-out.txt"})
        assert escape.is_error and "outside the sandbox" in result_text(escape)
        dots = await session.call_tool("write_file", {"path": "../evil", "content": "x"})
        assert dots.is_error and ".." in result_text(dots)
        files = await session.call_tool("list_files", {"dir": "x"})
        assert json.loads(result_text(files))["entries"][0]["name"] == "y.txt"
    assert not (sandbox.parent / "evil").exists()
