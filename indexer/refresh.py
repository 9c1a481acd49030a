"""Bringing every derived store (index, vectors) up to the files: after writes and on reindex.

Embedding happens here, off the prompt path: a memory not yet embedded is
still found by keywords.
"""

from __future__ import annotations

from pathlib import Path

from .index import Index, SyncReport
from .schema import ALIAS_SEPARATOR


def refresh_all(root: Path, progress=None, embedder="default", rebuild: bool = False) -> SyncReport:
    """Sync the index (incrementally, or from scratch with `rebuild`) and then the vectors."""
    index = Index(root)
    report = index.rebuild(progress) if rebuild else index.sync(progress)
    if embedder == "default":
        from .config import embedder_choice

        embedder = None
        if embedder_choice() != "none":
            from .embed import default_embedder

            embedder = default_embedder()
    if embedder is not None:
        sync_vectors(index, embedder, progress, rebuild)
    return report


def rebuild_all(root: Path, progress=None, embedder="default") -> SyncReport:
    return refresh_all(root, progress, embedder, rebuild=True)


def sync_vectors(index: Index, embedder, progress=None, rebuild: bool = False) -> tuple[int, int]:
    """Embed what is new or changed since the last sync; returns (embedded, removed)."""
    from hafiza.vault.model import content_hash

    from .vectors import VectorStore, embedding_texts

    store = VectorStore(index.sidecar)
    if not rebuild:
        store.load(embedder.name, embedder.version, embedder.dim)
    items = []
    for doc in index.documents():
        aliases, tags = _split(doc.get("aliases"), ALIAS_SEPARATOR), _split(doc.get("tags"), ",")
        texts = embedding_texts(doc["title"], aliases, tags, doc.get("snippet") or "")
        items.append((doc["id"], content_hash("\x1e".join(texts)), texts))
    bar = (lambda done, total: progress(done, total, "embedding")) if progress else None
    return store.sync(embedder, items, bar)


def _split(value: str | None, sep: str) -> list[str]:
    return [part.strip() for part in (value or "").split(sep) if part.strip()]
