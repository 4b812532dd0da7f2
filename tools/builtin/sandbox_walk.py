"""Race-free path resolution beneath a sandbox folder, one directory file descriptor at a time.

Checking a path and then opening it by name (``realpath``, then ``open``) leaves a window in
which a folder can be swapped for a symlink that leads out. Here nothing is ever opened by a
full path: each component is opened relative to the already-open parent folder with
``O_NOFOLLOW`` (``openat`` style), so the kernel never follows a symlink for us. A symlink met on
the way is read (``readlinkat``) and resolved by hand, beneath the root only, the way Linux's
``openat2(RESOLVE_BENEATH)`` does: ``..`` above the root or an absolute target outside it is
refused, and so is a loop.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from tools.spec import ToolError

__all__ = ["MAX_SYMLINK_HOPS", "Walk", "oserror_text", "walk"]

MAX_SYMLINK_HOPS = 40
"""As Linux's ``MAXSYMLINKS``: more hops than this is a loop."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(slots=True)
class Walk:
    """Open folders from the root down to the parent of ``name`` (closed by :meth:`close`).

    ``info`` is the ``lstat`` of ``name`` (never a symlink) or None when it does not exist;
    with ``name`` None the walk ended on a folder, ``folder`` itself.
    """

    fds: list[int] = field(default_factory=list)
    name: str | None = None
    info: os.stat_result | None = None

    @property
    def folder(self) -> int:
        return self.fds[-1]

    def close(self) -> None:
        while self.fds:
            os.close(self.fds.pop())

    def __enter__(self) -> Walk:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def oserror_text(relative: str, error: OSError) -> str:
    """A ``ToolError`` message for an ``OSError`` met while working on ``relative``."""
    if error.errno == errno.ENAMETOOLONG:
        return f"{relative!r}: a file or folder name is too long"
    if error.errno == errno.ENOSPC:
        return "the disk is full; nothing was written"
    if error.errno in (errno.EACCES, errno.EPERM):
        return f"{relative!r}: permission denied"
    return f"{relative!r}: {error.strerror or type(error).__name__}"


def walk(
    root: Path, relative: str, parts: list[str], *, make_dirs: bool, last_is_dir: bool
) -> Walk:
    """Resolve ``parts`` beneath ``root`` without ever following a symlink blindly.

    Args:
        root: the sandbox folder (created if missing).
        relative: the path as the caller gave it, for messages.
        parts: its components (already free of ``..``, ``~`` and absolute forms).
        make_dirs: create missing folders on the way (writes).
        last_is_dir: the last part must be a folder, which is opened (listing).
    """
    roots, root_fd = _open_root(root)
    result = Walk([root_fd])
    try:
        _resolve(result, roots, relative, parts, make_dirs, last_is_dir)
    except BaseException:
        result.close()
        raise
    return result


def _open_root(root: Path) -> tuple[tuple[str, ...], int]:
    """The root's spellings an absolute symlink may use (real and as configured), opened."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        real = os.path.realpath(root)
        spellings = tuple(dict.fromkeys((real, os.path.abspath(root))))
        return spellings, os.open(real, _DIR_FLAGS)
    except OSError as error:
        raise ToolError(
            f"the file sandbox {str(root)!r} cannot be used: {error.strerror}"
        ) from None


def _resolve(
    result: Walk,
    roots: tuple[str, ...],
    relative: str,
    parts: list[str],
    make_dirs: bool,
    last_is_dir: bool,
) -> None:
    pending = deque(p for p in parts if p not in ("", "."))
    hops = 0
    while pending:
        name = pending.popleft()
        if name in ("", "."):
            continue
        if name == "..":
            if len(result.fds) == 1:
                raise ToolError(f"{relative!r} leads outside the sandbox (through a symlink)")
            os.close(result.fds.pop())
            continue
        if not pending and not last_is_dir:
            info = _lstat(result.folder, name, relative)
            if info is None or not stat.S_ISLNK(info.st_mode):
                result.name, result.info = name, info
                return
        else:
            opened = _open_dir(result.folder, name, relative, make_dirs)
            if opened is not None:
                result.fds.append(opened)
                continue
        hops += 1
        if hops > MAX_SYMLINK_HOPS:
            raise ToolError(f"{relative!r}: too many levels of symbolic links")
        target = _readlink(result.folder, name, relative)
        if target.startswith("/"):
            inside = [r for r in roots if target == r or target.startswith(r + os.sep)]
            if not inside:
                raise ToolError(f"{relative!r} leads outside the sandbox (through a symlink)")
            while len(result.fds) > 1:
                os.close(result.fds.pop())
            target = target[len(inside[0]) :]
        pending.extendleft(reversed(target.split("/")))


def _lstat(folder: int, name: str, relative: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise ToolError(oserror_text(relative, error)) from None


def _open_dir(folder: int, name: str, relative: str, make_dirs: bool) -> int | None:
    """The opened sub-folder ``name``, or None when it is a symlink (to be resolved by hand)."""
    for _ in range(3):
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=folder)
        except FileNotFoundError:
            if not make_dirs:
                raise ToolError(f"no folder {name!r} on the way to {relative!r}") from None
            try:
                os.mkdir(name, 0o755, dir_fd=folder)
            except FileExistsError:
                pass  # made meanwhile: open it on the next round
            except OSError as error:
                raise ToolError(oserror_text(relative, error)) from None
        except OSError as error:
            if error.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise ToolError(oserror_text(relative, error)) from None
            info = _lstat(folder, name, relative)
            if info is not None and stat.S_ISLNK(info.st_mode):
                return None
            raise ToolError(f"{relative!r}: {name!r} is a file, not a folder") from None
    raise ToolError(f"{relative!r}: the folder {name!r} keeps changing; try again")


def _readlink(folder: int, name: str, relative: str) -> str:
    try:
        return os.readlink(name, dir_fd=folder)
    except OSError as error:
        if error.errno == errno.EINVAL:  # swapped back from a symlink meanwhile
            raise ToolError(f"{relative!r} changed while being opened; try again") from None
        raise ToolError(oserror_text(relative, error)) from None
