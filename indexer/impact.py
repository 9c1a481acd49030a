"""Impact-ordered postings: each word's documents grouped by how much the word weighs in them.

Keyword scoring read every posting of every query word through Whoosh
(0.97 s at 100,000 memories, 90% of a cold hook). A word's BM25F share in a
document depends only on (term frequency, field length) once the index-wide
statistics are known, and a list has few such pairs (at most 184 in any
list of a 20,000-memory vault, whose lengths Whoosh stores as one byte). So
each (field, word) list is kept here as *classes*: the distinct (tf, length)
pairs, each with its documents. A query computes each class's share exactly,
reads classes best first and stops once nothing left unread can reach the
top (topk.py); a second copy of the list in document order answers "does
this document hold the word, and how much" for the few documents that need it.

Whoosh segments never change once written (only their deletions do), so
there is one file per segment, named by its segment id, under
.hafiza/impact/: it cannot go stale, only missing. Each commit writes the
files of the segments it made (cold.build: a fresh process reads only files);
a segment without one (a big one of an index made before them) is read from
Whoosh into the same shape, per word, as it is asked for, and so is a small
one in a long-lived View (MIN_DOCS). Files hold document numbers local to
their segment, and every document the segment was written with, deleted ones
included; those are left out at query time.
"""

from __future__ import annotations

import mmap
import os
import zlib
from array import array
from collections import Counter
from itertools import accumulate
from pathlib import Path

from .schema import FIELD_BOOSTS

FOLDER = "impact"           # under .hafiza/
MAGIC = b"HAFIMP01"
VERSION = 2                 # 2: status and scope postings too
MIN_DOCS = 1000             # a long-lived View reads smaller segments from Whoosh: a file saves them little
# Also kept, unscored: which documents each status and scope holds, for the scope mask (search.View.mask):
# reading the 44,000 other projects' memories of a generated 100,000 from Whoosh took 42-46 ms a fresh
# process, from here 6-11 ms (20,000: 9-14 ms against 2-3 ms).
MASK_FIELDS = ("status", "scope")
_HEADER = 9                 # 'I' values after MAGIC (see `write`)
_RECORD = 6                 # key start, key end, first class, classes, first posting, postings


class Postings:
    """One word's documents in one field of one segment, grouped by (tf, field length).

    Class `c` has term frequency `tf[c]` and field length `fl[c]` and holds the
    documents ordered[starts[c]:starts[c + 1]] (ascending); `docs` is every
    document ascending and `cls` each one's class. Arrays, or memoryviews of a file.
    """

    __slots__ = ("tf", "fl", "starts", "ordered", "docs", "cls")

    def __init__(self, tf, fl, starts, ordered, docs, cls):
        self.tf, self.fl, self.starts, self.ordered, self.docs, self.cls = tf, fl, starts, ordered, docs, cls

    def __len__(self) -> int:
        return len(self.docs)


def from_pairs(docnums, tfs, lengths) -> Postings:
    """Group a term's postings (ascending document numbers, each one's tf and field length) into classes."""
    keys = list(zip(tfs, lengths))
    classes = sorted(set(keys), key=lambda k: (-k[0], k[1]))  # any order is right; this one is reproducible
    code = "H" if len(classes) <= 0xFFFF else "I"  # more is not seen (lengths take at most 256 values)
    cls = array(code, map({k: c for c, k in enumerate(classes)}.__getitem__, keys))
    counts = Counter(cls)
    starts = array("I", accumulate((counts[c] for c in range(len(classes))), initial=0))
    ordered = array("i", map(docnums.__getitem__, sorted(range(len(cls)), key=cls.__getitem__)))  # stable
    return Postings(array("d", (k[0] for k in classes)), array("I", (k[1] for k in classes)), starts, ordered,
                    array("i", docnums), cls)


def from_whoosh(segment, field: str, word) -> Postings | None:
    """A term's postings read from a Whoosh segment reader (deleted documents already left out)."""
    if (field, word) not in segment:
        return None
    docnums, tfs, lengths = [], [], []
    length = segment.doc_field_length
    postings = segment.postings(field, word)
    while postings.is_active():
        docnum = postings.id()
        docnums.append(docnum)
        tfs.append(postings.weight())
        lengths.append(length(docnum, field) or 1)  # as the BM25F of search.py always did
        postings.next()
    return from_pairs(docnums, tfs, lengths) if docnums else None


