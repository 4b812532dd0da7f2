"""The ``files`` server: ``read_file``, ``write_file``, ``list_files`` inside a sandbox folder.

Paths are relative to the sandbox. Refused: absolute paths, ``..``, NUL bytes, anything a
symlink leads out of the sandbox, files with more than one hard link (for reading), and special
files (FIFOs, devices, sockets). Paths are resolved one open folder at a time, so swapping a
folder for a symlink while a call runs cannot escape either. Reads and writes are capped at
1 MiB; a write goes to a temp file that replaces the target in one rename, so a failed write
never leaves half a file. Every failure is a ``ToolError`` the LLM can read.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import secrets
import stat
from pathlib import Path, PurePosixPath
from typing import Any

from tools.builtin._common import define_tool, fast, object_schema
from tools.builtin.sandbox_walk import oserror_text, walk
from tools.spec import BuiltinServer, ToolContext, ToolError

__all__ = ["MAX_FILE_BYTES", "MAX_LIST_ENTRIES", "Sandbox", "create_server"]

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 1024 * 1024
MAX_LIST_ENTRIES = 500


class Sandbox:
    """File operations confined to one folder (created on first use).

    Every operation walks the path one open folder at a time (``tools.builtin.sandbox_walk``),
    so a folder swapped for a symlink mid-operation cannot lead out; a file with more than one
    hard link is not read (the other link may live outside). Every failure is a ``ToolError``.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def parts(self, relative: str, *, allow_root: bool = False) -> list[str]:
        """The components of ``relative``, or a ``ToolError`` saying why it is refused."""
        if "\x00" in relative:
            raise ToolError("path contains a NUL byte")
        text = relative.replace("\\", "/").strip()
        if text in ("", "."):
            if allow_root:
                return []
            raise ToolError("give a file path relative to the sandbox, e.g. notes/loot.md")
        if (
            text.startswith("/")
            or PurePosixPath(text).is_absolute()
            or (len(text) > 1 and text[1] == ":")
        ):
            raise ToolError(f"{relative!r}: absolute paths are not allowed; use a relative path")
        parts = list(PurePosixPath(text).parts)
        if ".." in parts:
            raise ToolError(f"{relative!r}: '..' is not allowed; stay inside the sandbox")
        if text.startswith("~"):
            raise ToolError(f"{relative!r}: '~' is not allowed; use a path inside the sandbox")
        return parts

    def read(self, relative: str) -> dict[str, Any]:
        parts = self.parts(relative)
        with walk(self.root, relative, parts, make_dirs=False, last_is_dir=False) as found:
            if found.info is None or found.name is None:
                raise ToolError(f"no file {relative!r} in the sandbox")
            if stat.S_ISDIR(found.info.st_mode):
                raise ToolError(f"{relative!r} is a folder; use list_files")
            try:
                fd = os.open(found.name, _READ_FLAGS, dir_fd=found.folder)
            except FileNotFoundError:
                raise ToolError(f"no file {relative!r} in the sandbox") from None
            except OSError as error:
                if error.errno == errno.ELOOP:
                    raise ToolError(f"{relative!r} changed while being opened; try again") from None
                raise ToolError(oserror_text(relative, error)) from None
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if stat.S_ISDIR(info.st_mode):
                raise ToolError(f"{relative!r} is a folder; use list_files")
            if not stat.S_ISREG(info.st_mode):
                raise ToolError(f"{relative!r} is not a regular file")
            if info.st_nlink > 1:
                raise ToolError(
                    f"{relative!r} has {info.st_nlink} hard links; refusing to read it (another "
                    "link may be outside the sandbox)"
                )
            if info.st_size > MAX_FILE_BYTES:
                raise ToolError(f"{relative!r} is larger than {MAX_FILE_BYTES} bytes")
            try:
                data = handle.read(MAX_FILE_BYTES + 1)
            except OSError as error:
                raise ToolError(oserror_text(relative, error)) from None
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
        parts = self.parts(relative)
        with walk(self.root, relative, parts, make_dirs=True, last_is_dir=False) as found:
            assert found.name is not None  # a walk to a file always ends on a name
            if found.info is not None and stat.S_ISDIR(found.info.st_mode):
                raise ToolError(f"{relative!r} is a folder; nothing was written")
            if found.info is not None and not stat.S_ISREG(found.info.st_mode):
                raise ToolError(f"{relative!r} exists and is not a regular file")
            _replace_atomically(found.folder, found.name, data, relative)
        return {"path": relative, "bytes_written": len(data)}

    def list(self, relative: str) -> dict[str, Any]:
        parts = self.parts(relative, allow_root=True)
        entries: list[dict[str, Any]] = []
        truncated = False
        with walk(self.root, relative, parts, make_dirs=False, last_is_dir=True) as found:
            try:
                with os.scandir(found.folder) as scan:
                    listed = sorted(scan, key=lambda e: e.name)
                for entry in listed:
                    if entry.name.startswith(_TEMP_PREFIX):
                        continue  # an in-flight atomic write
                    if len(entries) >= MAX_LIST_ENTRIES:
                        truncated = True
                        break
                    entries.append(_entry(entry))
            except OSError as error:
                raise ToolError(oserror_text(relative, error)) from None
        result: dict[str, Any] = {"path": relative or ".", "entries": entries}
        if truncated:
            result["truncated"] = True
        return result


_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_TEMP_PREFIX = ".glyphoxa-"


def _entry(entry: os.DirEntry[str]) -> dict[str, Any]:
    try:
        info = entry.stat(follow_symlinks=False)
    except FileNotFoundError:
        return {"name": entry.name, "type": "other"}  # removed while listing
    if stat.S_ISLNK(info.st_mode):
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
    return item


def _replace_atomically(folder: int, name: str, data: bytes, relative: str) -> None:
    """Write a temp file beside ``name`` and rename it over ``name`` in one step."""
    temp = f"{_TEMP_PREFIX}{secrets.token_hex(8)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(temp, flags, 0o600, dir_fd=folder)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=folder)
            raise
    except OSError as error:
        message = oserror_text(relative, error)
        if error.errno == errno.EISDIR:
            message = f"{relative!r} is a folder; nothing was written"
        raise ToolError(message) from None


def create_server(ctx: ToolContext) -> BuiltinServer:
    """Sandboxed file I/O; local disk work runs in a worker thread and lands in FAST."""

    def sandbox() -> Sandbox:
        if ctx.sandbox_dir is None:
            raise ToolError("no file sandbox is configured (tools.sandbox_dir)")
        return Sandbox(ctx.sandbox_dir)

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
