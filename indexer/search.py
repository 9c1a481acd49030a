"""Keyword recall: BM25F over the index's postings, times strength, usefulness and type weight."""

from __future__ import annotations

import datetime as dt
import math
from bisect import bisect_left, bisect_right
from typing import NamedTuple

from hafiza.vault.store import usage

from . import impact, rank, topk
from .hits import Hit  # noqa: F401  (re-exported: what recall returns)
from .text import prefix, terms
from .schema import CONCEPTS, FIELD_BOOSTS, PREFIXES
from .stopwords import informative

TEXT_FIELDS = tuple(f for f in FIELD_BOOSTS if f not in ("aliases", PREFIXES, CONCEPTS))
EXACT_FIELDS = tuple(f for f in FIELD_BOOSTS if f not in (PREFIXES, CONCEPTS))
SUBJECT_FIELDS = ("title", "tags")  # what a memory is about, as its writer named it
WORD_FIELDS = tuple(f for f in FIELD_BOOSTS if f != CONCEPTS)  # searched for each query word
# How much a word counts as evidence (coverage, the floor's IDF) when a memory holds only another form of it
# (the same first letters, text.prefix): less than the word itself. Issue 34, lever 1.
PREFIX_EVIDENCE = 0.5  # 1.0: tuning recall@2 0.837 against 0.833, held-out chit-chat silence 0.883 against 0.90
# The same for a word that names a concept of the lexicon the memory also names in other words (lexicon.py): in
# full for ranking (0.5 moved nothing on the tuning and held-out sets; 1.0: cross-language recall@2 0.756 -> 0.878),
# but the floor counts it in full only with the meaning channel's support (recall.Floor.concept).
CONCEPT_EVIDENCE = 1.0
GATHER = 50  # candidates per channel: gather wide, cut late
K1, B = 1.2, 0.75  # BM25 parameters (Whoosh's BM25F defaults)
MAX_CACHED_POSTINGS = 4_000_000  # postings read from Whoosh (~10 bytes each) kept by a long-lived View
MAX_CACHED_WORDS = 100_000  # document frequencies kept by a long-lived View (a word and an int each)
# A word no memory holds in any form, of at least this many letters, is read as the word one slip away that memories
# hold (View.spelled): shorter words have too many neighbours to guess from.
TYPO_LETTERS = 5


def query_terms(text: str) -> list[str]:
    """Distinct informative terms of a query, in order."""
    return list(dict.fromkeys(informative(terms(text))))


