"""Reads the transcripts of ended sessions into the conversation index, away from every prompt.

A session's end only appends a line to .hafiza/spool.jsonl (its hook has 1.5 s, shared). The warm
process notices the spool grew when it is idle and starts this as a detached, low-priority process
(`python -m hafiza.hooks.ingest VAULT`), so a long transcript never holds a prompt's recall.
opencode 1.18 tells a plugin of no session end (tests/e2e/test_opencode.py), so its database
counts too: when it changed, at most once a minute.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import time
from pathlib import Path

from hafiza.vault.format.paths import SIDECAR

from .session import SPOOL

OPENCODE_EVERY = 60.0  # seconds between readers started only because opencode's database moved
CAPTURE_DAYS = 2  # the background reader proposes memories from sessions whose last turn is this recent


def spool_size(root: Path) -> int:
    try:
        return (Path(root) / SIDECAR / SPOOL).stat().st_size
    except OSError:
        return 0


def behind(root: Path, size: int) -> bool:
    """Whether the spool holds lines no reader has taken yet (asked once, when a warm process starts)."""
    import json

    from hafiza.skills.conversations import FOLDER

    try:
        state = json.loads((Path(root) / SIDECAR / FOLDER / "state.json").read_text(encoding="utf-8"))
        return size > int(state.get("spool", 0))
    except (OSError, ValueError, TypeError, AttributeError):
        return size > 0


def _mtime(path: Path | None) -> int | None:
    try:
        return os.stat(path).st_mtime_ns if path else None
    except OSError:
        return None


class Watch:
    """What the warm process looks at in a quiet moment: the spool's size and opencode's database (and
    its write-ahead log). `due()` says whether to start a reader now."""

    def __init__(self, root: Path, opencode: Path | None):
        self.root, self.opencode = Path(root), opencode
        self.spooled: int | None = None
        self.opencode_seen: tuple | None = None
        self.last_start = -OPENCODE_EVERY

    def _opencode_stamp(self) -> tuple | None:
        if self.opencode is None:
            return None
        return _mtime(self.opencode), _mtime(self.opencode.with_name(self.opencode.name + "-wal"))

    def due(self) -> bool:
        size, stamp = spool_size(self.root), self._opencode_stamp()
        first = self.spooled is None
        spool = size != self.spooled and (not first or behind(self.root, size))
        moved = stamp != self.opencode_seen and stamp is not None and stamp[0] is not None
        waited = time.monotonic() - self.last_start >= OPENCODE_EVERY
        self.spooled = size
        if moved and (waited or spool):
            self.opencode_seen = stamp
        return spool or (moved and waited)

    def started(self) -> None:
        self.last_start = time.monotonic()


def start(root: Path) -> None:
    """Start the reader detached; it exits when the spool is read (a second one waits for the lock)."""
    devnull = subprocess.DEVNULL
    subprocess.Popen([sys.executable, "-m", "hafiza.hooks.ingest", str(root)], stdin=devnull, stdout=devnull,
                     stderr=devnull, start_new_session=True, cwd=str(root))


def main(argv: list[str]) -> int:
    from hafiza.skills import sources
    from hafiza.skills.conversations import Conversations
    from hafiza.vault.format.text import plural

    from .hafiza_hook import log

    root = Path(argv[0]).resolve()
    try:
        os.nice(10)
    except OSError:
        pass
    try:
        conversations = Conversations(root)
        report = conversations.drain(root / SIDECAR / SPOOL, sources.locations(os.environ))
        if report.turns:
            log(root, f"sessions: {plural(report.turns, 'turn')} from {plural(report.files, 'transcript')} "
                      "indexed")
            _capture(root, conversations)
    except Exception as exc:  # a background reader: it logs and leaves the spool for the next run
        log(root, f"sessions: reading transcripts failed: {type(exc).__name__}: {exc}")
    return 0


def _capture(root: Path, conversations) -> None:
    """Propose what the user said in so many words in the sessions just read (the inbox; no model)."""
    from hafiza.indexer.vaults import open_recall
    from hafiza.indexer.refresh import writable
    from hafiza.skills.capture import file_sessions
    from hafiza.vault.format.text import plural

    from .hafiza_hook import log

    vault = writable(root, "capture").require()
    recall, _ = open_recall(root, "keyword")
    # Sessions of the last days only: the first read of a client's history (opencode's database holds all of
    # it) would otherwise fill the inbox with months of old statements. `hafiza inbox file --since` files those.
    since = dt.date.today() - dt.timedelta(days=CAPTURE_DAYS)
    count, report = file_sessions(vault, conversations, since=since, recall=recall,
                                  only=sorted(conversations.touched))
    if report.proposed or report.used:
        log(root, f"capture: {len(report.proposed)} proposed from {plural(count, 'session')} on "
                  f"{report.branch}; "
                  f"{plural(len(report.used), 'restated memory')} marked used")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
