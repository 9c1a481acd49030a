"""Per-session state (what was injected) and the end-of-session spool. Stdlib only."""

from __future__ import annotations

import json
import re
import zlib
import time
from pathlib import Path

from hafiza.vault.files import append_lines, atomic_write

KEEP_SECONDS = 7 * 24 * 3600
SPOOL = "spool.jsonl"


def _path(sidecar: Path, client: str, session: str) -> Path:
    # Readable and collision-safe: the cleaned id plus a checksum of the raw one (hashlib costs ~3 ms).
    raw = f"{client}\0{session}".encode()
    key = f"{client}-{re.sub(r'[^A-Za-z0-9_-]', '_', session)[:60]}-{zlib.crc32(raw):08x}"
    return sidecar / "sessions" / f"{key}.json"


def seen(sidecar: Path, client: str, session: str) -> set[str]:
    try:
        return set(json.loads(_path(sidecar, client, session).read_text()).get("seen", []))
    except (OSError, ValueError, AttributeError):
        return set()


def add_seen(sidecar: Path, client: str, session: str, ids) -> None:
    path = _path(sidecar, client, session)
    state = sorted(seen(sidecar, client, session) | set(ids))
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    atomic_write(path, json.dumps({"client": client, "session": session, "seen": state}), fsync=False)


def save_text(sidecar: Path, client: str, session: str, name: str, text: str) -> None:
    """Keep a piece of text for the rest of the session (Goose's profile: see entry._emit)."""
    path = _path(sidecar, client, session).with_suffix(f".{name}")
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    atomic_write(path, text, fsync=False)


def load_text(sidecar: Path, client: str, session: str, name: str) -> str:
    try:
        return _path(sidecar, client, session).with_suffix(f".{name}").read_text(encoding="utf-8")
    except OSError:
        return ""


def reset(sidecar: Path, client: str, session: str) -> None:
    """After compaction or /clear the agent no longer has what was injected: allow it again."""
    try:
        _path(sidecar, client, session).unlink()
    except FileNotFoundError:
        pass


def prune(sidecar: Path, now: float | None = None) -> int:
    """Drop session state untouched for a week."""
    cutoff = (now or time.time()) - KEEP_SECONDS
    dropped = 0
    for path in (sidecar / "sessions").glob("*"):
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
                dropped += 1
        except FileNotFoundError:
            continue
    return dropped


def spool(sidecar: Path, event) -> None:
    """Append one line for later transcript processing; nothing else happens at session end."""
    line = json.dumps({"client": event.client, "event": event.kind, "session": event.session,
                       "transcript": event.transcript, "cwd": event.cwd, "source": event.source,
                       "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, ensure_ascii=False) + "\n"
    append_lines(sidecar / SPOOL, line)
