"""Reads the transcripts of ended sessions into the conversation index, away from every prompt.

A session's end only appends a line to .hafiza/spool.jsonl (its hook has 1.5 s, shared). The warm
process notices the spool grew when it is idle and starts this as a detached, low-priority process
(`python -m hafiza.hooks.ingest VAULT`), so a long transcript never holds a prompt's recall.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hafiza.vault.paths import SIDECAR

from .session import SPOOL


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


def start(root: Path) -> None:
    """Start the reader detached; it exits when the spool is read (a second one waits for the lock)."""
    devnull = subprocess.DEVNULL
    subprocess.Popen([sys.executable, "-m", "hafiza.hooks.ingest", str(root)], stdin=devnull, stdout=devnull,
                     stderr=devnull, start_new_session=True, cwd=str(root))


def main(argv: list[str]) -> int:
    from hafiza.skills import sources
    from hafiza.skills.conversations import Conversations

    from .hafiza_hook import log

    root = Path(argv[0]).resolve()
    try:
        os.nice(10)
    except OSError:
        pass
    try:
        report = Conversations(root).drain(root / SIDECAR / SPOOL, sources.locations(os.environ))
        if report.turns:
            log(root, f"sessions: {report.turns} turns from {report.files} transcripts indexed")
    except Exception as exc:  # a background reader: it logs and leaves the spool for the next run
        log(root, f"sessions: reading transcripts failed: {type(exc).__name__}: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
