"""The usage log: impressions and uses appended under .hafiza/, folded into files in batches.

Recording a use must not cost a commit per prompt, so events go to an
append-only tab-separated log and `fold` writes the counts into frontmatter
in one commit. Readers add the pending counts to the folded ones.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from hafiza.vault.errors import HafizaError
from hafiza.vault.files import append_lines

LOG = "usage.log"
FOLDING = "usage.folding"  # the log being folded; read too, so no event is lost in between
EVENTS = ("shown", "used")


class Counts:
    """Usage counts of one memory: those still in the log, or the total with a file's (`total`).
    A plain class: dataclasses costs the hook ~7 ms to import."""

    __slots__ = ("shown", "used", "last_used")

    def __init__(self, shown: int = 0, used: int = 0, last_used: dt.date | None = None):
        self.shown, self.used, self.last_used = shown, used, last_used


def total(shown: int, used: int, last_used: dt.date | None, waiting: Counts | None) -> Counts:
    """Folded counts (from a memory's file or its index entry) with those `waiting` in the log added:
    what readers show and rank by, and what a fold writes."""
    if waiting is None:
        return Counts(shown, used, last_used)
    return Counts(shown + waiting.shown, used + waiting.used,
                  max(filter(None, [last_used, waiting.last_used]), default=None))


def append(sidecar: Path, event: str, ids, session: str | None = None) -> None:
    """Append one line per id; O_APPEND keeps concurrent small writes whole."""
    if event not in EVENTS:
        raise HafizaError(f"unknown usage event {event!r}", field="event")
    ids = [i for i in ids if i]
    if not ids:
        return
    stamp = dt.datetime.now().isoformat(timespec="seconds")
    lines = "".join(f"{stamp}\t{event}\t{i}\t{session or ''}\n" for i in ids)
    append_lines(sidecar / LOG, lines)


def _lines(sidecar: Path, names=(FOLDING, LOG)):
    for name in names:
        try:
            with open(sidecar / name, encoding="utf-8", errors="replace") as fh:
                yield from fh
        except FileNotFoundError:
            continue


def pending(sidecar: Path, names=(FOLDING, LOG)) -> dict[str, Counts]:
    """Counts per memory id that are in the log but not yet in the files."""
    out: dict[str, Counts] = {}
    for line in _lines(sidecar, names):
        _count(out, line)
    return out


def unfolded(sidecar: Path) -> Counts:
    """The impressions and uses still in the log, summed over every memory (no last_used): stats, doctor."""
    counts = pending(sidecar).values()
    return Counts(sum(c.shown for c in counts), sum(c.used for c in counts))


def _count(out: dict[str, Counts], line: str) -> None:
    parts = line.rstrip("\n").split("\t")
    if len(parts) < 3 or parts[1] not in EVENTS:
        return
    entry = out.setdefault(parts[2], Counts())
    if parts[1] == "shown":
        entry.shown += 1
        return
    entry.used += 1
    day = parts[0][:10]
    if entry.last_used is None or day > entry.last_used.isoformat():
        try:
            entry.last_used = dt.date.fromisoformat(day)
        except ValueError:
            pass


class PendingReader:
    """`pending()` for a long-lived process: reads only what was appended since the last call.

    Every prompt appends impressions, and parsing the whole log each time grows
    with it (25 ms at 40,000 lines); a fold moves the log aside, which starts over.
    """

    def __init__(self, sidecar: Path):
        self.sidecar = sidecar
        self._key = None
        self._offset = 0
        self._counts: dict[str, Counts] = {}

    def read(self) -> dict[str, Counts]:
        key = tuple(_identity(self.sidecar / name) for name in (FOLDING, LOG))
        log = key[1] or (None, 0, b"")
        seen = (self._key or (None, None))[1] or (None, 0, b"")
        if self._key is None or key[0] != self._key[0] or (log[0], log[2]) != (seen[0], seen[2]) \
                or log[1] < self._offset:
            self._counts = pending(self.sidecar, names=(FOLDING,))
            self._offset = 0
        if key[1] and key[1][1] > self._offset:
            with open(self.sidecar / LOG, "rb") as fh:
                fh.seek(self._offset)
                chunk = fh.read(key[1][1] - self._offset)
            whole = chunk[: chunk.rfind(b"\n") + 1]  # a line still being written waits for the next read
            for line in whole.decode("utf-8", "replace").splitlines():
                _count(self._counts, line)
            self._offset += len(whole)
        self._key = key
        return self._counts


def _identity(path: Path):
    """(inode, size, first line): a log deleted and written anew differs in its first line's timestamp."""
    try:
        st = os.stat(path)
        with open(path, "rb") as fh:
            head = fh.readline(200)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, head)


def oldest(sidecar: Path) -> dt.datetime | None:
    """Time of the first unfolded event, or None when the log is empty."""
    for line in _lines(sidecar):
        try:
            return dt.datetime.fromisoformat(line.split("\t", 1)[0])
        except ValueError:
            continue
    return None


def begin_fold(sidecar: Path) -> dict[str, Counts]:
    """Move the log aside (under the writer lock) and return what it holds."""
    log, folding = sidecar / LOG, sidecar / FOLDING
    if log.exists() and not folding.exists():
        os.replace(log, folding)
    # Only the folding file: events appended from now on go to a fresh log.
    return pending(sidecar, names=(FOLDING,))


def end_fold(sidecar: Path) -> None:
    """The counts are committed: drop the folded log."""
    try:
        (sidecar / FOLDING).unlink()
    except FileNotFoundError:
        pass


def by_day(sidecar: Path) -> dict[str, Counts]:
    """The impressions and uses still in the log, per day (`YYYY-MM-DD`): what the health screen charts
    beside the counts earlier folds wrote into the files."""
    out: dict[str, Counts] = {}
    for line in _lines(sidecar):
        parts = line.rstrip("\n").split("\t")
        if len(parts) < 3 or parts[1] not in EVENTS:
            continue
        day = out.setdefault(parts[0][:10], Counts())
        if parts[1] == "shown":
            day.shown += 1
        else:
            day.used += 1
    return out


def ids_since(sidecar: Path, event: str = "shown") -> set[str]:
    """The memories the log (not yet folded) holds an `event` of."""
    return {parts[2] for parts in (line.split("\t") for line in _lines(sidecar)) if len(parts) >= 3 and parts[1] == event}
