"""git's index brought level with a commit for a few paths, without git reading and rewriting all of it.

After a commit of a few files (vault/git/commit.py, `_commit_files`), git's index must list their new
contents, or `git status` would show hafiza's own commit undone. `git update-index` parses every entry
and writes every entry back: at 100,000 memories a 13 MB index, ~120 ms of each write, whatever
changed. Here the entries concerned are found by their path's bytes and spliced in place; the rest of
the file is copied as it is. The format is git's documented one (gitformat-index(5)), version 2 only,
the version every git tool reads:

    header  "DIRC", version, entry count
    entries sorted by path: 62 bytes of stat data, blob id and flags; the path; 1-8 NULs to a multiple of 8
    extensions  4-byte signature, 4-byte size, data
    checksum  SHA-1 of all of the above

The end of the entries is found from git's own "EOIE" extension, which git writes when
`index.recordEndOfIndexEntries` is set (GitStore.tune sets it in a large vault). Extensions: the
cache of tree ids (TREE) is kept, its entries for the folders changed marked out of date, as git does;
the untracked-files cache and other optional ones are dropped (git rebuilds them when it next wants
them); REUC is kept. Anything else, an index version other than 2, a SHA-256 repository, a new folder,
a path met in an unexpected state: `Unsupported`, nothing written, and the caller runs git.
"""

from __future__ import annotations

import hashlib
import os
import stat as st
import struct
from pathlib import Path
from typing import Callable, NamedTuple

HEADER = 12
FIXED = 62  # bytes of an entry before its path: 10 stat fields, a 20-byte id, 2 bytes of flags
END_OF_ENTRIES = b"EOIE"
TREE = b"TREE"
KEPT = (b"REUC",)  # optional extensions that stay valid whatever entries change
SPARE = "hafiza-index.spare"  # in .git/: an older index, written over by the next write (see `_take`)
STAMP = "hafiza-index"  # in .git/: which index file this module wrote last (its checksum is known good)
LOCK_WAIT = 2.0  # seconds
MAX_PATHS = 64  # each is found by a search of the index: an import's thousands are left to git
MAX_WALK = 5_000  # entries of a folder walked to find a path (a sharded folder holds a few hundred)
_MODES = {0o100644, 0o100755, 0o120000, 0o160000}


class Unsupported(Exception):
    """This index, or this change to it, is one to leave to git itself."""


def prepare(git_dir: Path, paths: dict[str, bool], entries: Callable[[], dict[str, tuple[os.stat_result, bytes]]]
            ) -> "Staged":
    """The new index written whole to git's own lock file, .git/index.lock, and held there: `Staged.publish`
    makes it the index (one atomic replacement), `Staged.abandon` drops it. `paths`: each path to change,
    True where it keeps an entry (its file exists), False where its entry goes. `entries()` gives each kept
    path's (stat, taken before its blob was made; raw blob id); it is called once, when the first new entry
    is due, so the caller may still be having git make the blobs while the unchanged start of the index is
    hashed and written. Raises Unsupported, having written nothing, where git itself must do it;
    FileExistsError when another git process holds the index longer than LOCK_WAIT."""
    import mmap

    if len(paths) > MAX_PATHS:
        raise Unsupported("many paths: git updates them all in one pass over the index")
    staged = Staged(git_dir)
    fd = _take(staged.lock, staged.spare, staged.index)
    try:
        with open(staged.index, "rb") as f:
            info = os.fstat(f.fileno())
            os.fchmod(fd, st.S_IMODE(info.st_mode))
            if info.st_size < HEADER + 20:
                raise Unsupported("an index too short to be one")
            # Mapped, not read: the unchanged runs of entries go from the page cache to the new file uncopied.
            staged.data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            ours = staged.stamp.read_text("ascii") == _stamp(info)
        except (OSError, UnicodeDecodeError):
            ours = False
        size = 0
        for piece in _pieces(staged.data, _plan(staged.data, paths, checked=ours), entries):
            view = memoryview(piece)
            size += len(view)
            while view:
                view = view[os.write(fd, view):]
            del view, piece
        os.ftruncate(fd, size)  # the spare file held an older index, perhaps a longer one
    except BaseException:
        os.close(fd)
        staged.abandon()
        raise
    os.close(fd)
    return staged


