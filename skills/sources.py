"""Where each client keeps its transcripts, and which transcript files there are.

The edges (the command line, the warm process) pass their environment in; nothing here reads it.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Mapping

from .transcripts import CLIENTS


def locations(environ: Mapping[str, str], home: Path | None = None) -> dict[str, Path]:
    """Each client's transcript folder (opencode: its database), as the client itself resolves it."""
    home = Path(environ.get("HOME") or home or Path.home())
    data = Path(environ.get("XDG_DATA_HOME") or home / ".local" / "share")
    return {
        "claude-code": Path(environ.get("CLAUDE_CONFIG_DIR") or home / ".claude") / "projects",
        "codex": Path(environ.get("CODEX_HOME") or home / ".codex") / "sessions",
        "gemini": Path(environ.get("GEMINI_CLI_HOME") or home) / ".gemini" / "tmp",
        "opencode": data / "opencode" / "opencode.db",
    }


PATTERNS = {"claude-code": "*/*.jsonl", "codex": "*/*/*/rollout-*.jsonl", "gemini": "*/chats/session-*.jsonl"}


def files(where: dict[str, Path], client: str | None = None, since: dt.date | None = None) -> list[tuple[str, Path]]:
    """(client, path) for every transcript under `where`, oldest first; `since`: changed on or after."""
    found = []
    for name in CLIENTS if client is None else (client,):
        root = where.get(name)
        if root is None:
            continue
        paths = [root] if name == "opencode" else sorted(root.glob(PATTERNS[name])) if root.is_dir() else []
        for path in paths:
            try:
                st = path.stat()
            except OSError:
                continue
            if path.is_file() and (since is None or dt.date.fromtimestamp(st.st_mtime) >= since):
                found.append((st.st_mtime, name, path))
    return [(name, path) for _, name, path in sorted(found)]


def client_of(path: Path, where: dict[str, Path]) -> str | None:
    """Which client wrote `path` (a transcript a hook named), by where it lies or its name."""
    for name, root in where.items():
        if path == root or root in path.parents:
            return name
    if path.name.startswith("rollout-"):
        return "codex"
    if path.name.startswith("session-") and path.parent.name == "chats":
        return "gemini"
    if path.suffix == ".jsonl":
        return "claude-code"
    return None
