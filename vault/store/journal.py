"""Whole or absent: the journal of a write in progress, so an interrupted one is rolled back.

A write lists each path in `.hafiza/journal` before it touches it, and the
content hash it left there after. The commit that ends the write removes the
journal. A journal still there when the next writer takes the lock means a
write died (kill -9, a full disk, a power cut): if its commit landed, the
journal is only cleared; if not, every path it lists goes back to what the
last commit holds, unless someone has edited it since (its hash differs),
in which case it is left for "record manual edits". Without this a killed
import left 2-2,000 files that the next write committed as the user's own.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from hafiza.vault.errors import GitError
from hafiza.vault.files import FILE_MODE, alive, atomic_write, is_regular, read_regular, temp_owner
from hafiza.vault.format.text import plural

JOURNAL = "journal"


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=12).hexdigest()


def _file_digest(path: Path) -> str | None:
    try:
        return digest(read_regular(path, limit=1 << 40))
    except OSError:
        return None


class Journal:
    """The journal file of one vault. `begin` with the HEAD the write starts from; `add` each path
    before it is written and `wrote` after; `end` once the commit has landed."""

    def __init__(self, root: Path, sidecar: Path):
        self.root, self.sidecar = Path(root), Path(sidecar)
        self.path = self.sidecar / JOURNAL
        self.active = False
        self._after: tuple[str, ...] = ()

    def begin(self, head: str | None, after: tuple[str, ...] = ()) -> None:
        """Start a write from commit `head`. `after` names sidecar files to remove once its commit
        lands (the usage log a fold has written into the files)."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        header = {"pid": os.getpid(), "head": head, "time": time.time(), "after": list(after)}
        self._after = tuple(after)
        # Not synced to disk: what a killed process wrote is in the page cache for the next writer, and after
        # a power cut a lost journal leaves the files written, which the next write commits as edits (a
        # synced first line alone, without the paths after it, would not say which files to roll back).
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, FILE_MODE)
        try:
            os.write(fd, (json.dumps(header) + "\n").encode())
        finally:
            os.close(fd)
        self.active = True

    def _append(self, lines: list[str]) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        try:
            os.write(fd, "".join(line + "\n" for line in lines).encode("utf-8", "surrogateescape"))
        finally:
            os.close(fd)

    def add(self, paths) -> None:
        """About to write `paths` (absolute, inside the vault)."""
        self._append([json.dumps([self._rel(p)]) for p in paths])

    def wrote(self, path: Path, data: bytes) -> None:
        """`path` now holds `data`: rolled back only while it still does."""
        self._append([json.dumps([self._rel(path), digest(data)])])

    def end(self, after: tuple[str, ...] | None = None) -> None:
        """The write's commit has landed: remove what was to go with it, then the journal."""
        for name in self._after if after is None else after:
            (self.sidecar / name).unlink(missing_ok=True)
        self.path.unlink(missing_ok=True)
        self.active = False
        self._after = ()

    def rebase(self, head: str) -> None:
        """The write now starts from `head`: a commit of hand edits landed before it went on (vault/store/hand.py, `_spot_check`)."""
        lines = self.path.read_bytes().split(b"\n", 1)
        header = {**json.loads(lines[0]), "head": head}
        atomic_write(self.path, (json.dumps(header) + "\n").encode() + (lines[1] if len(lines) > 1 else b""))

    def abandon(self) -> None:
        """The write was rolled back: its `after` files stay (a fold's log is folded next time)."""
        self.end(after=())

    def _rel(self, path) -> str:
        return str(Path(path).relative_to(self.root))

    def read(self) -> tuple[dict, dict[str, str | None]] | None:
        """(header, {path: hash written or None}) of a journal on disk, or None."""
        try:
            lines = self.path.read_bytes().decode("utf-8", "surrogateescape").splitlines()
            header = json.loads(lines[0])
        except (OSError, ValueError, IndexError):
            return None if not self.path.exists() else ({}, {})
        paths: dict[str, str | None] = {}
        for line in lines[1:]:
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # the line being written when the process died
            if isinstance(entry, list) and entry and isinstance(entry[0], str):
                paths[entry[0]] = entry[1] if len(entry) > 1 else paths.get(entry[0])
        return (header if isinstance(header, dict) else {}), paths


def recover(journal: Journal, git) -> str | None:
    """Finish what an interrupted write left (call under the writer lock); a sentence saying what
    was rolled back, or None when there was nothing to roll back.

    A journaled path that git reports clean is either committed (the write landed) or was never
    touched; only the others are rolled back.
    """
    found = journal.read()
    if found is None:
        return None
    header, paths = found
    try:
        dirty = set(git.changed())
    except GitError:  # `git status` writes too; on a full disk, treat every path as touched (harmless if not)
        dirty = set(paths)
    pending = {rel: written for rel, written in paths.items() if rel in dirty}
    if not pending:
        landed = header.get("head") != git.head()
        journal.end(after=tuple(header.get("after") or ()) if landed else ())
        return None
    restored, removed, kept = rollback(journal.root, git, pending)
    journal.abandon()
    done = ", ".join(part for part in (f"{plural(restored, 'file')} restored" if restored else "",
                                       f"{removed} removed" if removed else "",
                                       f"{kept} kept (edited since)" if kept else "") if part)
    return f"rolled back a write that was interrupted (pid {header.get('pid', '?')}): {done or 'nothing left'}"


def rollback(root: Path, git, paths: dict[str, str | None]) -> tuple[int, int, int]:
    """Put each path back as the last commit holds it (or remove it if the commit has none),
    unless it was changed after hafiza wrote it. Returns (restored, removed, kept)."""
    ours = []
    kept = 0
    for rel, written in paths.items():
        path = root / rel
        now = _file_digest(path) if is_regular(path) else None
        if written is not None and now is not None and now != written:
            kept += 1  # edited since: a person's change, committed as one on the next write
            continue
        ours.append(rel)
    if not ours:
        return 0, 0, kept
    in_head = git.tracked()
    tracked = [rel for rel in ours if rel in in_head]
    removed = 0
    for rel in ours:  # new files first: on a full disk that is what frees the room git needs below
        if rel not in in_head and os.path.lexists(root / rel):
            (root / rel).unlink()
            removed += 1
    git.unstage(ours)
    if tracked:
        git.restore(tracked)
    return len(tracked), removed, kept


def orphan_temp_files(root: Path, folders=("memories", "episodes", ".")) -> list[Path]:
    """atomic_write temp files whose writer is dead: what a kill between write and rename leaves."""
    from hafiza.vault.format.layout import shard_folders

    found = []
    memories = Path(root) / "memories"
    for folder in [Path(root) / f for f in folders] + (shard_folders(memories) if "memories" in folders else []):
        try:
            entries = os.scandir(folder)
        except OSError:
            continue
        with entries:
            for entry in entries:
                pid = temp_owner(entry.name)
                if pid is not None and not alive(pid) and entry.is_file(follow_symlinks=False):
                    found.append(Path(entry.path))
    return found
