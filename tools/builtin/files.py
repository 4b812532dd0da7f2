"""The ``files`` server: ``read_file``, ``write_file``, ``list_files`` inside a sandbox folder.

Paths are relative to the sandbox. Refused: absolute paths, ``..``, NUL bytes, anything whose
real path (symlinks resolved) leaves the sandbox, and special files (FIFOs, devices, sockets).
Reads and writes are capped at 1 MiB; a write goes to a temp file that replaces the target in one
rename, so a failed write never leaves half a file.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import stat
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from tools.builtin._common import define_tool, fast, object_schema
from tools.spec import BuiltinServer, ToolContext, ToolError

__all__ = ["MAX_FILE_BYTES", "MAX_LIST_ENTRIES", "Sandbox", "create_server"]

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 1024 * 1024
MAX_LIST_ENTRIES = 500


class Sandbox:
    """Path checks and file operations confined to one folder (created on first use)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _real_root(self) -> str:
        self.root.mkdir(parents=True, exist_ok=True)
        return os.path.realpath(self.root)

    def resolve(self, relative: str, *, allow_root: bool = False) -> str:
        """The real path of ``relative`` inside the sandbox, or a ``ToolError`` saying why not."""
        if "\x00" in relative:
            raise ToolError("path contains a NUL byte")
        text = relative.replace("\\", "/").strip()
        if text in ("", "."):
            if allow_root:
                return self._real_root()
            raise ToolError("give a file path relative to the sandbox, e.g. notes/loot.md")
        if (
            text.startswith("/")
            or PurePosixPath(text).is_absolute()
            or (len(text) > 1 and text[1] == ":")
        ):
            raise ToolError(f"{relative!r}: absolute paths are not allowed; use a relative path")
        parts = PurePosixPath(text).parts
        if ".." in parts:
            raise ToolError(f"{relative!r}: '..' is not allowed; stay inside the sandbox")
        if text.startswith("~"):
            raise ToolError(f"{relative!r}: '~' is not allowed; use a path inside the sandbox")
        root = self._real_root()
        real = os.path.realpath(os.path.join(root, *parts))
        if real != root and not real.startswith(root + os.sep):
            raise ToolError(f"{relative!r} leads outside the sandbox (through a symlink)")
        return real

    def read(self, relative: str) -> dict[str, Any]:
        real = self.resolve(relative)
        try:
            fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            raise ToolError(f"no file {relative!r} in the sandbox") from None
        except OSError as error:
            raise ToolError(f"cannot open {relative!r}: {error.strerror}") from None
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise ToolError(f"{relative!r} is a folder; use list_files")
            if not stat.S_ISREG(info.st_mode):
                raise ToolError(f"{relative!r} is not a regular file")
            if info.st_size > MAX_FILE_BYTES:
                raise ToolError(f"{relative!r} is larger than {MAX_FILE_BYTES} bytes")
        except BaseException:
            os.close(fd)
            raise
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise ToolError(f"{relative!r} is larger than {MAX_FILE_BYTES} bytes")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"{relative!r} is not a UTF-8 text file") from None
        return {"path": relative, "size": len(data), "content": text}

    def write(self, relative: str, content: str) -> dict[str, Any]:
        data = content.encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            raise ToolError(f"content is larger than {MAX_FILE_BYTES} bytes; nothing was written")
        real = self.resolve(relative)
        folder = os.path.dirname(real)
        if os.path.lexists(real):
            info = os.lstat(real)
            if not stat.S_ISREG(info.st_mode):
                raise ToolError(f"{relative!r} exists and is not a regular file")
        if os.path.exists(folder) and not os.path.isdir(folder):
            raise ToolError(f"cannot write {relative!r}: its parent is not a folder")
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".glyphoxa-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, real)
        except OSError as error:
            Path(tmp).unlink(missing_ok=True)
            if error.errno == errno.ENOSPC:
                raise ToolError("the disk is full; nothing was written") from None
            raise ToolError(f"cannot write {relative!r}: {error.strerror}") from None
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return {"path": relative, "bytes_written": len(data)}

    def list(self, relative: str) -> dict[str, Any]:
        real = self.resolve(relative, allow_root=True)
        if not os.path.isdir(real):
            if os.path.exists(real):
                raise ToolError(f"{relative!r} is a file, not a folder")
            raise ToolError(f"no folder {relative!r} in the sandbox")
        entries: list[dict[str, Any]] = []
        truncated = False
        with os.scandir(real) as scan:
            for entry in sorted(scan, key=lambda e: e.name):
                if entry.name.startswith(".glyphoxa-"):
                    continue  # an in-flight atomic write
                if len(entries) >= MAX_LIST_ENTRIES:
                    truncated = True
                    break
                info = entry.stat(follow_symlinks=False)
                if entry.is_symlink():
                    kind = "link"
                elif stat.S_ISDIR(info.st_mode):
                    kind = "dir"
                elif stat.S_ISREG(info.st_mode):
                    kind = "file"
                else:
                    kind = "other"
                item: dict[str, Any] = {"name": entry.name, "type": kind}
                if kind == "file":
                    item["size"] = info.st_size
                entries.append(item)
        result: dict[str, Any] = {"path": relative or ".", "entries": entries}
        if truncated:
            result["truncated"] = True
        return result


def create_server(ctx: ToolContext) -> BuiltinServer:
    """Sandboxed file I/O; local disk work runs in a worker thread and lands in FAST."""

    def sandbox() -> Sandbox:
        root = ctx.sandbox_dir or ctx.settings.get("sandbox_dir")
        if root is None:
            raise ToolError("no file sandbox is configured (tools.sandbox_dir)")
        return Sandbox(Path(root))

    async def read_file(path: str) -> dict[str, Any]:
        return await asyncio.to_thread(sandbox().read, path)

    async def write_file(path: str, content: str) -> dict[str, Any]:
        return await asyncio.to_thread(sandbox().write, path, content)

    async def list_files(dir: str = ".") -> dict[str, Any]:
        return await asyncio.to_thread(sandbox().list, dir)

    path_schema = {"type": "string", "minLength": 1, "maxLength": 255}
    return BuiltinServer(
        name="files",
        tools=[
            define_tool(
                "read_file",
                "Read a UTF-8 text file (up to 1 MiB) from the campaign's notes sandbox.",
                object_schema({"path": path_schema}, ["path"]),
                read_file,
                fast(estimated=10, maximum=400, read_only=True, idempotent=True),
            ),
            define_tool(
                "write_file",
                "Create or replace a text file (up to 1 MiB) in the campaign's notes sandbox.",
                object_schema(
                    {"path": path_schema, "content": {"type": "string"}}, ["path", "content"]
                ),
                write_file,
                fast(estimated=20, maximum=500, read_only=False, idempotent=True),
            ),
            define_tool(
                "list_files",
                "List the files and folders in a sandbox folder (default: its top level).",
                object_schema({"dir": {"type": "string", "maxLength": 255}}),
                list_files,
                fast(estimated=10, maximum=400, read_only=True, idempotent=True),
            ),
        ],
    )