class View:
    """One open reader on one index generation, and what repeated queries on it reuse.

    The warm process answers every prompt from the same generation until a
    write replaces the index object: stored documents, the id -> document
    number map, the scope masks and each query word's postings are read
    once, not per prompt (fetching the meaning channel's documents alone
    cost ~13 ms a prompt at 5,000). A reader, not a Whoosh searcher: recall
    needs postings, lengths and stored fields only, and whoosh.searching
    costs the cold hook ~11 ms to import.
    """

    def __init__(self, ix, reader=None, dense: bool = False):
        """A view of Whoosh index `ix`, or of `reader` (a cold.Files) when given one. With `dense` (a process
        that has numpy loaded for the meaning channel), keywords are scored with numpy (indexer/dense.py)."""
        self.ix = ix
        self.dense = dense
        self.reader = ix.reader() if reader is None else reader
        self._docs: dict[int, dict] = {}  # read one at a time, until `load_all` makes columns of them all
        self._columns = None
        self._aliases: dict[int, list[frozenset[str]]] = {}
        self._masks: dict[tuple, set[int]] = {}
        self._dense_masks: dict[tuple, object] = {}
        self._postings: dict[tuple[str, str], dict] = {}
        self._terms: dict[tuple[str, str], topk.Term] = {}
        self._cached = 0
        self._frequencies: dict[str, int] = {}
        self._spellings: dict[str, str | None] = {}  # spelled's answers, kept as _frequencies are
        self._leaves: list | None = None  # [(segment reader, first document number, its impact file or None)]
        self._offsets: list[int] = []

    def close(self) -> None:
        self.reader.close()

    def doc(self, docnum: int):
        """Document `docnum`'s stored fields: a dict, or once `load_all` has run a `columns.Row` that reads
        the same."""
        if self._columns is not None:
            return self._columns.row(docnum)
        doc = self._docs.get(docnum)
        if doc is None:
            doc = self._docs[docnum] = self.reader.stored_fields(docnum)
        return doc

    def doc_by_id(self, mem_id: str):
        if self._columns is not None:
            docnum = self._columns.numbers.get(mem_id)
        else:
            docnum = next(iter(self.documents("id", mem_id)), None)
        return None if docnum is None else self.doc(docnum)

    def numbers(self) -> dict[str, int] | None:
        """Each live document's number by its id, once `load_all` has read them; None before."""
        return self._columns.numbers if self._columns is not None else None

    def sources(self):
        """(id, its file's content hash, a function reading its document) of every live document, from the
        columns, so that a check of the vectors reads only the documents whose file changed
        (refresh.embedding_items); None before `load_all`."""
        from functools import partial

        columns = self._columns
        if columns is None:
            return None
        return ((id_, columns.digest(docnum), partial(self.doc, docnum))
                for docnum, id_ in enumerate(columns.ids) if id_ is not None)

    def frequency(self, word: str) -> int:
        """Documents holding `word` in any field (the most of any one field), as Whoosh counts them. Kept:
        looking a word up in every field cost a warm search ~1.5 ms at 100,000 memories, and prompts
        repeat their words."""
        found = self._frequencies.get(word)
        if found is None:
            if len(self._frequencies) >= MAX_CACHED_WORDS:
                self._frequencies.clear()
            found = self._held(word)
            cut = prefix(word) if not found else None  # a form no memory holds: how many hold another
            if cut:
                found = self.reader.doc_frequency(PREFIXES, cut)
            self._frequencies[word] = found
        return found

    def _held(self, word: str) -> int:
        """Documents holding `word` as it is in any exact field (the most of any one field)."""
        return max(self.reader.doc_frequency(f, word) for f in EXACT_FIELDS)

    def spelled(self, word: str) -> str | None:
        """The word a word no memory holds was most likely typed for: of the words one letter fewer or two
        neighbouring letters swapped away ("regsitry", "vualt", "standupp") that memories hold as they are, the
        one most hold. None for a word of fewer than TYPO_LETTERS letters or with other characters. Issue 34,
        round six: on the twelve spent sets, typo prompts found their memory 8 times more, recall@2 0.755 ->
        0.757 and wrongly empty 0.104 -> 0.100, silence as before; adding a letter or changing one as well (~30x
        the lookups) found 3 more. About 2 lookups a letter in each exact field (~0.15 ms a word on the cold path's
        reader, ~1 ms on Whoosh's in the warm process), kept for the next prompt."""
        if len(word) < TYPO_LETTERS or not word.isalpha():
            return None
        if word in self._spellings:
            return self._spellings[word]
        near = {word[:i] + word[i + 1:] for i in range(len(word))}
        near |= {word[:i] + word[i + 1] + word[i] + word[i + 2:] for i in range(len(word) - 1) if word[i] != word[i + 1]}
        held = {w: self._held(w) for w in near - {word}}
        best = max(held, key=lambda w: (held[w], w), default=None)
        if len(self._spellings) >= MAX_CACHED_WORDS:
            self._spellings.clear()
        self._spellings[word] = found = best if best is not None and held[best] else None
        return found

    def documents(self, field: str, value: str) -> list[int]:
        """The (undeleted) documents whose `field` holds `value`."""
        if (field, value) not in self.reader:
            return []
        return list(self.reader.postings(field, value).all_ids())

    def load_all(self) -> None:
        """Read every stored document once (~90 ms at 5,000 memories, ~6 s at 100,000) and keep what
        ranking reads of it as columns (indexer/columns.py); the warm process does this while idle, so
        prompts find every document at hand. A hit's other fields are read for the few hits a search
        returns."""
        if self._columns is None:
            from .columns import Columns

            self._columns = Columns(self.reader)
            self._docs.clear()

    def leaves(self) -> list:
        """Each segment's reader, first document number and impact file (None: read from Whoosh)."""
        if self._leaves is None and hasattr(self.reader, "leaves"):  # a cold.Files: each segment has its files
            self._leaves = self.reader.leaves()
            self._offsets = [offset for _, offset, _ in self._leaves]
        if self._leaves is None:
            where = impact.folder(self.ix)
            self._leaves = []
            for segment, offset in self.reader.leaf_readers():
                sid = impact.segment_id(segment)
                found = impact.SegmentFile.open(where / f"{sid}.imp", sid, segment.doc_count_all()) \
                    if sid and segment.doc_count_all() >= impact.MIN_DOCS else None
                self._leaves.append((segment, offset, found))
            self._offsets = [offset for _, offset, _ in self._leaves]
        return self._leaves

    def locate(self, docnum: int) -> tuple[int, int]:
        """(segment, number within it) of a document number."""
        if self._leaves is None:
            self.leaves()
        leaf = bisect_right(self._offsets, docnum) - 1
        return leaf, docnum - self._offsets[leaf]

    def postings(self, field: str, word: str) -> dict[int, tuple[int, impact.Postings]]:
        """The documents holding `word` in `field`, per segment (leaf): (its first document number, Postings).

        Read once per index generation: from the segments' impact files where
        they have one (a few pages of a memory map), else from Whoosh.
        """
        key = (field, word)
        found = self._postings.get(key)
        if found is None:
            found, size = {}, 1  # words not in the index are cached too
            for leaf, (segment, offset, stored) in enumerate(self.leaves()):
                postings = stored.get(field, word) if stored is not None else impact.from_whoosh(segment, field, word)
                if postings is not None:
                    found[leaf] = (offset, postings)
                    size += len(postings) if stored is None else 0  # a file's pages are the kernel's to keep
            if self._cached + size > MAX_CACHED_POSTINGS:
                self._postings.clear()
                self._terms.clear()
                self._cached = 0
            self._postings[key] = found
            self._cached += size
        return found

    def term(self, field: str, word: str) -> topk.Term:
        """`postings` with each class's BM25F share (boost included). IDF and average length as Whoosh
        computes them (counts include deleted documents until a merge)."""
        key = (field, word)
        found = self._terms.get(key)
        if found is None:
            parts = self.postings(field, word)
            found = self._terms[key] = topk.Term(parts, self._share(field, word) if parts else None)
        return found

    def holding(self, word: str, fields, docnums) -> set[int]:
        """Which of `docnums` hold `word` in any of `fields` (no scores needed: no IDF looked up)."""
        out = set()
        for field in fields:
            for offset, postings in self.postings(field, word).values():
                docs = postings.docs  # local numbers below the segment's size: another's documents never match
                for docnum in docnums:
                    local = docnum - offset
                    at = bisect_left(docs, local)
                    if at < len(docs) and docs[at] == local:
                        out.add(docnum)
        return out

    def _share(self, field: str, word: str):
        reader = self.reader
        count = reader.doc_count_all()
        idf = math.log(count / (reader.doc_frequency(field, word) + 1)) + 1
        avgfl = reader.field_length(field) / (count or 1) or 1
        boost = FIELD_BOOSTS[field]
        return lambda tf, fl: idf * ((tf * (K1 + 1)) / (tf + K1 * ((1 - B) + B * fl / avgfl))) * boost

    def _add_holders(self, field: str, value: str, into: set[int]) -> None:
        """Add the documents whose `field` holds `value` to `into`: from the impact files where there are
        (a copy of an array), else from Whoosh (~2.4 us a document)."""
        for segment, offset, stored in self.leaves():
            if stored is not None:
                found = stored.get(field, value)
                if found is not None:
                    into.update(found.docs if not offset else (offset + d for d in found.docs))
            elif (field, value) in segment:
                into.update(offset + d for d in segment.postings(field, value).all_ids())

    def alias_terms(self, docnum: int) -> list[frozenset[str]]:
        """The query terms of each of a memory's aliases (split when it was indexed)."""
        found = self._aliases.get(docnum)
        if found is None:
            found = self._aliases[docnum] = [frozenset(t) for t in self.doc(docnum).get("alias_terms") or ()]
        return found

    def mask(self, project=None, all_scopes=False, include_inactive=False) -> set[int]:
        """What a search leaves out, as the few documents to drop (superseded, archived, other
        projects', and deleted ones an impact file still lists) rather than the many to keep."""
        key = (project, all_scopes, include_inactive)
        if key not in self._masks:
            drop: set[int] = set()
            for segment, offset, stored in self.leaves():
                if stored is not None and segment.has_deletions():
                    drop.update(offset + d for d in segment.deleted_docs_set)
            if not include_inactive:
                for status in _values(self.reader, "status"):
                    if status != "active":
                        self._add_holders("status", status, drop)
            if not all_scopes:
                keep = visible_scopes(project)
                for scope in _values(self.reader, "scope"):
                    if scope not in keep:
                        self._add_holders("scope", scope, drop)
            self._masks[key] = drop
        return self._masks[key]

    def dense_mask(self, project=None, all_scopes=False, include_inactive=False):
        """`mask` as a numpy bool per document number (for indexer/dense.py)."""
        key = (project, all_scopes, include_inactive)
        found = self._dense_masks.get(key)
        if found is None:
            import numpy as np

            found = np.zeros(self.reader.doc_count_all(), dtype=bool)
            found[np.fromiter(self.mask(*key), dtype=np.intp)] = True
            self._dense_masks[key] = found
        return found


