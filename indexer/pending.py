"""Writes not yet indexed, ranked in memory: a fresh process's search right after a write, without Whoosh.

A write leaves its files for the next reader to index (refresh.writable). A fresh `hafiza search` (or cold
hook) that found them committed them to Whoosh first: importing Whoosh and PyYAML, opening a writer and
committing a segment cost it ~190 ms over the same search with the index in step, at 5,000 memories as at
100,000 (bench/scale.py, "search (cold)"), more than the search itself. Such a process now reads the
index's own files (cold.py) and adds in memory what that commit would: the documents it would add, as
one more segment after the others, numbered in its order, and the documents it would delete taken out.
Index.preview walks the very changes the commit walks (Index._file_changes). Document counts, frequencies and
field lengths are then those Whoosh has after that commit (deleted documents still counted, as Whoosh
counts them until a merge), so scores and ties are the same to the bit (bench/cold_identical.py).

Nothing is written: the writes stay in the change log until a process that loads Whoosh anyway indexes
them (the warm process, a writer that embeds, `hafiza list`), or a search finds more than LIMIT files
waiting. A commit that would merge segments (cold.merged) drops deleted documents from the counts and
rounds the merged documents' lengths: a search that meets one commits first, as before.
"""

from __future__ import annotations

from collections import Counter

from hafiza.vault.format.paths import FACT_DOC

from . import cold, impact
from .index import ADD, DROP
from .schema import FIELD_BOOSTS, INDEX_ONLY
from .text import terms

# Files waiting to be indexed that a search ranks in memory; past this it commits them first. Reading one
# and ranking it costs under 1 ms (40 of them: +35 ms at 5,000 memories), a commit ~200 ms (bench/scale.py).
LIMIT = 64
SEGMENT = "pending"  # the id of the in-memory segment


class Segment:
    """The documents a commit would add, as the segment it would write: postings and stored fields."""

    def __init__(self, docs: list[dict], quantized):
        self.stored = Documents(stored_fields(doc) for doc in docs)
        # Per field, each document's terms with their counts: text fields through the index's analyzer, the
        # status and scope fields (Whoosh ID fields) as one term each.
        self.counts = {field: [Counter(terms(doc[field]) if doc.get(field) else ()) for doc in docs]
                       for field in FIELD_BOOSTS}
        self.counts.update({field: [Counter([doc[field]] if doc.get(field) is not None else ()) for doc in docs]
                            for field in impact.MASK_FIELDS})
        self.lengths = {field: [sum(c.values()) for c in self.counts[field]] for field in FIELD_BOOSTS}
        self._quantized = quantized

    def get(self, field: str, word: str) -> impact.Postings | None:
        """What the segment's impact file would hold for (field, word)."""
        docnums, tfs, lengths = [], [], []
        for docnum, counts in enumerate(self.counts.get(field, ())):
            tf = counts.get(word)
            if tf:
                docnums.append(docnum)
                tfs.append(float(tf))
                lengths.append(self._quantized(self.lengths[field][docnum]) or 1 if field in self.lengths else 1)
        return impact.from_pairs(docnums, tfs, lengths) if docnums else None

    def frequency(self, field: str, word: str) -> int:
        return sum(1 for counts in self.counts.get(field, ()) if word in counts)

    def totals(self) -> dict[str, int]:
        return {field: sum(lengths) for field, lengths in self.lengths.items()}

    def values(self) -> dict[str, set[str]]:
        return {field: {word for counts in self.counts[field] for word in counts} for field in impact.MASK_FIELDS}


class Documents(list):
    """Stored fields by document number, read as cold.Stored is."""

    def get(self, docnum: int) -> dict:
        return self[docnum]


def stored_fields(doc: dict) -> dict:
    """What Whoosh stores of the fields given to add_document: each field with a value but the index-only
    ones, a `_stored_<field>` value in place of the field's, by field name."""
    out = {}
    for name in sorted(doc):
        if name.startswith("_") or name in INDEX_ONLY or doc[name] is None:
            continue
        value = doc.get(f"_stored_{name}", doc[name])
        if value is not None:
            out[name] = value
    return out


def overlay(files: cold.Files, preview) -> cold.Files | None:
    """`files` (the generation `preview` was made against) as the commit of `preview`'s changes leaves it;
    None when that commit would also merge segments, or the files are of another generation or an earlier
    version (the commit writes them again)."""
    if files.generation != preview.generation:
        return None
    if not preview.changes:
        return files  # nothing to commit (files touched, not changed)
    if files.merges() or not files.extensible():
        return None
    added: list[dict] = []
    deleted: dict[int, set[int]] = {}
    for change, value in preview.changes:
        if change == DROP:  # as index._drop: a memory's document, or each attribute of a fact note
            _delete(files, value, (lambda doc_id, v=value: doc_id.startswith(f"{v}/")) if value.startswith(FACT_DOC)
                    else value.__eq__, deleted)
        else:
            if change != ADD:  # update_document: first the committed documents of that id
                _delete(files, value["id"], value["id"].__eq__, deleted)
            added.append(value)
    segment = Segment(added, files.quantized)
    leaf = cold.Leaf(SEGMENT, len(added), (), segment, segment.stored) if added else None
    return files.plus(deleted, leaf, segment.totals(), segment.values())


def _delete(files: cold.Files, doc_key: str, matches, into: dict[int, set[int]]) -> None:
    """Add to `into` the documents of `files` whose id `matches`, looked up by their `cold.key` `doc_key`."""
    for k in range(files.segment_count()):
        stored = files.segment(k).stored
        for docnum in stored.holding(cold.key(doc_key)):
            if matches(stored.get(docnum)["id"]):
                into.setdefault(k, set()).add(docnum)
