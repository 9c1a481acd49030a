"""The index as hafiza's own files describe it: a fresh process's keyword recall without Whoosh.

Importing Whoosh and unpickling its table of contents (the schema with its analyzers, and each
segment) cost a cold hook ~50-60 ms of its ~180 ms at 20,000 memories, as much as the recall itself.
Keyword recall needs little of Whoosh: each query word's postings (the segments' impact files,
indexer/impact.py), the counts BM25F weighs them by, which documents are deleted, and the stored
fields of the few documents it returns. So after each commit, beside each segment's impact file,
hafiza keeps under .hafiza/impact/:

    <segment id>.docs   the segment's stored fields, document by document (marshal, zlib), and which
                        documents hold each id (for a search that ranks unindexed writes: pending.py)
    segments.json       the generation's segments: documents, deleted ones, field length totals,
                        and the values of the status and scope fields; and how Whoosh rounds a
                        document's field length

A fresh process whose index is in step reads these when they describe the index's newest generation
(its latest `_MAIN_<n>.toc`), and opens Whoosh otherwise. The scores are Whoosh's: document counts,
frequencies and field lengths count deleted documents as Whoosh does until a merge (an impact file
holds every posting its segment was written with; see `impact.complete`).
"""

from __future__ import annotations

import json
import marshal
import mmap
import os
import time
import zlib
from array import array
from bisect import bisect_left, bisect_right
from pathlib import Path

from . import impact
from .schema import FIELD_BOOSTS

SUMMARY = "segments.json"
VERSION = 2  # 2: length_bytes. Version 1 is still read; only a view of pending writes needs the table.
MAGIC = b"HAFDOC02"  # 02: the id table
MAGIC_1 = b"HAFDOC01"  # without it: read, and written again by the next build
INDEX_NAME = "MAIN"  # Whoosh's default index name, which Index uses


class Stored:
    """One segment's `.docs` file, memory-mapped: document `n`'s stored fields are read when asked for."""

    def __init__(self, data: mmap.mmap, offsets: memoryview, start: int, hashes: memoryview | None,
                 numbers: memoryview | None):
        self.data, self.offsets, self.start = data, offsets, start
        # Each document's key hash (see `key`), sorted, and its number; None in a file of an earlier version.
        self.hashes, self.numbers = hashes, numbers

    @classmethod
    def open(cls, path: Path, sid: str, doc_count: int) -> Stored | None:
        """The file of segment `sid` with `doc_count` documents; None when it is missing, another's or damaged."""
        try:
            with open(path, "rb") as f:
                data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            return None
        view = memoryview(data)
        try:
            order, n, name = view[8:20].cast("I")
            magic = bytes(view[:8])
            if magic not in (MAGIC, MAGIC_1) or order != 0x01020304 or n != doc_count or \
                    bytes(view[20:20 + name]) != sid.encode():
                return None
            at = _aligned(20 + name)
            offsets = view[at:at + 8 * (n + 1)].cast("Q")
            start = at + 8 * (n + 1)
            hashes = numbers = None
            if magic == MAGIC:
                hashes = view[start:start + 4 * n].cast("I")
                at = _aligned(start + 4 * n)
                numbers = view[at:at + 4 * n].cast("I")
                start = _aligned(at + 4 * n)
                if len(numbers) != n:
                    return None
            if len(offsets) != n + 1 or start + offsets[n] != len(data):
                return None
        except (ValueError, TypeError):
            return None
        return cls(data, offsets, start, hashes, numbers)

    def get(self, docnum: int) -> dict:
        begin, end = self.offsets[docnum], self.offsets[docnum + 1]
        try:
            return marshal.loads(zlib.decompress(self.data[self.start + begin:self.start + end]))
        except (ValueError, EOFError, TypeError, zlib.error) as exc:
            raise OSError(f"a damaged stored-fields file: {exc}") from None  # Recall rebuilds the index

    def holding(self, doc_key: str) -> list[int]:
        """The documents whose id has `doc_key` as its `key` (and perhaps a few others: the table holds hashes)."""
        wanted, hashes = zlib.crc32(doc_key.encode()), self.hashes
        at = bisect_left(hashes, wanted)
        out = []
        while at < len(hashes) and hashes[at] == wanted:
            out.append(self.numbers[at])
            at += 1
        return out


