"""Keyword recall: BM25F over the index's postings, times strength, usefulness and type weight."""

from __future__ import annotations

import datetime as dt
import heapq
import math
from array import array
from bisect import bisect_left
from typing import NamedTuple

from hafiza.vault import usage

from . import rank
from .text import terms
from .schema import FIELD_BOOSTS
from .stopwords import informative

TEXT_FIELDS = tuple(f for f in FIELD_BOOSTS if f != "aliases")
GATHER = 50  # candidates per channel: gather wide, cut late
K1, B = 1.2, 0.75  # BM25 parameters (Whoosh's BM25F defaults)
MAX_CACHED_POSTINGS = 4_000_000  # ~48 MB of scored postings kept by a long-lived View


class Hit(NamedTuple):
    """One recalled memory. A NamedTuple, not a dataclass: importing dataclasses costs the cold hook ~5 ms."""

    id: str
    title: str
    type: str
    scope: str
    status: str
    score: float
    path: str
    snippet: str = ""
    tags: str = ""
    superseded_by: str | None = None
    verified: str | None = None
    verified_note: str | None = None
    parts: dict | None = None   # how the score was made (--explain)

    def to_json(self, explain: bool = False) -> dict:
        data = self._asdict()
        if not explain:
            data.pop("parts")
        data["score"] = round(self.score, 6)
        return data


def query_terms(text: str) -> list[str]:
    """Distinct informative terms of a query, in order."""
    return list(dict.fromkeys(informative(terms(text))))


class View:
    """One open reader on one index generation, and what repeated queries on it reuse.

    The warm process answers every prompt from the same generation until a
    write replaces the index object: stored documents, the id -> document
    number map, the scope masks and each word's scored postings are read
    once, not per prompt (fetching the meaning channel's documents alone
    cost ~13 ms a prompt at 5,000). A reader, not a Whoosh searcher: recall
    needs postings, lengths and stored fields only, and whoosh.searching
    costs the cold hook ~11 ms to import.
    """

    def __init__(self, ix):
        self.ix = ix
        self.reader = ix.reader()
        self._docs: dict[int, dict] = {}
        self._aliases: dict[int, list[frozenset[str]]] = {}
        self._numbers: dict[str, int] | None = None
        self._masks: dict[tuple, set[int]] = {}
        self._postings: dict[tuple[str, str], tuple[array, array]] = {}
        self._cached = 0

    def close(self) -> None:
        self.reader.close()

    def doc(self, docnum: int) -> dict:
        doc = self._docs.get(docnum)
        if doc is None:
            doc = self._docs[docnum] = self.reader.stored_fields(docnum)
        return doc

    def doc_by_id(self, mem_id: str) -> dict | None:
        if self._numbers is not None:
            docnum = self._numbers.get(mem_id)
        else:
            docnum = next(iter(self.documents("id", mem_id)), None)
        return None if docnum is None else self.doc(docnum)

    def documents(self, field: str, value: str) -> list[int]:
        """The (undeleted) documents whose `field` holds `value`."""
        if (field, value) not in self.reader:
            return []
        return list(self.reader.postings(field, value).all_ids())

    def load_all(self) -> None:
        """Read every stored document at once (~90 ms at 5,000 memories); the warm process does
        this while idle, so prompts find every document already in memory."""
        if self._numbers is None:
            numbers = {}
            for docnum, doc in self.reader.iter_docs():
                self._docs[docnum] = doc
                numbers[doc["id"]] = docnum
            self._numbers = numbers

    def postings(self, field: str, word: str) -> tuple[array, array]:
        """The documents holding `word` in `field` (ascending) and each one's BM25F share, boost included.

        Read once per index generation: a prompt then costs a sum over its
        words' arrays (~0.2 ms at 5,000 memories where Whoosh's own search
        took ~6.5 ms). Whoosh's block-skipping search also dropped some top
        documents above 5,000 memories (4 of 188 queries at 20,000); summing
        every posting cannot.
        """
        key = (field, word)
        found = self._postings.get(key)
        if found is None:
            found = _scored_postings(self.reader, field, word)
            size = len(found[0]) + 1  # words not in the index are cached too
            if self._cached + size > MAX_CACHED_POSTINGS:
                self._postings.clear()
                self._cached = 0
            self._postings[key] = found
            self._cached += size
        return found

    def alias_terms(self, docnum: int) -> list[frozenset[str]]:
        """The query terms of each of a memory's aliases (split when it was indexed)."""
        found = self._aliases.get(docnum)
        if found is None:
            found = self._aliases[docnum] = [frozenset(t) for t in self.doc(docnum).get("alias_terms") or ()]
        return found

    def mask(self, project=None, all_scopes=False, include_inactive=False) -> set[int]:
        """What a search leaves out, as the few documents to drop (superseded, archived, other
        projects') rather than the many to keep."""
        key = (project, all_scopes, include_inactive)
        if key not in self._masks:
            drop: set[int] = set()
            if not include_inactive:
                for status in _values(self.reader, "status"):
                    if status != "active":
                        drop.update(self.documents("status", status))
            if not all_scopes:
                keep = visible_scopes(project)
                for scope in _values(self.reader, "scope"):
                    if scope not in keep:
                        drop.update(self.documents("scope", scope))
            self._masks[key] = drop
        return self._masks[key]