def keyword_channel(view: View, words, *, also=(), asked=None, concepts=None, project=None, all_scopes=False,
                    include_inactive=False, limit=GATHER):
    """[(stored fields, bm25, matched)] best first (ties: the earlier document).

    `matched` maps each query word a memory holds to how much it counts as
    evidence: 1 if the title, tags or body hold it; if only an alias does,
    the share of that alias's words the query holds (see `alias_weights`);
    `asked` is all of the query's terms (default `words`, which may be only
    its rarest). Words in `also` are not searched for, only reported when a
    found memory holds them (recent turns' words: see recall._sharpen), and
    weighed the same way. `concepts` maps each concept of the lexicon the
    query names to the query words that name it: a memory that names the
    concept too holds those words as CONCEPT_EVIDENCE.

    Scores are the sum over every posting of the query's words, as Whoosh's
    BM25F defines it, but the lists are read best share first and reading
    stops once the top is certain (topk.py). Summing every posting cost a
    fresh process 173 ms p50, 482 ms p95 at 100,000 memories; this costs
    16 and 41 ms, with the same top 50 and scores for all 188 queries
    (bench/results/keyword-scale-2026-12-01.md). Whoosh's own block-skipping
    search dropped some top documents above 5,000 (4 of 188 queries at 20,000).
    """
    if not words and not concepts:
        return []
    lists = [((word,), field, term) for word in words for field in WORD_FIELDS
             if (key := (prefix(word) if field == PREFIXES else word)) and (term := view.term(field, key)).parts]
    lists += [(owners, CONCEPTS, term) for concept, owners in (concepts or {}).items()
              if (term := view.term(CONCEPTS, concept)).parts]
    scope = (project, all_scopes, include_inactive)
    if view.dense:
        from . import dense

        best = dense.top([term for _, _, term in lists], view.dense_mask(*scope), limit)
    else:
        best = topk.top([term for _, _, term in lists], view.mask(*scope), limit, view.locate)
    asked = set(words if asked is None else asked) | set(also)
    docnums = [docnum for docnum, _, _ in best]
    also_text = {w: view.holding(w, TEXT_FIELDS, docnums) for w in also}
    also_aliases = {w: view.holding(w, ("aliases",), docnums) for w in also}
    out = []
    for docnum, score, bits in best:
        held = {"aliases": set(), PREFIXES: set(), CONCEPTS: set(), "text": set(), "subject": set()}  # by where
        for j, (owners, field, _) in enumerate(lists):
            if bits >> j & 1:
                held[field if field in held else "text"].update(owners)
                if field in SUBJECT_FIELDS:
                    held["subject"].update(owners)
        in_text, in_aliases, subject = held["text"], held["aliases"], held["subject"]
        matched = {w: Titled(1.0) if w in subject else 1.0 for w in in_text | in_aliases}
        matched.update((w, PREFIX_EVIDENCE) for w in held[PREFIXES] if w not in matched)
        matched.update((w, Concept(CONCEPT_EVIDENCE)) for w in held[CONCEPTS] if w not in matched)
        alias_only = [w for w in words if w in in_aliases and w not in in_text]
        for w in (w for w in also if w not in matched):
            if docnum in also_text[w]:
                matched[w] = 1.0
            elif docnum in also_aliases[w]:
                alias_only.append(w)
        if alias_only:
            weights = alias_weights(view.alias_terms(docnum), asked)
            matched.update((w, weights.get(w, 0.0)) for w in alias_only)
        out.append((view.doc(docnum), score, matched))
    return out