def key(doc_id: str) -> str:
    """What a file's documents are taken out of the index by (index.py `_drop`): a memory's id, or the
    `fact:<slug>` of each attribute document `fact:<slug>/<attribute>` of a fact note."""
    return doc_id.partition("/")[0]


def write_stored(segment, sid: str, path: Path) -> bool:
    """Write the `.docs` file of a Whoosh segment reader (aside, then renamed); whether it was written.
    Deleted documents are kept: document numbers stay those of the segment."""
    n = segment.doc_count_all()
    offsets, blobs, keys, size = array("Q", [0]), [], [], 0
    for docnum in range(n):
        fields = segment.stored_fields(docnum)
        keys.append((zlib.crc32(key(str(fields.get("id", ""))).encode()), docnum))
        blob = zlib.compress(marshal.dumps(fields), 1)
        blobs.append(blob)
        size += len(blob)
        offsets.append(size)
    keys.sort()
    hashes, numbers = array("I", (h for h, _ in keys)), array("I", (d for _, d in keys))
    name = sid.encode()
    head = MAGIC + array("I", [0x01020304, n, len(name)]).tobytes() + name
    head += bytes(-len(head) % 8)
    aside = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        with open(aside, "wb") as out:
            out.write(head)
            out.write(offsets.tobytes())
            for table in (hashes, numbers):
                out.write(table.tobytes())
                out.write(bytes(-4 * n % 8))
            for blob in blobs:
                out.write(blob)
        os.replace(aside, path)
    except OSError:
        aside.unlink(missing_ok=True)
        return False
    return True


def build(ix, minimum: int = 1) -> list[str]:
    """Write the files of every segment of `ix` with at least `minimum` documents that lacks them (its
    impact file, indexer/impact.py, and its stored fields, `write_stored`), describe the generation
    (`describe`), and remove the files of segments that are gone; the ids of the
    segments whose files were written.

    Meant to run after each index commit (index.py): a new segment of one memory costs a few
    milliseconds; a merge into a big one costs a walk of its postings once (~5 s at 20,000 memories,
    ~17 s at 100,000), not one per prompt. A file that cannot be written (a full disk) is left missing:
    that segment is then read from Whoosh, slower but the same.
    """
    where = impact.folder(ix)
    reader = ix.reader()
    try:
        leaves = [segment for segment, _ in reader.leaf_readers()]
        wanted = {sid: s for s in leaves if s.doc_count_all() >= minimum and (sid := impact.segment_id(s))}
        where.mkdir(parents=True, exist_ok=True)
        written = []
        for sid, segment in wanted.items():
            path, count = where / f"{sid}.imp", segment.doc_count_all()
            found = impact.SegmentFile.open(path, sid, count)
            wrote = (found is None or not impact.complete(found, segment)) and impact.write(segment, sid, path)
            stored = Stored.open(path.with_suffix(".docs"), sid, count)
            if stored is None or stored.hashes is None:  # missing, or of a version without the id table
                wrote = write_stored(segment, sid, path.with_suffix(".docs")) or wrote
            if wrote:
                written.append(sid)
        if all(sid in wanted for sid in map(impact.segment_id, leaves)):
            describe(reader, where)
        live = {impact.segment_id(s) for s in leaves}
        for old in where.iterdir():
            if old.suffix in (".imp", ".docs") and old.stem not in live:  # an older generation's reader falls back
                old.unlink(missing_ok=True)
            elif old.suffix == ".tmp" and time.time() - _mtime(old) > 3600:  # left by a build that died
                old.unlink(missing_ok=True)
        return written
    finally:
        reader.close()


