"""git's index brought level with a commit for a few paths, without git reading and rewriting all of it.

After a commit of a few files (vault/git.py, `_commit_files`), git's index must list their new
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

HEADER = 12
FIXED = 62  # bytes of an entry before its path: 10 stat fields, a 20-byte id, 2 bytes of flags
END_OF_ENTRIES = b"EOIE"
TREE = b"TREE"
KEPT = (b"REUC",)  # optional extensions that stay valid whatever entries change
STAMP = "hafiza-index"  # in .git/: which index file this module wrote last (its checksum is known good)
LOCK_WAIT = 2.0  # seconds
MAX_PATHS = 64  # each is found by a search of the index: an import's thousands are left to git
MAX_WALK = 5_000  # entries of a folder walked to find a path (a sharded folder holds a few hundred)
_MODES = {0o100644, 0o100755, 0o120000, 0o160000}


class Unsupported(Exception):
    """This index, or this change to it, is one to leave to git itself."""


def level(git_dir: Path, changes: dict[str, tuple[os.stat_result, bytes] | None]) -> None:
    """Set the entry of each path in `changes` to (its file's stat, taken before its blob was made; its raw
    blob id), or remove it (None): `prepare`, then publish and release at once."""
    staged = prepare(git_dir, changes)
    staged.publish()
    staged.release()


def prepare(git_dir: Path, changes: dict[str, tuple[os.stat_result, bytes] | None]) -> "Staged":
    """The new index for `changes` written whole to git's own lock file, .git/index.lock, and held there:
    `Staged.publish` makes it the index (one atomic replacement), `Staged.abandon` drops it. Raises
    Unsupported, having written nothing, where git itself must do it; FileExistsError when another git
    process holds the index longer than LOCK_WAIT."""
    import mmap

    if len(changes) > MAX_PATHS:
        raise Unsupported("many paths: git updates them all in one pass over the index")
    staged = Staged(git_dir)
    fd = _take(staged.lock)
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
        for piece in _spliced(staged.data, changes, checked=ours):
            view = memoryview(piece)
            while view:
                view = view[os.write(fd, view):]
            del view, piece
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
        self.data = None

    def publish(self) -> None:
        """The new index in place of the old, in one rename."""
        os.replace(self.lock, self.index)

    def release(self) -> None:
        """Let go of the old index (its pages are freed now, ~10 ms for a 13 MB one: the caller may overlap
        this with its next git process) and note which file this module wrote."""
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


def _take(lock: Path) -> int:
    """git's lock on its index, waiting up to LOCK_WAIT seconds for another git process to let go of it (an
    editor's git integration runs `git status` often, and that writes the index); FileExistsError after."""
    import time

    deadline = time.monotonic() + LOCK_WAIT
    while True:
        try:
            return os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        except FileExistsError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _stamp(info: os.stat_result) -> str:
    """What tells the index file this module last wrote from any other: git writes a new file (a new
    inode) each time it writes the index."""
    return f"{info.st_ino} {info.st_size} {info.st_mtime_ns}"


def _spliced(data, changes: dict[str, tuple[os.stat_result, bytes] | None], checked: bool = False) -> list:
    """The index `data` (bytes, or a map of the file) with `changes` applied: the new file's pieces, in
    order, the unchanged runs of entries as views of `data`. Its checksum is verified first unless
    `checked` (this module wrote that very file, and computed it)."""
    whole = memoryview(data)
    if len(data) < HEADER + 20 or data[:4] != b"DIRC" or struct.unpack(">I", data[4:8])[0] != 2:
        raise Unsupported("not a version 2 index")
    if not checked and hashlib.sha1(whole[:-20]).digest() != data[-20:]:
        raise Unsupported("the index's checksum does not match: git will say what is wrong")
    count = struct.unpack(">I", data[8:12])[0]
    end, extensions = _extensions(data)
    edits = []  # (offset, bytes of the old entry cut there, new entry), applied in offset order
    for path in sorted(changes, key=_encode):
        name = _encode(path)
        offset, size = _find(data, end, name)
        change = changes[path]
        if change is None:
            if size:
                edits.append((offset, size, b"", name))
                count -= 1
            continue
        edits.append((offset, size, _entry(name, *change), name))
        count += not size
    edits.sort(key=lambda e: (e[0], e[3]))
    pieces, last = [data[:8], struct.pack(">I", count)], HEADER
    for offset, size, entry, _ in edits:
        pieces += [whole[last:offset], entry]
        last = offset + size
    pieces.append(whole[last:end])
    entries_end = sum(map(len, pieces))
    folders = {b"/".join(_encode(p).split(b"/")[:n]) for p in changes for n in range(p.count("/") + 1)}
    headers = b""
    for sig, body in extensions:
        if sig == TREE:
            body = _outdated(body, folders)
        elif sig not in KEPT:
            continue  # optional (an upper-case signature): git rebuilds it when it wants it
        pieces += [sig + struct.pack(">I", len(body)), body]
        headers += sig + struct.pack(">I", len(body))
    pieces.append(END_OF_ENTRIES + struct.pack(">II", 24, entries_end) + hashlib.sha1(headers).digest())
    checksum = hashlib.sha1()
    for piece in pieces:
        checksum.update(piece)
    return [*pieces, checksum.digest()]


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