class Staged:
    """A new index waiting in .git/index.lock (git's own lock: no git process writes the index meanwhile),
    and the old one's map."""

    def __init__(self, git_dir: Path) -> None:
        self.index, self.lock, self.stamp = git_dir / "index", git_dir / "index.lock", git_dir / STAMP
        self.spare = git_dir / SPARE
        self.data = None

    def publish(self) -> None:
        """The new index in place of the old, in one rename; the old one's file kept as the spare, to be
        written over by the next write (see `_take`)."""
        try:
            kept = self.spare.with_name(SPARE + ".new")
            kept.unlink(missing_ok=True)
            os.link(self.index, kept)
            os.replace(kept, self.spare)
        except OSError:
            pass  # no spare: the next write makes a new file
        os.replace(self.lock, self.index)

    def release(self) -> None:
        """Let go of the old index and note which file this module wrote."""
        self._unmap()
        try:
            self.stamp.write_text(_stamp(os.stat(self.index)), "ascii")
        except OSError:
            pass  # the next write verifies the checksum again

    def abandon(self) -> None:
        """Drop the new index: git's lock is let go, the old index stays."""
        self.lock.unlink(missing_ok=True)
        self._unmap()

    def _unmap(self) -> None:
        if self.data is not None:
            try:
                self.data.close()
            except BufferError:
                pass  # a view of it is still held by an exception's frames: unmapped when they go
            self.data = None