def keyword_channel(view: View, words, *, also=(), asked=None, project=None, all_scopes=False,
                    include_inactive=False, limit=GATHER):
    """[(stored fields, bm25, matched)] best first (ties: the earlier document).

    `matched` maps each query word a memory holds to how much it counts as
    evidence: 1 if the title, tags or body hold it; if only an alias does,
    the share of that alias's words the query holds (see `alias_weights`);
    `asked` is all of the query's terms (default `words`, which may be only
    its rarest). Words in `also` are not searched for, only reported when a
    found memory holds them (recent turns' words: see recall._sharpen), and
    weighed the same way.
    """
    if not words:
        return []
    total: dict[int, float] = {}
    holds: dict[int, int] = {}  # which of `words` each document holds, as bits
    in_aliases: dict[int, int] = {}  # ... in its aliases (a small field: cheaper to track than the rest)
    for i, word in enumerate(words):
        bit = 1 << i
        for field in FIELD_BOOSTS:
            docnums, shares = view.postings(field, word)
            for docnum, share in zip(docnums, shares):
                total[docnum] = total.get(docnum, 0.0) + share
                holds[docnum] = holds.get(docnum, 0) | bit
            if field == "aliases":
                for docnum in docnums:
                    in_aliases[docnum] = in_aliases.get(docnum, 0) | bit
    masked = view.mask(project, all_scopes, include_inactive)
    best = heapq.nsmallest(limit, ((-score, docnum) for docnum, score in total.items() if docnum not in masked))
    asked = set(words if asked is None else asked) | set(also)
    out = []
    for negative, docnum in best:
        matched = {w: 1.0 for i, w in enumerate(words) if holds[docnum] >> i & 1}
        alias_only = [w for i, w in enumerate(words) if in_aliases.get(docnum, 0) >> i & 1
                      and not _holds(view, w, docnum, TEXT_FIELDS)]
        for w in (w for w in also if w not in matched):
            if _holds(view, w, docnum, TEXT_FIELDS):
                matched[w] = 1.0
            elif _holds(view, w, docnum, ("aliases",)):
                alias_only.append(w)
        if alias_only:
            weights = alias_weights(view.alias_terms(docnum), asked)
            matched.update((w, weights.get(w, 0.0)) for w in alias_only)
        out.append((view.doc(docnum), -negative, matched))
    return out


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


def _holds(view: View, word: str, docnum: int, fields=tuple(FIELD_BOOSTS)) -> bool:
    for field in fields:
        docnums = view.postings(field, word)[0]
        at = bisect_left(docnums, docnum)
        if at < len(docnums) and docnums[at] == docnum:
            return True
    return False


def _scored_postings(reader, field: str, word: str) -> tuple[array, array]:
    """(document numbers, BM25F shares) of one term; deleted documents are not in the postings.
    IDF and average length as Whoosh computes them (counts include deleted documents until a merge)."""
    docnums, shares = array("i"), array("d")
    if (field, word) not in reader:
        return docnums, shares
    count = reader.doc_count_all()
    idf = math.log(count / (reader.doc_frequency(field, word) + 1)) + 1
    avgfl = reader.field_length(field) / (count or 1) or 1
    boost = FIELD_BOOSTS[field]
    length = reader.doc_field_length
    postings = reader.postings(field, word)
    while postings.is_active():
        docnum, tf = postings.id(), postings.weight()
        fl = length(docnum, field) or 1
        docnums.append(docnum)
        shares.append(idf * ((tf * (K1 + 1)) / (tf + K1 * ((1 - B) + B * fl / avgfl))) * boost)
        postings.next()
    return docnums, shares


def visible_scopes(project: str | None) -> set[str]:
    """The scopes a search in `project` sees: global memories and that project's own."""
    return {"global"} | ({f"project:{project}"} if project else set())


def visible(doc: dict, project=None, all_scopes=False, include_inactive=False) -> bool:
    """Whether a stored document passes the same rules as `View.mask` (for hits that come from the vectors)."""
    if not include_inactive and doc["status"] != "active":
        return False
    return all_scopes or doc["scope"] in visible_scopes(project)


def _values(reader, field: str) -> list[str]:
    return [t.decode("utf-8") if isinstance(t, bytes) else t for t in reader.lexicon(field)]


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
    return Hit(
        id=doc["id"], title=doc["title"], type=doc["type"], scope=doc["scope"], status=doc["status"],
        score=score, path=f"memories/{doc['path']}", snippet=doc.get("snippet") or "", tags=doc.get("tags") or "",
        superseded_by=doc.get("superseded_by"), verified=doc.get("verified"),
        verified_note=doc.get("verified_note"), parts=parts,
    )


def _date(value) -> dt.date | None:
    if not value:
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        return None
