"""How hafiza touches files: atomic replacement, appending whole lines, and reading only regular
files inside the vault. Stdlib only (the hook imports it).

Everything hafiza creates is private to the user (0600 files, 0700 folders): a vault holds what people
told their agents, and the machine may have other users.
"""

from __future__ import annotations

import itertools
import os
import stat
import time
from pathlib import Path
from typing import Callable

FILE_MODE = 0o600
DIR_MODE = 0o700
# A memory is a few KB; a file far past this is not one, and reading it whole would hold every reader.
MAX_FILE_BYTES = 1 << 20
TEMP_SUFFIX = ".tmp"  # atomic_write's temp files: `.<name>.<pid>.<ns>.<seq>.tmp`, never committed

_SEQ = itertools.count()  # threads of one process never share a temp name
_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"))


class NotRegularFile(OSError):
    """A path hafiza will not read: a symlink (it could point anywhere, e.g. ~/.aws/credentials),
    a FIFO (it would block), a folder or a device. `reason` says which, for the user."""

    def __init__(self, path, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason


def kind(st: os.stat_result) -> str | None:
    """What a file hafiza will not read is, in words (from its `lstat`); None for a regular file it reads.

    A regular file with more than one name is a hard link: its text may be a file's outside the vault
    (`ln ~/.netrc memories/notes.md` passes every symlink check), so it is refused as a symlink is
    (issue 29, item 2)."""
    for test, name in _KINDS:
        if test(st.st_mode):
            return name
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    return f"a hard link ({st.st_nlink} names for one file)" if st.st_nlink > 1 else None


def read_regular(path: Path, limit: int = MAX_FILE_BYTES, head: int | None = None, linked: bool = False) -> bytes:
    """The bytes of a regular file, never following a symlink or a hard link and never blocking on a FIFO.

    Raises NotRegularFile for anything else (see `kind`), or for a file larger than `limit` bytes.
    With `head`, only its first `head` bytes, whatever its size. `linked` lets a hard link through, for
    files that are not the vault's (a project's, where pnpm's store links every package file).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == 40:  # ELOOP: the last component is a symlink
            raise NotRegularFile(path, "a symbolic link: hafiza reads only regular files inside the vault") from None
        raise
    try:
        st = os.fstat(fd)
        what = None if linked and stat.S_ISREG(st.st_mode) else kind(st)
        if what:
            why = "another of its names may be outside the vault" if stat.S_ISREG(st.st_mode) else "not a regular file"
            raise NotRegularFile(path, f"{what}, {why}")
        if head is not None:
            return os.read(fd, head)
        if st.st_size > limit:
            raise NotRegularFile(path, f"{st.st_size:,} bytes; larger than the {limit:,} a memory may be")
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:  # it grew while being read
                raise NotRegularFile(path, f"more than the {limit:,} bytes a memory may be")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(path: Path, limit: int = MAX_FILE_BYTES) -> str:
    """`read_regular` decoded as UTF-8 (UnicodeDecodeError when it is not)."""
    return read_regular(path, limit).decode("utf-8")


def is_regular(path: Path) -> bool:
    """A regular file hafiza reads: not a symlink, not a hard link (`kind`)."""
    try:
        return kind(os.lstat(path)) is None
    except OSError:
        return False


def atomic_write(path: Path, data: str | bytes | Callable, fsync: bool = True,
                 mode: int | None = FILE_MODE, replace: bool = True) -> None:
    """Write via a temp file in the same folder and rename: readers see old or new, never half.

    `data` is text, bytes, or a callable that writes to the open binary file.
    Skipping the fsync suits bulk writes followed by a commit (3.6 s vs 0.4 s
    for 2,000 files). The file gets exactly `mode`, whatever the umask; with
    None, what open() would give a new file (0666 less the umask). With
    `replace=False` a file already at `path` is never replaced: FileExistsError.
    """
    # A unique name without `tempfile` (it costs the hook ~5 ms to import).
    tmp = path.parent / f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.{next(_SEQ)}{TEMP_SUFFIX}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666 if mode is None else mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            if mode is not None:
                os.fchmod(fh.fileno(), mode)  # os.open's mode is narrowed by the umask
            if callable(data):
                data(fh)
            else:
                fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)  # fails if `path` exists, as a rename never does
            os.unlink(tmp)
        if fsync:
            sync_folder(path.parent)  # the rename is in the folder: until it is on disk, a crash may undo it
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def sync_folder(folder: Path) -> None:
    """fsync a folder, so the names made or renamed in it survive a power cut (issue 29, item 8)."""
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def temp_owner(name: str) -> int | None:
    """The pid in an atomic_write temp file's name, or None if `name` is not one."""
    parts = name.split(".")
    if not (name.startswith(".") and name.endswith(TEMP_SUFFIX) and len(parts) >= 6):
        return None
    try:
        return int(parts[-4])
    except ValueError:
        return None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: alive, and not ours
    return True


def append_lines(path: Path, text: str) -> None:
    """Append with one O_APPEND write, so concurrent writers' lines never interleave."""
    path.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, FILE_MODE)
    try:
        os.write(fd, text.encode("utf-8"))
    finally:
        os.close(fd)
