"""What a vault's .gitignore keeps out of git: hafiza's rebuildable sidecar, and the per-device files an
editor keeps inside the vault.

Many people keep the vault open in Obsidian, which writes its open panes and recent files
(`.obsidian/workspace.json`, `workspace-mobile.json`) on every click and moves deleted notes to `.trash/`.
Committed as "record manual edits", they synced to every machine and changed all day (issue 32). Its
shared settings (`app.json`, `appearance.json`, plugins) may be committed: they are the same everywhere.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

from hafiza.vault.files import atomic_write, read_regular
from .paths import SIDECAR

# The .gitignore's lines, in order. A vault made by an earlier version gets the missing ones at its next write.
LINES = (
    f"{SIDECAR}/",
    "# Obsidian's per-device state (open panes, recent files, caches) and its trash: never synced",
    ".obsidian/workspace*.json",
    ".obsidian/cache",
    ".trash/",
)
DEVICE_PATTERNS = (".obsidian/workspace*.json", ".obsidian/cache", ".obsidian/cache/*", ".trash/*")


def missing(root: Path) -> list[str]:
    """The lines of LINES the vault's .gitignore lacks (comments aside)."""
    try:
        have = set(read_regular(root / ".gitignore").decode("utf-8", "replace").splitlines())
    except FileNotFoundError:
        have = set()
    return [line for line in LINES if not line.startswith("#") and line not in have]


def ensure(root: Path) -> bool:
    """Add what .gitignore lacks, keeping the user's own lines; whether it changed."""
    lacking = missing(root)
    if not lacking:
        return False
    path = root / ".gitignore"
    existing = read_regular(path).decode("utf-8", "replace") if path.exists() else ""
    added = [line for line in LINES if line in lacking or (line.startswith("#") and line not in existing)]
    atomic_write(path, existing + ("\n" if existing and not existing.endswith("\n") else "") + "\n".join(added) + "\n")
    return True


def device_file(rel: str) -> bool:
    """Whether the vault path `rel` is an editor's per-device file that .gitignore keeps out."""
    return any(fnmatch.fnmatchcase(rel, pattern) for pattern in DEVICE_PATTERNS)