def describe(reader, where: Path) -> None:
    """Write segments.json for the generation `reader` reads (after its segments' files are written), unless
    it already describes it. A file that cannot be written leaves fresh processes on Whoosh."""
    from whoosh.util.numeric import byte_to_length

    path = where / SUMMARY
    generation = reader.generation()
    try:
        found = json.loads(path.read_bytes())
        if found.get("generation") == generation and found.get("version") == VERSION:
            return
    except (OSError, ValueError, AttributeError):
        pass
    segments = []
    for segment, _ in reader.leaf_readers():
        sid = impact.segment_id(segment)
        if sid is None:
            return  # an empty index: nothing to describe, Whoosh answers
        segments.append({
            "id": sid, "docs": segment.doc_count_all(), "deleted": sorted(segment.deleted_docs_set),
            "lengths": {field: segment.field_length(field) for field in FIELD_BOOSTS if field in segment.schema},
            "values": {field: [impact.decoded(t) for t in segment.lexicon(field)] for field in impact.MASK_FIELDS},
        })
    aside = path.with_name(f"{SUMMARY}.{os.getpid()}.tmp")
    try:
        # Each length a document's field can have as Whoosh stores it (one byte: whoosh.util.numeric), for the
        # documents a search ranks before they are committed (pending.py).
        length_bytes = [byte_to_length(b) for b in range(256)]
        aside.write_text(json.dumps({"version": VERSION, "generation": generation, "segments": segments,
                                     "length_bytes": length_bytes}))
        os.replace(aside, path)
    except OSError:
        aside.unlink(missing_ok=True)


class Leaf:
    """One segment as its files describe it: what search.View asks of a Whoosh segment reader."""

    __slots__ = ("sid", "docs", "deleted_docs_set", "file", "stored")

    def __init__(self, sid: str, docs: int, deleted, file: impact.SegmentFile, stored: Stored):
        self.sid, self.docs, self.deleted_docs_set, self.file, self.stored = sid, docs, frozenset(deleted), file, stored

    def doc_count_all(self) -> int:
        return self.docs

    def has_deletions(self) -> bool:
        return bool(self.deleted_docs_set)


class Files:
    """The part of a Whoosh reader that keyword recall uses (search.View, recall._keyword), from the files."""

    def __init__(self, generation: int, leaves: list[Leaf], lengths: dict[str, int], values: dict[str, set[str]],
                 length_bytes: list[int]):
        self.generation = generation
        self.state = None  # what the view was made at (recall.Recall._files_view)
        self._leaves = leaves
        self._offsets = [0]
        for leaf in leaves[:-1]:
            self._offsets.append(self._offsets[-1] + leaf.docs)
        self._lengths, self._values, self._length_bytes = lengths, values, length_bytes

    def plus(self, deleted: dict[int, set[int]], leaf: Leaf | None, lengths: dict[str, int],
             values: dict[str, set[str]]) -> Files:
        """The index as a commit that deletes `deleted` ({segment: its document numbers}) and adds the segment
        `leaf` (field length totals `lengths`, status and scope `values`) leaves it, if the commit merges no
        segments (see `merges`): pending.py makes such a view."""
        leaves = [Leaf(old.sid, old.docs, old.deleted_docs_set | deleted[k], old.file, old.stored) if k in deleted
                  else old for k, old in enumerate(self._leaves)]
        summed = {field: self._lengths.get(field, 0) + lengths.get(field, 0) for field in {*self._lengths, *lengths}}
        merged = {field: self._values.get(field, set()) | values.get(field, set()) for field in {*self._values, *values}}
        return Files(self.generation, leaves + ([leaf] if leaf is not None else []), summed, merged,
                     self._length_bytes)

    def merges(self) -> bool:
        """Whether the next commit merges segments (index.py commits with `merged`)."""
        return bool(merged([leaf.docs for leaf in self._leaves]))

    def extensible(self) -> bool:
        """Whether these files can take pending writes (`plus`): files of an earlier version lack what it needs."""
        return self._length_bytes is not None and all(leaf.stored.hashes is not None for leaf in self._leaves)

    def segment(self, k: int) -> Leaf:
        return self._leaves[k]

    def segment_count(self) -> int:
        return len(self._leaves)

    def quantized(self, length: int) -> int:
        """A document's field length as Whoosh stores it: rounded to one of 256 (whoosh.util.numeric)."""
        table = self._length_bytes
        return table[min(bisect_left(table, length), len(table) - 1)]

    def leaves(self) -> list[tuple[Leaf, int, impact.SegmentFile]]:
        return [(leaf, offset, leaf.file) for leaf, offset in zip(self._leaves, self._offsets)]

    def doc_count_all(self) -> int:
        return sum(leaf.docs for leaf in self._leaves)

    def doc_count(self) -> int:
        return sum(leaf.docs - len(leaf.deleted_docs_set) for leaf in self._leaves)

    def doc_frequency(self, field: str, word: str) -> int:
        return sum(leaf.file.frequency(field, word) for leaf in self._leaves)

    def field_length(self, field: str) -> int:
        return self._lengths.get(field, 0)

    def lexicon(self, field: str) -> list[str]:
        return sorted(self._values.get(field, ()))

    def stored_fields(self, docnum: int) -> dict:
        leaf = bisect_right(self._offsets, docnum) - 1
        return self._leaves[leaf].stored.get(docnum - self._offsets[leaf])

    def close(self) -> None:
        pass