def _take(lock: Path, spare: Path, index: Path) -> int:
    """git's lock on its index, waiting up to LOCK_WAIT seconds for another git process to let go of it (an
    editor's git integration runs `git status` often, and that writes the index); FileExistsError after.

    The lock file is the spare, an index two writes old, given the lock's name by a hard link (which, like
    git's exclusive create, fails where the lock exists) and written over: a new file each time would
    cost pages for the new index and freeing the old one's when it is replaced, ~10 ms at 13 MB. A new
    file where there is no spare, or the spare is the index itself (a write that died between the two
    renames of `Staged.publish`)."""
    import time

    deadline = time.monotonic() + LOCK_WAIT
    while True:
        try:
            try:
                os.link(spare, lock)
            except FileExistsError:
                raise
            except OSError:  # no spare yet, or a file system without hard links
                return os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            fd = _open_spare(lock, index)
            if fd is not None:
                return fd
            os.unlink(spare)  # not a plain file of its own (a link, a pipe, the index itself): never written over
            os.unlink(lock)
        except FileExistsError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _open_spare(lock: Path, index: Path) -> int | None:
    """The spare, under the lock's name, opened to be written over; None unless it is a regular file named
    only by the spare and the lock (a symbolic link is not followed, a pipe does not block)."""
    try:
        fd = os.open(lock, os.O_WRONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if st.S_ISREG(info.st_mode) and info.st_nlink == 2 and not os.path.samestat(info, os.stat(index)):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def _stamp(info: os.stat_result) -> str:
    """What tells the index file this module last wrote from any other: git writes a new file (a new
    inode) each time it writes the index."""
    return f"{info.st_ino} {info.st_size} {info.st_mtime_ns}"


class Plan(NamedTuple):
    """Where an index changes: its entry count after, where its entries end, its extensions, the edits in
    file order, each (offset, bytes of the old entry cut there, the path's bytes, whether it keeps an
    entry), and the folders on the paths (their entries in the tree cache go out of date)."""
    count: int
    end: int
    extensions: list[tuple[bytes, bytes]]
    edits: list[tuple[int, int, bytes, bool]]
    folders: set[bytes]


def _plan(data, paths: dict[str, bool], checked: bool = False) -> Plan:
    """The edits that set `paths` in the index `data` (bytes, or a map of the file), found without changing
    anything; Unsupported for an index or a change to leave to git. Its checksum is verified first unless
    `checked` (this module wrote that very file, and computed it)."""
    if len(data) < HEADER + 20 or data[:4] != b"DIRC" or struct.unpack(">I", data[4:8])[0] != 2:
        raise Unsupported("not a version 2 index")
    if not checked and hashlib.sha1(memoryview(data)[:-20]).digest() != data[-20:]:
        raise Unsupported("the index's checksum does not match: git will say what is wrong")
    count = struct.unpack(">I", data[8:12])[0]
    end, extensions = _extensions(data)
    edits = []
    for path in sorted(paths, key=_encode):
        name = _encode(path)
        offset, size = _find(data, end, name)
        if not paths[path] and not size:
            continue  # gone, and never listed
        edits.append((offset, size, name, paths[path]))
        count += paths[path] - bool(size)
    edits.sort(key=lambda e: (e[0], e[2]))
    folders = {b"/".join(_encode(p).split(b"/")[:n]) for p in paths for n in range(p.count("/") + 1)}
    return Plan(count, end, extensions, edits, folders)


def _pieces(data, plan: Plan, entries: Callable[[], dict[str, tuple[os.stat_result, bytes]]]):
    """The new index, piece by piece, its checksum last: the unchanged runs of entries as views of `data`.
    `entries()` is called when the first new entry is due."""
    whole, checksum, made = memoryview(data), hashlib.sha1(), None

    def out(piece):
        checksum.update(piece)
        return piece

    yield out(data[:8] + struct.pack(">I", plan.count))
    last, entries_end = HEADER, HEADER
    for offset, size, name, kept in plan.edits:
        yield out(whole[last:offset])
        entries_end += offset - last
        if kept:
            made = entries() if made is None else made
            entry = _entry(name, *made[name.decode("utf-8", "surrogateescape")])
            yield out(entry)
            entries_end += len(entry)
        last = offset + size
    yield out(whole[last:plan.end])
    entries_end += plan.end - last
    headers = b""
    for sig, body in plan.extensions:
        if sig == TREE:
            body = _outdated(body, plan.folders)
        elif sig not in KEPT:
            continue  # optional (an upper-case signature): git rebuilds it when it wants it
        yield out(sig + struct.pack(">I", len(body)) + body)
        headers += sig + struct.pack(">I", len(body))
    yield out(END_OF_ENTRIES + struct.pack(">II", 24, entries_end) + hashlib.sha1(headers).digest())
    yield checksum.digest()


def _encode(path: str) -> bytes:
    return path.encode("utf-8", "surrogateescape")


def _extensions(data: bytes) -> tuple[int, list[tuple[bytes, bytes]]]:
    """Where the entries end (from EOIE) and each extension's (signature, data)."""
    eoie = len(data) - 20 - 32
    if eoie < HEADER or data[eoie:eoie + 4] != END_OF_ENTRIES or data[eoie + 4:eoie + 8] != struct.pack(">I", 24):
        raise Unsupported("no end-of-entries extension: git writes the index this time")
    end = struct.unpack(">I", data[eoie + 8:eoie + 12])[0]
    if not HEADER <= end <= eoie or (end - HEADER) % 8:
        raise Unsupported("the end-of-entries offset is out of place")
    found, headers, at = [], b"", end
    while at < eoie:
        sig, size = data[at:at + 4], struct.unpack(">I", data[at + 4:at + 8])[0]
        if not b"A" <= sig[:1] <= b"Z":
            raise Unsupported(f"an extension git requires readers to know: {sig!r}")
        found.append((sig, data[at + 8:at + 8 + size]))
        headers += data[at:at + 8]
        at += 8 + size
    if at != eoie or hashlib.sha1(headers).digest() != data[eoie + 12:eoie + 32]:
        raise Unsupported("the extensions do not match their end-of-entries record")
    return end, found


def _entry_at(data: bytes, offset: int, end: int) -> tuple[bytes, int] | None:
    """(path, size) of a well-formed stage-0 entry starting at `offset`, or None if none starts there."""
    if offset < HEADER or (offset - HEADER) % 8 or offset + FIXED > end:
        return None
    flags = struct.unpack(">H", data[offset + 60:offset + 62])[0]
    nul = data.find(b"\0", offset + FIXED, end)
    if nul < 0:
        return None
    name = data[offset + FIXED:nul]
    size = (FIXED + len(name) + 8) & ~7
    if (flags & 0xFFF) != min(len(name), 0xFFF) or offset + size > end or data[nul:offset + size].strip(b"\0"):
        return None
    if struct.unpack(">I", data[offset + 24:offset + 28])[0] not in _MODES:
        return None
    if flags & 0xF000:
        raise Unsupported(f"{name!r} is flagged (assume-unchanged, or a conflict)")
    return name, size


def _find(data, end: int, name: bytes) -> tuple[int, int]:
    """(offset, size) of `name`'s entry, or (offset where it would go, 0). Its folder's first entry is found
    by its bytes; from there the entry itself (a file changed), and failing that the folder's entries are
    walked to where it goes (a new file: a subfolder of memories/ holds a few hundred). The file is never
    walked whole."""
    folder = name[:name.rfind(b"/") + 1]
    if not folder:
        raise Unsupported("a file at the top of the vault")
    first = _entry_starting(data, folder, HEADER, end)
    if first is None:
        raise Unsupported("a folder git's index does not list yet")
    found = _entry_starting(data, name + b"\0", first[0], end)
    if found is not None:
        return found
    offset = first[0]
    for _ in range(MAX_WALK):
        if offset >= end:
            return offset, 0
        entry = _entry_at(data, offset, end)
        if entry is None:
            raise Unsupported("an entry that is not a plain stage-0 one")
        path, size = entry
        if path == name:
            raise Unsupported(f"{name!r} is in git's index in another form")
        if not path.startswith(folder) or path > name:
            return offset, 0
        offset += size
    raise Unsupported("a new file in a folder too large to walk")


def _entry_starting(data, prefix: bytes, start: int, end: int) -> tuple[int, int] | None:
    """(offset, size) of the first entry from `start` whose path begins with `prefix`, found by the bytes and
    checked to be an entry's own start (not bytes inside an id or another path)."""
    at = data.find(prefix, start + FIXED, end)
    while at >= 0:
        entry = _entry_at(data, at - FIXED, end)
        if entry is not None:
            return at - FIXED, entry[1]
        at = data.find(prefix, at + 1, end)
    return None


def _entry(name: bytes, info: os.stat_result, blob: bytes) -> bytes:
    """A regular file's entry: the stat data git compares to notice a change, the blob id, the path."""
    if len(blob) != 20 or not st.S_ISREG(info.st_mode):
        raise Unsupported("not a regular file in a SHA-1 repository")
    mode = 0o100755 if info.st_mode & 0o100 else 0o100644

    def split(ns: int) -> tuple[int, int]:
        return (ns // 1_000_000_000) & 0xFFFFFFFF, ns % 1_000_000_000

    fields = (*split(info.st_ctime_ns), *split(info.st_mtime_ns), info.st_dev & 0xFFFFFFFF,
              info.st_ino & 0xFFFFFFFF, mode, info.st_uid & 0xFFFFFFFF, info.st_gid & 0xFFFFFFFF,
              info.st_size & 0xFFFFFFFF)
    head = struct.pack(">10I", *fields) + blob + struct.pack(">H", min(len(name), 0xFFF))
    size = (FIXED + len(name) + 8) & ~7
    return head + name + b"\0" * (size - FIXED - len(name))


def _outdated(tree: bytes, folders: set[bytes]) -> bytes:
    """The TREE extension with the entries of `folders` marked out of date (entry count -1, no id), as git
    marks a folder whose files changed: git recomputes those trees when it next writes one."""
    out, at = bytearray(), 0

    def node(parent: bytes | None) -> None:
        nonlocal at
        nul = tree.index(b"\0", at)
        name = tree[at:nul]
        eol = tree.index(b"\n", nul)
        entries, subtrees = tree[nul + 1:eol].split(b" ")
        valid = int(entries) >= 0
        full = b"" if parent is None else parent + b"/" + name if parent else name
        after = eol + 1 + (20 if valid else 0)
        if full in folders:
            out.extend(name + b"\0-1 " + subtrees + b"\n")
        else:
            out.extend(tree[at:after])
        at = after
        for _ in range(int(subtrees)):
            node(full)

    if tree:
        node(None)
    if at != len(tree):
        raise Unsupported("a tree cache git would not write")
    return bytes(out)
