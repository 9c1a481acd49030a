"""Dead paths: a memory names a file or folder of its project that is no longer there.

A path is checked only where this machine can tell: relative paths against
the folder of the memory's `project:` (recorded when hooks or the command
line ran there), absolute paths whose parent folder exists here. Templates
(`<name>`, `{x}`, `*.py`, `$HOME`, `~/`) and paths meant to come and go
(`node_modules`, `dist`, `build`, `/tmp`, `*.log`...) are never flagged: on
a real vault most first-run flags were of that kind. A dead path labels the
memory stale; it never archives it. Where the project's history shows a
rename, the label says to what.
"""

from __future__ import annotations

from pathlib import Path

from hafiza.vault.git import renamed
from hafiza.vault.format.mentions import mentioned
from hafiza.vault.store.projects import folder

from .corpus import Corpus, Entry
from .findings import Finding

def find(corpus: Corpus) -> list[Finding]:
    found = []
    for e in corpus.active:
        root = folder(e.memory.scope, corpus.projects)
        gone = []
        for path in mentioned(e.memory.body):
            where = resolve(path, root)
            if where is not None and not where.exists():
                gone.append((path, root))
        if gone:
            found.append(_finding(e, gone))
    return found


def resolve(path: str, root: Path | None) -> Path | None:
    """Where `path` would be on this machine, or None when this machine cannot tell."""
    if path.startswith("/"):
        where = Path(path)
        return where if where.parent.is_dir() and where.parent != Path("/") else None
    if root is None:
        return None
    return root / path.removeprefix("./")


def _finding(e: Entry, gone: list[tuple[str, Path | None]]) -> Finding:
    details = []
    for path, root in gone:
        moved = renamed(root, path) if root is not None else None
        where = e.memory.scope.removeprefix("project:") if root is not None else "this machine"
        details.append(f"{path} is gone from {where}" + (f" (renamed to {moved[0]} in {moved[1][:10]})" if moved else ""))
    paths = [p for p, _ in gone]
    return Finding(
        "mark-stale", (e.id,), "; ".join(details),
        "missing: " + ", ".join(paths), 0.9, f"mark-stale:{e.id}:{'|'.join(sorted(paths))}",
        guards=("not-a-template", "not-disposable", "location-known"),
        data={"detail": "; ".join(details), "paths": paths})