def open_files(index_dir: Path) -> Files | None:
    """The index in `index_dir` (.hafiza/index) as the files beside it describe it; None when they do not
    describe its newest generation, or one of them is missing or damaged (then Whoosh answers)."""
    where = index_dir.parent / impact.FOLDER
    try:
        summary = json.loads((where / SUMMARY).read_bytes())
        generation = latest_generation(index_dir)
        if summary.get("version") not in (1, VERSION) or generation is None or summary.get("generation") != generation:
            return None
        length_bytes = summary.get("length_bytes")
        if length_bytes is not None and len(length_bytes) != 256:
            return None
        leaves, lengths, values = [], {}, {}
        for segment in summary["segments"]:
            sid, docs = segment["id"], segment["docs"]
            file = impact.SegmentFile.open(where / f"{sid}.imp", sid, docs)
            stored = Stored.open(where / f"{sid}.docs", sid, docs)
            if file is None or stored is None:
                return None
            leaves.append(Leaf(sid, docs, segment["deleted"], file, stored))
            for field, length in segment["lengths"].items():
                lengths[field] = lengths.get(field, 0) + length
            for field, found in segment["values"].items():
                values.setdefault(field, set()).update(found)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return Files(generation, leaves, lengths, values, length_bytes) if leaves else None


def latest_generation(index_dir: Path) -> int | None:
    """The generation Whoosh opens: the highest n of the `_MAIN_<n>.toc` files."""
    prefix, found = f"_{INDEX_NAME}_", None
    for name in os.listdir(index_dir):
        if name.startswith(prefix) and name.endswith(".toc") and name[len(prefix):-4].isdigit():
            n = int(name[len(prefix):-4])
            found = n if found is None or n > found else found
    return found


def merged(counts: list[int]) -> list[int]:
    """Which segments (their positions) a commit merges, given each one's documents, in the order it reads them:
    Whoosh's MERGE_SMALL rule (whoosh.writing), the smallest ones up to the first, from the fifth on, where
    together they hold fewer documents than fib(its position + 5); none when there is no such point. The
    commit decides by this (index.py `_merge_small`), and so can a search that has not loaded Whoosh
    (pending.py)."""
    total = 0
    order = sorted(range(len(counts)), key=counts.__getitem__)  # stable, as Whoosh's sort
    for i, k in enumerate(order):
        total += max(counts[k], 0)
        if i > 3 and total < _fibonacci(i + 5):
            return order[:i + 1]
    return []


def _fibonacci(n: int) -> int:
    """whoosh.util.fib: 1, 2, 3, 5, 8, ... for n = 1, 2, 3, 4, 5, ..."""
    a, b = 1, 2
    for _ in range(n - 1):
        a, b = b, a + b
    return a if n > 0 else 0


def _aligned(at: int) -> int:
    return at + (-at % 8)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return time.time()