# ---- one file per segment


def folder(ix) -> Path:
    """.hafiza/impact/ beside the Whoosh index of `ix` (.hafiza/index/)."""
    return Path(ix.storage.folder).parent / FOLDER


def segment_id(segment) -> str | None:
    """The id of a Whoosh segment reader's segment: random, and never reused for other contents. None for
    the reader of an empty index, which has no segment."""
    found = segment.segment()
    return found.segment_id() if found is not None else None


def complete(found: SegmentFile, segment) -> bool:
    """Whether an impact file holds every document its segment was written with, deleted ones included, as
    Whoosh's frequencies count them (every document has one status). One built by an earlier version from a
    segment with deletions left those out: it is written again."""
    return sum(found.frequency("status", decoded(t)) for t in segment.lexicon("status")) == segment.doc_count_all()


def write(segment, sid: str, path: Path) -> bool:
    """Write one segment's file (aside, then renamed into place: a reader sees all of it or none); whether
    it was written."""
    keys, records = bytearray(), array("I")
    tf, fl, starts, ordered, docs, cls = array("d"), array("I"), array("I"), array("i"), array("i"), array("H")
    n = segment.doc_count_all()
    for field in (*FIELD_BOOSTS, *MASK_FIELDS):
        if field not in segment.schema:
            continue
        lengths = [segment.doc_field_length(d, field) or 1 for d in range(n)] if segment.schema[field].scorable \
            else [1] * n
        for term in segment.lexicon(field):
            postings = _walk(segment, field, term, lengths)
            if postings is None:
                continue
            key = field.encode() + b"\0" + (term if isinstance(term, bytes) else term.encode())
            records.extend((len(keys), len(keys) + len(key), len(tf), len(postings.tf), len(docs), len(postings)))
            keys += key
            tf.extend(postings.tf)
            fl.extend(postings.fl)
            starts.extend(postings.starts[:-1])
            ordered.extend(postings.ordered)
            docs.extend(postings.docs)
            if postings.cls.typecode != cls.typecode:
                return False  # a list of more than 65,535 classes: read from Whoosh instead
            cls.extend(postings.cls)
    count = len(records) // _RECORD
    size = 1 << max(4, (2 * count).bit_length())  # at most half full
    table = array("I", bytes(4 * size))
    for k in range(count):
        key = bytes(keys[records[k * _RECORD]:records[k * _RECORD + 1]])
        slot = zlib.crc32(key) & (size - 1)
        while table[slot]:
            slot = (slot + 1) & (size - 1)
        table[slot] = k + 1
    name = sid.encode()
    header = array("I", [0x01020304, VERSION, n, count, size, len(tf), len(docs), len(keys), len(name)])
    parts = [MAGIC, header.tobytes(), name, table.tobytes(), records.tobytes(), bytes(keys), tf.tobytes(),
             fl.tobytes(), starts.tobytes(), ordered.tobytes(), docs.tobytes(), cls.tobytes()]
    aside = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        with open(aside, "wb") as out:
            for part in parts:
                out.write(part)
                out.write(bytes(-len(part) % 8))  # every section starts 8-byte aligned
        os.replace(aside, path)
    except OSError:
        aside.unlink(missing_ok=True)
        return False
    return True


def _walk(segment, field: str, term, lengths: list[int]) -> Postings | None:
    docnums, tfs = _pairs(_every_posting(segment, field, term))
    return from_pairs(docnums, tfs, [lengths[d] for d in docnums]) if docnums else None


def _every_posting(segment, field: str, term):
    """A term's postings, those of deleted documents included (Whoosh's own frequencies count them): from
    whoosh3's terms reader where there is one, else as the segment reader gives them."""
    terms = getattr(segment, "_terms", None)
    if terms is not None and hasattr(terms, "matcher"):
        return terms.matcher(field, term, segment.schema[field].format)
    return segment.postings(field, term)


