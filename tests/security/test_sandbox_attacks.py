"""The file sandbox under attack: odd paths are clear ToolErrors (never crashes that demote the
tool), hard links planted inside are not read through, and a folder swapped for a symlink
while reads run never leads out."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from campaigns.basics import Tier
from tools.builtin import create_server
from tools.builtin.files import Sandbox
from tools.host import ToolHost
from tools.spec import ToolContext, ToolError

SECRET = "the dragon's true name"


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "sandbox"
    root.mkdir()
    (root / "ok.txt").write_text("fine", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET, encoding="utf-8")
    return root, outside


@pytest.fixture
async def host(layout: tuple[Path, Path]) -> AsyncIterator[ToolHost]:
    async with ToolHost(builtins=[create_server("files", ToolContext(sandbox_dir=layout[0]))]) as h:
        yield h


HOSTILE_WRITES = [
    ("ok.txt/x/y", "is a file, not a folder"),  # the reported one: a file used as a folder
    ("ok.txt/y", "not a folder"),
    ("a" * 255 + "é/x.txt", "name is too long"),  # 256+ bytes in one folder name
    ("d/" + "b" * 256, "name is too long"),
    ("notes/" * 40 + "deep.txt", None),  # deep but legal
]


@pytest.mark.parametrize(("path", "fragment"), HOSTILE_WRITES)
def test_odd_write_paths_are_tool_errors(
    layout: tuple[Path, Path], path: str, fragment: str | None
) -> None:
    sandbox = Sandbox(layout[0])
    if fragment is None:
        assert sandbox.write(path, "x")["bytes_written"] == 1
        return
    with pytest.raises(ToolError, match=fragment):
        sandbox.write(path, "x")
    assert (layout[0] / "ok.txt").read_text() == "fine"


async def test_ten_odd_paths_do_not_demote_write_file(host: ToolHost) -> None:
    """Each of them is the tool answering correctly: the host must not count crashes."""
    before = host.get_tool("write_file")
    assert before is not None and before.tier is Tier.FAST
    for index in range(12):
        path = HOSTILE_WRITES[index % 4][0]
        result = await host.call(
            "write_file", {"path": path, "content": "x"}, whitelist=["*"], tier=Tier.FAST, npc="n"
        )
        assert result.is_error and "crashed" not in result.content, result
    after = host.get_tool("write_file")
    assert after is not None and after.tier is Tier.FAST and not after.demoted


def test_a_hard_link_planted_inside_is_not_read(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    os.link(outside / "secret.txt", root / "innocent.txt")
    with pytest.raises(ToolError, match="hard links"):
        Sandbox(root).read("innocent.txt")


def test_symlinks_inside_still_resolve_and_outside_never(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    (root / "notes").mkdir()
    (root / "notes" / "a.md").write_text("inside", encoding="utf-8")
    os.symlink("notes", root / "rel-dir")
    os.symlink(root / "notes" / "a.md", root / "abs-file")
    os.symlink("../notes/a.md", root / "notes" / "up-and-back")  # '..' within the sandbox
    os.symlink("../../outside/secret.txt", root / "notes" / "up-and-out")
    os.symlink("loop-b", root / "loop-a")
    os.symlink("loop-a", root / "loop-b")
    sandbox = Sandbox(root)
    for path in ("rel-dir/a.md", "abs-file", "notes/up-and-back", "rel-dir/up-and-back"):
        assert sandbox.read(path)["content"] == "inside", path
    for path, fragment in (
        ("notes/up-and-out", "outside the sandbox"),
        ("loop-a", "levels of symbolic links"),
    ):
        with pytest.raises(ToolError, match=fragment):
            sandbox.read(path)
        with pytest.raises(ToolError, match=fragment):
            sandbox.write(path, "pwned")
    assert (outside / "secret.txt").read_text() == SECRET


SWAPPER = """
import os, sys, time
root, outside, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
folder, aside, link = (os.path.join(root, n) for n in ("swap", "swap-real", "swap-link"))
end = time.monotonic() + seconds
print("ready", flush=True)
while time.monotonic() < end:
    os.rename(folder, aside)
    os.symlink(outside, link)
    os.rename(link, folder)
    os.unlink(folder)
    os.rename(aside, folder)
"""


@pytest.mark.slow
def test_a_folder_swapped_for_a_symlink_never_leads_out(layout: tuple[Path, Path]) -> None:
    """A second process keeps swapping ``swap/`` for a symlink to the outside folder while this
    one reads ``swap/secret.txt`` (a harmless file of the same name inside). Before the fix,
    about 1 read in 1,200 returned the outside file."""
    root, outside = layout
    (root / "swap").mkdir()
    (root / "swap" / "secret.txt").write_text("harmless", encoding="utf-8")
    sandbox = Sandbox(root)
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(root), str(outside), "60"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert swapper.stdout is not None and swapper.stdout.readline() == "ready\n"
    reads = refused = escaped = crashed = 0
    deadline = time.monotonic() + 6.0
    try:
        while time.monotonic() < deadline and reads < 40_000:
            reads += 1
            try:
                content = sandbox.read("swap/secret.txt")["content"]
            except ToolError:
                refused += 1
                continue
            except Exception:  # a raw OSError: the host would count the tool as crashed
                crashed += 1
                continue
            escaped += content == SECRET
    finally:
        swapper.kill()
        swapper.wait()
    assert refused > 0, "the swap never raced the reads; the test proves nothing"
    assert (escaped, crashed) == (0, 0), f"of {reads} reads {escaped} escaped, {crashed} crashed"
