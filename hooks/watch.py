"""Which memory files changed, told by the kernel (Linux inotify), so the warm process never rescans.

Without it the warm process compared every file's mtime every few seconds to catch edits made in place,
which no folder mtime shows: 0.83 s a scan at 100,000 memories, 10% of a core while idle. The watch
costs nothing until a file changes, and then says which. Where inotify is missing (macOS, a container
without it) `FolderWatch.open` returns None and the warm process keeps its periodic full sync.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct
from pathlib import Path

from hafiza.vault.format.layout import is_shard

# <sys/inotify.h>
IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_Q_OVERFLOW, IN_IGNORED, IN_ISDIR = 0x400, 0x800, 0x4000, 0x8000, 0x40000000
WATCHED = IN_CLOSE_WRITE | IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF \
    | IN_MOVE_SELF
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then `len` bytes of NUL-padded name


class FolderWatch:
    """Changes to the files of one folder. `fileno()` becomes readable when there are some; `changed()`
    drains them: the names touched, or None when the kernel lost count (its queue overflowed, or the
    folder itself went) and only a full comparison can tell."""

    def __init__(self, fd: int, prefixes: dict[int, str] | None = None, add=None, folder: Path | None = None):
        self.fd = fd
        self.prefixes = prefixes or {}  # watch descriptor -> what its names are reported under
        self._add, self.folder = add, folder  # to watch a subfolder made later (vault/format/layout.py)

    @classmethod
    def open(cls, folder: Path, also: dict[str, Path] | None = None) -> "FolderWatch | None":
        """A watch on `folder` and its subfolders of memories (a large vault's `3f/`, reported as `3f/<name>`),
        and on each folder of `also` that exists, its names reported as prefix + name (fact notes as
        `facts/<name>`, as the index knows them)."""
        from hafiza.vault.format.layout import shard_folders

        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            init, add = libc.inotify_init1, libc.inotify_add_watch
        except (OSError, AttributeError):
            return None
        fd = init(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            return None
        if add(fd, os.fsencode(str(folder)), WATCHED) < 0:
            os.close(fd)
            return None
        watch = cls(fd, {}, add, folder)
        for sub in shard_folders(folder):
            watch._follow(sub)
        for prefix, other in (also or {}).items():
            wd = add(fd, os.fsencode(str(other)), WATCHED) if other.is_dir() else -1
            if wd >= 0:
                watch.prefixes[wd] = prefix
        return watch

    def _follow(self, sub: Path) -> None:
        wd = self._add(self.fd, os.fsencode(str(sub)), WATCHED)
        if wd >= 0:
            self.prefixes[wd] = f"{sub.name}/"

    def fileno(self) -> int:
        return self.fd

    def changed(self) -> set[str] | None:
        names: set[str] | None = set()
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return names
            at = 0
            while at + _EVENT.size <= len(data):
                wd, mask, _, size = _EVENT.unpack_from(data, at)
                name = data[at + _EVENT.size:at + _EVENT.size + size].rstrip(b"\0")
                at += _EVENT.size + size
                if mask & (IN_Q_OVERFLOW | IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED):
                    names = None
                elif mask & IN_ISDIR and mask & (IN_CREATE | IN_MOVED_TO) and wd not in self.prefixes:
                    if is_shard(os.fsdecode(name)):  # a new subfolder: watched from now, and read whole once
                        self._follow(self.folder / os.fsdecode(name))
                        names = None
                elif names is not None and name:
                    names.add(self.prefixes.get(wd, "") + os.fsdecode(name))

    def close(self) -> None:
        os.close(self.fd)