class Titled(float):
    """A word's evidence where the memory's title or tags hold it: what the memory is about (recall.Floor.subject)."""

    __slots__ = ()


class Concept(float):
    """A word's evidence where the memory holds only a concept the word names (lexicon.py): the floor counts
    it for less than ranking does (recall.Floor.concept)."""

    __slots__ = ()


def alias_weights(phrases: list[frozenset[str]], asked: set[str]) -> dict[str, float]:
    """Per word, the largest share of an alias phrase holding it that `asked` covers.

    An alias is a phrase someone might type ("never commit the .env file"); a
    prompt that shares one common word with it ("commit this") has not asked
    for it. Counting such words in full let chitchat through the floor once
    agents wrote aliases (bench/recall tuning set, hybrid, with the background
    sentences of the time: silence 0.953 -> 0.938), at a cost in recall@2 of
    0.895 -> 0.879.
    """
    weights: dict[str, float] = {}
    for phrase in phrases:
        shared = phrase & asked
        if shared:
            share = len(shared) / len(phrase)
            for word in shared:
                weights[word] = max(weights.get(word, 0.0), share)
    return weights


def visible_scopes(project: str | None) -> set[str]:
    """The scopes a search in `project` sees: global memories and that project's own."""
    return {"global"} | ({f"project:{project}"} if project else set())