def decoded(term) -> str:
    """A Whoosh term (bytes from a lexicon) as text."""
    return term.decode("utf-8") if isinstance(term, bytes) else term


def _pairs(postings) -> tuple[list[int], list[float]]:
    """A term's document numbers and term frequencies: a block at a time from Whoosh 3's own matcher (a new
    segment has no deletions, so that is what a build meets; twice as fast), else a posting at a time."""
    docnums, tfs = [], []
    if all(hasattr(postings, name) for name in ("_read_ids", "_read_weights", "_next_block")):
        while postings.is_active():
            postings._read_ids()
            postings._read_weights()
            docnums.extend(postings._ids)
            tfs.extend(postings._weights)
            postings._next_block()
        return docnums, tfs
    while postings.is_active():
        docnums.append(postings.id())
        tfs.append(postings.weight())
        postings.next()
    return docnums, tfs


class SegmentFile:
    """One segment's file, memory-mapped: a lookup reads a few of its pages, not the file."""

    def __init__(self, views: dict):
        self.__dict__.update(views)

    @classmethod
    def open(cls, path: Path, sid: str, doc_count: int) -> SegmentFile | None:
        """The file of segment `sid` with `doc_count` documents; None when it is missing or not that
        segment's, or damaged (then the segment is read from Whoosh)."""
        try:
            with open(path, "rb") as f:
                data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # missing, or empty (mmap refuses a zero-length file)
            return None
        try:
            return cls(_sections(data, sid, doc_count))
        except (ValueError, TypeError, IndexError):
            return None  # the map closes with its last view

    def _record(self, field: str, word: str) -> int | None:
        """Where the record of (field, word) starts in `records`; None when the segment lacks the word."""
        key = f"{field}\0{word}".encode()
        mask = self.size - 1
        slot = zlib.crc32(key) & mask
        records, keys = self.records, self.keys
        while k := self.table[slot]:
            at = (k - 1) * _RECORD
            if keys[records[at]:records[at + 1]] == key:
                return at
            slot = (slot + 1) & mask
        return None

    def get(self, field: str, word: str) -> Postings | None:
        at = self._record(field, word)
        if at is None:
            return None
        records = self.records
        c0, nc, p0, n = records[at + 2], records[at + 3], records[at + 4], records[at + 5]
        if c0 + nc > len(self.tf) or p0 + n > len(self.docs):
            return None  # damaged: treated as absent rather than read out of bounds
        starts = array("I", self.starts[c0:c0 + nc])
        starts.append(n)
        return Postings(self.tf[c0:c0 + nc], self.fl[c0:c0 + nc], starts, self.ordered[p0:p0 + n],
                        self.docs[p0:p0 + n], self.cls[p0:p0 + n])

    def frequency(self, field: str, word: str) -> int:
        """How many documents hold `word` in `field`: Whoosh's document frequency, deleted ones included
        (for a file that is `complete`)."""
        at = self._record(field, word)
        return 0 if at is None else self.records[at + 5]


def _sections(data: mmap.mmap, sid: str, doc_count: int) -> dict:
    view = memoryview(data)
    if bytes(view[:8]) != MAGIC:
        raise ValueError("not an impact file")
    head = view[8:8 + 4 * _HEADER].cast("I")
    order, version, n, count, size, classes, postings, keys, name = head
    if order != 0x01020304 or version != VERSION or n != doc_count:
        raise ValueError("another byte order, version or segment")
    at = _aligned(8 + 4 * _HEADER)
    if bytes(view[at:at + name]) != sid.encode():
        raise ValueError("another segment")
    at = _aligned(at + name)
    out = {"data": data, "size": size}
    for part, code, length in (("table", "I", size), ("records", "I", count * _RECORD), ("keys", "B", keys),
                               ("tf", "d", classes), ("fl", "I", classes), ("starts", "I", classes),
                               ("ordered", "i", postings), ("docs", "i", postings), ("cls", "H", postings)):
        end = at + length * array(code).itemsize
        if end > len(data):
            raise ValueError("truncated")
        out[part] = view[at:end] if code == "B" else view[at:end].cast(code)
        at = _aligned(end)
    return out


def _aligned(at: int) -> int:
    return at + (-at % 8)
