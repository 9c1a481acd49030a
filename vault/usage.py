"""The usage log: impressions and uses appended under .hafiza/, folded into files in batches.

Recording a use must not cost a commit per prompt, so events go to an
append-only tab-separated log and `fold` writes the counts into frontmatter
in one commit. Readers add the pending counts to the folded ones.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from pathlib import Path

from .files import append_lines

LOG = "usage.log"
FOLDING = "usage.folding"  # the log being folded; read too, so no event is lost in between
EVENTS = ("shown", "used")


@dataclass
class Pending:
    shown: int = 0
    used: int = 0
    last_used: dt.date | None = None


def append(sidecar: Path, event: str, ids, session: str | None = None) -> None:
    """Append one line per id; O_APPEND keeps concurrent small writes whole."""
    if event not in EVENTS:
        raise ValueError(f"unknown usage event {event!r}")
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


def pending(sidecar: Path, names=(FOLDING, LOG)) -> dict[str, Pending]:
    """Counts per memory id that are in the log but not yet in the files."""
    out: dict[str, Pending] = {}
    for line in _lines(sidecar, names):
        parts = line.rstrip("\n").split("\t")
        if len(parts) < 3 or parts[1] not in EVENTS:
            continue
        entry = out.setdefault(parts[2], Pending())
        if parts[1] == "shown":
            entry.shown += 1
        else:
            entry.used += 1
            day = parts[0][:10]
            if entry.last_used is None or day > entry.last_used.isoformat():
                try:
                    entry.last_used = dt.date.fromisoformat(day)
                except ValueError:
                    pass
    return out


def oldest(sidecar: Path) -> dt.datetime | None:
    """Time of the first unfolded event, or None when the log is empty."""
    for line in _lines(sidecar):
        try:
            return dt.datetime.fromisoformat(line.split("\t", 1)[0])
        except ValueError:
            continue
    return None


def begin_fold(sidecar: Path) -> dict[str, Pending]:
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
