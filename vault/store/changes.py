"""What hafiza wrote into memories/, so a reader brings its index up to date without looking at every file.

Every write transaction appends one line to `.hafiza/changes` while it still holds the writer lock: the
memory files its commits touched, and the folder's mtime once it was done. A reader that last matched the
files at (folder mtime, log position) finds the folder moved, reads the lines past its position, and if
the last line's mtime is the folder's mtime now, hafiza's own writes are all that happened: it applies just
those files. Anything else (a file created, renamed or deleted by hand, a `git pull`, a write killed
between its rename and its line) leaves the folder at an mtime no line names, and the reader falls back
to comparing every file. An edit made in place by an editor does not move the folder: the warm process's
full sync and the next write's record of hand edits pick it up.

The log is rewritten from empty once it passes LIMIT bytes; a reader holding a position in the old one
sees another inode and compares every file once. Stdlib only: the cold hook reads it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from hafiza.vault.files import append_lines, atomic_write
from hafiza.vault.format.layout import is_memory_rel, shard_stats
from hafiza.vault.format.paths import FACTS, MEMORIES, SIDECAR

LOG = "changes"
LIMIT = 1 << 20  # ~10,000 writes


class Position:
    """Where a reader is in the log: (inode, byte offset), and the memories/ folder's mtime it matched."""

    __slots__ = ("inode", "offset", "folder")

    def __init__(self, inode: int | None, offset: int, folder: int | None):
        self.inode, self.offset, self.folder = inode, offset, folder

    def to_json(self) -> list:
        return [self.inode, self.offset, self.folder]

    @classmethod
    def from_json(cls, value) -> "Position | None":
        try:
            inode, offset, folder = value
            return cls(inode, int(offset), folder)
        except (TypeError, ValueError):
            return None

    def __eq__(self, other) -> bool:
        return isinstance(other, Position) and self.to_json() == other.to_json()

    def __repr__(self) -> str:
        return f"Position{tuple(self.to_json())}"


def folder_mtime(root: Path) -> int | str | None:
    """memories/'s mtime (and its subfolders' newest, in a large vault: vault/format/layout.py); with a facts/
    folder, its mtime too (fact notes are indexed too: vault/facts.py)."""
    folder = Path(root) / MEMORIES
    try:
        stamp: int | str = os.stat(folder).st_mtime_ns
    except FileNotFoundError:
        return None
    subfolders = shard_stats(folder)
    if subfolders:
        stamp = f"{stamp}+{len(subfolders)}@{max(info.st_mtime_ns for _, info in subfolders)}"
    try:
        return f"{stamp}/{os.stat(Path(root) / FACTS).st_mtime_ns}"
    except FileNotFoundError:
        return stamp


def name_of(rel: str) -> str | None:
    """The name the index knows a vault file by: `x.md` for memories/x.md (`3f/x.md` for memories/3f/x.md),
    `facts/y.md` for a fact note; None for a file it does not index."""
    head, _, rest = rel.partition("/")
    if head == MEMORIES and is_memory_rel(rest):
        return rest
    if head == FACTS and rest.endswith(".md") and "/" not in rest:
        return rel
    return None


def now(root: Path) -> Position:
    """The log's end and the folder's mtime as they are now."""
    try:
        st = os.stat(Path(root) / SIDECAR / LOG)
        inode, size = st.st_ino, st.st_size
    except FileNotFoundError:
        inode, size = None, 0
    return Position(inode, size, folder_mtime(root))


def record(root: Path, names, named=()) -> None:
    """Log that hafiza wrote `names` (file names in memories/, `facts/<name>` for fact notes); call under the
    writer lock, after the writes. `named`: those of them hafiza wrote as the memory their name says, whose
    header a writer taking an id then need not read (Index.misnamed)."""
    names = sorted(set(names))
    if not names:
        return
    path = Path(root) / SIDECAR / LOG
    named = sorted(set(named) & set(names))
    # Among the names, as an object a reader of an earlier version skips (it keeps only strings): a line of
    # three items sent it to compare every file, on every write.
    written = names + ([{"named": named}] if named else [])
    line = json.dumps([folder_mtime(root), written], ensure_ascii=False) + "\n"
    try:
        if path.stat().st_size > LIMIT:
            atomic_write(path, line, fsync=False)  # a new inode: readers positioned in the old log rescan once
            return
    except FileNotFoundError:
        pass
    append_lines(path, line)


def since(root: Path, start: Position, end: Position) -> set[str] | None:
    """The file names hafiza wrote between two positions, if its writes explain every change to the
    folder between them; None when something else moved it (then compare every file)."""
    found = written_since(root, start, end)
    return None if found is None else found[0]


def written_since(root: Path, start: Position, end: Position) -> tuple[set[str], set[str]] | None:
    """`since`, and of those names the ones whose last write was of the memory the name says (`record`)."""
    if start.inode != end.inode or start.offset > end.offset:
        return None
    if end.offset == start.offset:
        return (set(), set()) if start.folder == end.folder else None
    try:
        with open(Path(root) / SIDECAR / LOG, "rb") as f:
            if os.fstat(f.fileno()).st_ino != end.inode:
                return None
            f.seek(start.offset)
            data = f.read(end.offset - start.offset)
    except OSError:
        return None
    names: set[str] = set()
    named: set[str] = set()
    folder = start.folder
    for line in data.split(b"\n"):
        if not line:
            continue
        try:
            folder, written = json.loads(line)
            own = {n for item in written if isinstance(item, dict) for n in item.get("named", ())}
        except (ValueError, TypeError, AttributeError):
            return None
        for name in written:
            if isinstance(name, str):
                names.add(name)
                (named.add if name in own else named.discard)(name)
    return (names, named) if folder == end.folder else None
