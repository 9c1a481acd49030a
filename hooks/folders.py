"""The folders `hafiza install` created, recorded so that `uninstall` removes them once they are empty.

A client's config folder (~/.gemini, ~/.claude, a project's .claude/) may be one install made for its one
file. Uninstall deletes that file; a folder goes with it only if this record says install created it (the
same folder: its device and inode are kept with its path) and nothing is in it any more, so a folder that
was there before, or that holds anything, is never removed. The record is one JSON file in hafiza's data
folder, `$XDG_DATA_HOME/hafiza/installed.json`; the folders made to hold it are recorded in it too, and go
when the record empties.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from hafiza.vault.files import atomic_write

RECORD = "installed.json"


def missing(folder: Path) -> list[Path]:
    """`folder` and those of its parents that do not exist, outermost first: what mkdir -p makes."""
    gone = []
    while not folder.exists() and folder != folder.parent:
        gone.append(folder)
        folder = folder.parent
    return gone[::-1]


def _load(record: Path) -> dict:
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"created": {}, "record": []}  # none yet, or unreadable: nothing is known to be hafiza's
    created = data.get("created") if isinstance(data, dict) else None
    own = data.get("record") if isinstance(data, dict) else None
    return {"created": created if isinstance(created, dict) else {}, "record": own if isinstance(own, list) else []}


def _identity(folder: Path) -> list[int] | None:
    try:
        st = os.stat(folder, follow_symlinks=False)
    except OSError:
        return None
    return [st.st_dev, st.st_ino] if stat.S_ISDIR(st.st_mode) else None


def prepare(record: Path) -> None:
    """Make the record's folder before install makes any other, remembering which of its folders were new."""
    made = missing(record.parent)
    if made:
        record.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # hafiza's own, as the vault's
        data = _load(record)
        data["record"] = sorted({*data["record"], *map(str, made)})
        _save(record, data)


def add(record: Path, folders: list[Path]) -> None:
    """Record `folders`, just made by install."""
    data = _load(record)
    for folder in folders:
        identity = _identity(folder)
        if identity:
            data["created"][str(folder)] = identity
    _save(record, data)


def recorded(record: Path) -> set[Path]:
    """The folders install created that are still there and still the same folders (not made again since)."""
    return {Path(path) for path, identity in _load(record)["created"].items() if _identity(Path(path)) == identity}


def emptied(candidates: set[Path], gone: set[Path]) -> list[Path]:
    """Of `candidates` (folders install created, or hafiza's own by name), those that hold nothing once the
    paths in `gone` are deleted, deepest first: the order to remove them in."""
    order, gone = [], set(gone)
    for folder in sorted(candidates, key=lambda p: len(p.parts), reverse=True):
        try:
            entries = {folder / name for name in os.listdir(folder)}
        except OSError:
            continue
        if entries <= gone:
            order.append(folder)
            gone.add(folder)
    return order


def forget(record: Path, removed: list[Path]) -> None:
    """Drop `removed` and folders that are no longer the ones recorded; with nothing left, the record goes, and
    then the folders made for it, if empty."""
    data = _load(record)
    if not data["created"] and not record.exists():
        return
    data["created"] = {path: identity for path, identity in data["created"].items()
                       if Path(path) not in removed and _identity(Path(path)) == identity}
    if data["created"]:
        _save(record, data)
        return
    record.unlink(missing_ok=True)
    for folder in sorted(map(Path, data["record"]), key=lambda p: len(p.parts), reverse=True):
        try:
            folder.rmdir()
        except OSError:
            pass  # not empty (a vault, a team's clone): it stays


def _save(record: Path, data: dict) -> None:
    atomic_write(record, json.dumps(data, indent=2, sort_keys=True) + "\n")
