"""Recall: the keyword and meaning channels, fused by rank, times decay, usefulness and status."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

from hafiza.vault import usage

from . import rank
from .index import Index
from .search import GATHER, Hit, factors, keyword_channel, query_terms, to_hit

MODES = ("keyword", "meaning", "hybrid")


class Recall:
    """Search one vault. Holds the index (and, when given, an embedder and the vectors)."""

    def __init__(self, root: Path, embedder=None, notice=None):
        self.root = Path(root)
        self.index = Index(self.root, **({"notice": notice} if notice else {}))
        self.embedder = embedder
        self._vectors = None

    def search(self, query: str, *, limit: int = 10, mode: str = "keyword", project: str | None = None,
               all_scopes: bool = False, include_inactive: bool = False, today: dt.date | None = None,
               sync: bool = True) -> list[Hit]:
        """The best `limit` memories for `query`, best first; `hit.parts` explains each score."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        today = today or dt.date.today()
        ix = self.index.open() if sync else (self.index._ix or self.index.open())
        words = query_terms(query)
        with ix.searcher(weighting=_bm25f()) as searcher:
            keyword = keyword_channel(searcher, words, project=project, all_scopes=all_scopes,
                                      include_inactive=include_inactive) if mode != "meaning" else []
            docs = {doc["id"]: doc for doc, _ in keyword}
            pending = usage.pending(self.index.sidecar)
            hits = []
            for position, (doc, bm25) in enumerate(keyword, 1):
                parts = {"keyword_rank": position, "bm25": round(bm25, 4), **factors(doc, pending, today)}
                score = bm25 * parts["strength"] * parts["usefulness"] * parts["type_weight"] * parts["status"]
                hits.append(to_hit(doc, score, parts))
        hits.sort(key=lambda h: (-h.score, h.id))
        return hits[:limit]


def _bm25f():
    from whoosh import scoring

    return scoring.BM25F()


def open_recall(root: Path, mode: str | None = None) -> tuple[Recall, str]:
    """A Recall for `root` and the mode it can serve (hybrid needs an embedder)."""
    return Recall(root), mode or "keyword"
