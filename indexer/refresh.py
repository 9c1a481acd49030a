"""Bringing every derived store (index, vectors) up to the files, after writes and on reindex."""

from __future__ import annotations

from pathlib import Path

from .index import Index, SyncReport


def refresh_all(root: Path, progress=None) -> SyncReport:
    """Incremental: only what changed is re-indexed (and re-embedded)."""
    return Index(root).sync(progress)


def rebuild_all(root: Path, progress=None) -> SyncReport:
    """From scratch: the index and the vectors are rebuilt from the files."""
    return Index(root).rebuild(progress)