def visible(doc: dict, project=None, all_scopes=False, include_inactive=False) -> bool:
    """Whether a stored document passes the same rules as `View.mask` (for hits that come from the vectors)."""
    if not include_inactive and doc["status"] != "active":
        return False
    return all_scopes or doc["scope"] in visible_scopes(project)


def _values(reader, field: str) -> list[str]:
    return [impact.decoded(t) for t in reader.lexicon(field)]


def factors(doc: dict, pending: dict, today: dt.date) -> dict:
    """Strength, usefulness and type weight of a stored document, with unfolded usage added."""
    counts = usage.total(doc.get("shown") or 0, doc.get("used") or 0, _date(doc.get("last_used")),
                         pending.get(doc["id"]))
    created = _date(doc["created"]) or today
    return {
        "strength": rank.strength(doc.get("half_life"), created, counts.last_used, today),
        "usefulness": rank.usefulness(counts.shown, counts.used),
        "type_weight": rank.type_weight(doc["type"]),
        "status": rank.STATUS_WEIGHT.get(doc["status"], 1.0) * rank.VERIFIED_WEIGHT.get(doc.get("verified"), 1.0),
    }


def to_hit(doc: dict, score: float, parts: dict) -> Hit:
    return Hit(newer=parts.get("newer"),
        id=doc["id"], title=doc["title"], type=doc["type"], scope=doc["scope"], status=doc["status"],
        score=score, path=vault_path(doc['path']), snippet=doc.get("snippet") or "", tags=doc.get("tags") or "",
        superseded_by=doc.get("superseded_by"), verified=doc.get("verified"),
        verified_note=doc.get("verified_note"), parts=parts, conflict=doc.get("conflict"),
    )


def vault_path(stored: str) -> str:
    """A document's file, relative to the vault: memories/<name>, or a fact note's facts/<name> as stored."""
    return stored if stored.startswith("facts/") else f"memories/{stored}"


def _date(value) -> dt.date | None:
    if not value:
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        return None
