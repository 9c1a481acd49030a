"""The embedding sidecar: a few unit vectors per memory, keyed by content hash.

Two files in the vault's `.hafiza/`:

- `vectors.npy`  (rows, dim) int16, a unit vector's components times 32767 (Q15), mapped
  read-only on load; each memory's rows are adjacent;
- `vectors.json` the embedder (name, version, dim), the row count and encoding, a CRC-32 of the
  rows as stored, and per memory its id, the content hash it was embedded from, how many rows, and
  the content hash of the file those texts came from (its `source`; see `sync`).

A memory scores by its best row (see `embedding_texts` for why there are several). A store of
coarse.SKETCH_FROM rows or more also keeps each row's signs, made as its rows load, and a search scores
only the memories a coarse pass over them picks (indexer/coarse.py).

The rows are what grows with the vault in the warm process (float32 at 512-d: 410 MB at 100,000
memories, and its sync of a hand edit held three more copies). Mapped, they are the page cache's:
shared, given back under memory pressure, never a private copy. Loading checks the CRC by reading
the file and a write reads the rows it keeps, so only a search pages the map in. Q15 halves the
bytes and kept every cosine within 4e-5 of float32's (bench/recall: the same recall figures);
float16 does as well, but numpy widens it to float32 ~10x slower than int16 (no SIMD float16 cast
on x86): scoring 100,000 memories took ~800 ms instead of ~90 (a loaded machine). Figures:
bench/results/vector-memory-2026-12-01.md.

Both files are replaced atomically (temp file + os.replace), the rows first; a map of the old
rows stays valid after the rename. A reader that catches a writer between the two renames, or a
crash there, sees a CRC that does not match the rows; it then re-reads the pair, and gives up
(returns False: rebuild) only if it never matches. Nothing on disk is trusted that does not
check out, and everything is rebuildable.

A file rewritten in place (same inode) is another matter: touching a mapped page past a truncated
end is SIGBUS, which Python cannot catch (the hardening fault pass killed the warm process that
way). So the rows are written read-only (as git writes its objects), and each search first checks
with one fstat (~1 us) that the file under the map has the size and mtime it was loaded with, and
loads the pair again if not. Left open: a truncation landing inside a search's few milliseconds.

Format 2 (float32 rows) of the same embedder is converted on load, with a notice, into a private
16-bit copy that the next sync writes as format 3 (and maps from then on).
"""

from __future__ import annotations

import json
import mmap
import os
import re
import weakref
import zlib
from itertools import chain
from pathlib import Path
from typing import Callable, Iterable, Iterator, NamedTuple

import numpy as np

from hafiza.indexer.embed import Embedder
from hafiza.vault.files import FILE_MODE, atomic_write

from . import coarse

VECTORS = "vectors.npy"
META = "vectors.json"
# Why memories have no vectors file (recall's notice, `hafiza doctor`): the next write embeds every one missing.
NONE_YET = ("none are made while HAFIZA_EMBEDDER=none, and a vault copied or cloned without .hafiza/, or whose "
            ".hafiza/ was removed, has none")
BATCH = 32  # texts per embed() call; also how often progress is reported
_FORMAT = 3  # 3: Q15 int16 rows, mapped; 2: float32 rows, read into memory (converted on load)
_FLOAT32 = 2
STORED = np.dtype("<i2")  # a row as stored (float16 or float32 also work, with SCALE 1: bench/vector_memory.py)
SCALE = 32767  # a unit vector's component x is stored as round(x * SCALE)
CHUNK = 1024  # rows widened to float32 per step of a search: 2 MB at 512-d, never the whole matrix
_READ_BYTES = 1 << 20  # per read when checking a CRC or copying the rows a write keeps
_READ_ONLY = FILE_MODE & ~0o222
# What a memory's `source` (its file's content hash) vouches for: texts made by this version of
# `embedding_texts` from what the index stores. Bump it when either changes: sources of another
# version are not trusted, and every memory's texts are made again to be checked.
TEXTS_VERSION = 1
_READ_ATTEMPTS = 3  # a concurrent writer renames twice; a fourth mismatch is real damage
# What a missing, truncated or foreign file raises on the way in (the .npy header reader:
# ValueError on a short file or a bad header; np.load of background.npy: EOFError on an empty
# file; json: ValueError). Any of them means: rebuild.
DAMAGE = (OSError, ValueError, KeyError, TypeError, EOFError)

Progress = Callable[[int, int], None]


class Columns(NamedTuple):
    """The store's memories in row order, a column each: ids, the content hashes their vectors were made from,
    how many rows (texts) each has, and the content hash of the file their texts came from ("" where unknown:
    an earlier sidecar)."""

    ids: list[str]
    hashes: list[str]
    counts: list[int]
    sources: list[str]

    def taken(self, keep: list[int]) -> Columns:
        """The memories at the positions `keep`, in that order."""
        return Columns(*([column[i] for i in keep] for column in self))

    def then(self, more: Columns) -> Columns:
        return Columns(*(column + added for column, added in zip(self, more)))


class _Stale(NamedTuple):
    """A memory whose vectors are made anew: its id, its content hash, its texts and its file's content hash."""

    id: str
    hash: str
    texts: list[str]
    source: str


class VectorStore:
    """The vectors of one vault, for one embedder at a time.

    `held` (Columns: `ids`, `hashes`, `counts`, `sources`) is per memory; `matrix` (read-only, as stored: see
    `rows` for float32) has `sum(counts)` rows, a memory's rows starting at `starts[i]`.
    """

    def __init__(self, directory: str | os.PathLike, notice: Callable[[str], None] | None = None,
                 coarse_from: int = coarse.SKETCH_FROM, candidates: int = coarse.CANDIDATES):
        """A store of `coarse_from` rows or more is searched with the coarse pass (indexer/coarse.py), which
        scores exactly the memories of its `candidates` nearest rows."""
        self.dir = Path(directory)
        self.notice = notice or (lambda _: None)  # what a reader is told (Recall passes the index's)
        self.coarse_from, self.candidates = coarse_from, candidates
        self._clear("", "", 0)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def ids(self) -> list[str]:
        return self.held.ids

    @property
    def hashes(self) -> list[str]:
        return self.held.hashes

    @property
    def counts(self) -> list[int]:
        return self.held.counts

    @property
    def sources(self) -> list[str]:
        return self.held.sources

    def _clear(self, name: str, version: str, dim: int) -> None:
        self.embedder = (name, version, dim)
        self.held = Columns([], [], [], [])
        self.starts = np.zeros(0, dtype=np.intp)
        self._counts = np.zeros(0, dtype=np.intp)
        self.matrix = np.zeros((0, dim), dtype=STORED)
        self._signs: coarse.Signs | None = None  # the rows' signs for the coarse pass (made as they load)
        self._left_out: tuple | None = None  # (the last `allowed` searched with, the rows it leaves out)
        self._index: dict[str, int] = {}
        self._file: _RowsFile | None = None  # the file under `matrix` when it is mapped
        self._on_disk = False  # whether the files hold exactly this state
        self.upgraded_from: int | None = None  # the earlier format read by converting it (doctor asks)

    def _set(self, held: Columns, matrix: np.ndarray, file: _RowsFile | None,
             signs: coarse.Signs | None = None) -> None:
        self.held, self.matrix, self._file, self._signs, self._left_out = held, matrix, file, signs, None
        counts = held.counts
        self._counts = np.asarray(counts, dtype=np.intp)
        self.starts = np.cumsum([0, *counts[:-1]], dtype=np.intp) if counts else np.zeros(0, dtype=np.intp)
        self._index = {id_: i for i, id_ in enumerate(held.ids)}
        self._on_disk = file is not None

    def rows(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Rows `start:stop` as float32 unit vectors (to within 1.5e-5 a component)."""
        return decode(self.matrix[start:stop])

    def firsts(self) -> np.ndarray:
        """Each memory's first row (all its fields together: `embedding_texts`) as float32 unit vectors, in the
        store's order."""
        return decode(self.matrix[self.starts])

    # ------------------------------------------------------------------ load

    def load(self, embedder_name: str, version: str, dim: int) -> bool:
        """Read the pair on disk; False (and an empty store) unless it is complete,
        intact and made by this embedder name, version and dim."""
        self._clear(embedder_name, version, dim)
        for _ in range(_READ_ATTEMPTS):
            try:
                meta = json.loads((self.dir / META).read_bytes())
                if not _meta_matches(meta, embedder_name, version, dim):
                    return False
                read = _map_rows if meta["format"] == _FORMAT else _convert_rows
                found = read(self.dir / VECTORS, meta["rows"], dim, meta["crc32"], meta["rows"] >= self.coarse_from)
            except DAMAGE:
                return False  # missing or unreadable: rebuild
            if found is not None:
                self._set(Columns(meta["ids"], meta["hashes"], meta["counts"], _sources(meta)), *found)
                if meta["format"] != _FORMAT:
                    self.upgraded_from = meta["format"]
                    self.notice(f"{self.dir / VECTORS} holds float32 vectors of an earlier hafiza (format "
                                f"{meta['format']}): read by converting them; the next write stores them as "
                                f"16-bit rows (format {_FORMAT}) without embedding again")
                return True
            # rows and json from different writes: a writer is between its two
            # renames (or crashed there); read the pair again
        return False

    def _reload_if_rewritten(self) -> None:
        """Load the pair again if the mapped file was rewritten in place since it was loaded (an empty store
        if it no longer checks out), without touching the map."""
        if self._file is None or self._file.unchanged():
            return
        self.notice(f"{self.dir / VECTORS} was rewritten in place (hafiza replaces it instead): reading it again")
        if not self.load(*self.embedder):
            self.notice(f"{self.dir / VECTORS} does not check out: meaning search is off until the next write "
                        "or `hafiza reindex`")

    # ------------------------------------------------------------------ sync

    def first(self, id_: str) -> np.ndarray | None:
        """Memory `id_`'s first row (all its fields together) as a float32 unit vector; None without vectors."""
        at = self._index.get(id_)
        return None if at is None else decode(self.matrix[self.starts[at]])

    def holds(self, id_: str) -> bool:
        """Whether memory `id_` has vectors (of its content now, or of an earlier one)."""
        return id_ in self._index

    def stale(self, items: Iterable[tuple[str, str, object]]) -> list[str]:
        """Ids of `items` (id, content_hash, ...) that have no vectors, or vectors of other content."""
        return [id_ for id_, hash_, *_ in items if self._stale(id_, hash_)]

    def _stale(self, id_: str, hash_: str) -> bool:
        return id_ not in self._index or self.hashes[self._index[id_]] != hash_

    def made_from(self, id_: str, source: str) -> str | None:
        """The content hash of memory `id_`'s texts when its vectors were made from a file whose content hash is
        `source` (so its texts need not be made again to be checked); None when that is not known."""
        at = self._index.get(id_)
        return self.hashes[at] if at is not None and source and self.sources[at] == source else None

    def sync(self, embedder: Embedder, items: Iterable[tuple], progress: Progress | None = None,
             limit: int | None = None) -> tuple[int, int]:
        """Make the store hold exactly `items` (id, content_hash, text or texts[, source]), and save it.

        Diffs against what the store holds now: call `load` first to reuse
        the vectors on disk; without it (or after a failed load) everything
        is embedded, which is how a rebuild is done. Embeds only ids that are
        new or whose hash changed, drops ids not in `items`, and rewrites the
        files if anything changed. `progress(done, total)` is called after
        each batch of embeddings. Returns (embedded, removed); a changed
        memory counts as embedded, not removed. With `limit`, more than that
        many to embed does nothing at all (returns (0, 0)).

        An item's `source` (the content hash of the file its texts came from) is stored with its
        vectors, so that a later check of an unchanged file can skip making its texts (`made_from`);
        such an item may bring no texts (None): it must not be stale.
        """
        key = (embedder.name, embedder.version, embedder.dim)
        if self.embedder != key:  # vectors of another embedder are not comparable
            self._clear(*key)
        self._reload_if_rewritten()
        wanted, todo = self._wanted(items)
        if limit is not None and len(todo) > limit:
            return 0, 0
        stale = {memory.id for memory in todo}
        keep = [i for i, id_ in enumerate(self.ids) if id_ in wanted and id_ not in stale]
        removed = len(self.ids) - len(keep) - sum(1 for memory in todo if memory.id in self._index)
        kept = self.held.taken(keep)
        kept = kept._replace(sources=[wanted[id_] or source for id_, source in zip(kept.ids, kept.sources)])
        if not todo and len(keep) == len(self.ids) and self._on_disk:
            if kept.sources != self.sources:  # files changed where their texts did not (usage counts): the json only
                self._write_meta(kept, self._file)
                self.held = kept
            return 0, 0
        fresh = _embed_all(embedder, [text for memory in todo for text in memory.texts], progress)
        held = kept.then(Columns([m.id for m in todo], [m.hash for m in todo], [len(m.texts) for m in todo],
                                 [m.source for m in todo]))
        matrix, file = self._write(held, chain(self._kept(keep), [fresh]))
        self._set(held, matrix, file)
        return len(todo), removed

    def _wanted(self, items: Iterable[tuple]) -> tuple[dict[str, str], list[_Stale]]:
        """The memories `items` name (id -> the content hash of the file its texts came from), and of them those
        whose vectors are missing or of other content. Streamed: only the texts to embed are kept (at
        100,000 memories all of them were 200 MB)."""
        wanted: dict[str, str] = {}
        todo: list[_Stale] = []
        for id_, hash_, texts, *source in items:
            if id_ in wanted:
                continue
            wanted[id_] = source = source[0] if source else ""
            if self._stale(id_, hash_):
                todo.append(_Stale(id_, hash_, [texts] if isinstance(texts, str) else list(texts), source))
        return wanted, todo

    def _kept(self, keep: list[int]) -> Iterator[np.ndarray]:
        """The stored rows of memories `keep`, in order, a run of adjacent rows at a time."""
        spans = ((int(self.starts[i]), int(self.starts[i]) + self.counts[i]) for i in keep)
        for start, stop in _runs(spans):
            yield from self._read(start, stop)

    def _read(self, start: int, stop: int) -> Iterator[np.ndarray]:
        """Rows `start:stop` as stored, a block at a time."""
        step = max(1, _READ_BYTES // (self.embedder[2] * STORED.itemsize or 1))
        for at in range(start, stop, step):
            end = min(stop, at + step)
            # From the file, not the map: copying through the map would page it all into this process.
            yield self._file.read(at, end) if self._file is not None else self.matrix[at:end]

    def _write(self, held: Columns, blocks: Iterable[np.ndarray]) -> tuple[np.ndarray, _RowsFile]:
        """Rows first, then the json that vouches for them (CRC and count); the rows written, mapped."""
        name, version, dim = self.embedder
        rows = sum(held.counts)
        self.dir.mkdir(parents=True, exist_ok=True)
        wrote = {}

        def write_rows(fh) -> None:
            np.lib.format.write_array_header_1_0(fh, {"descr": STORED.str, "fortran_order": False,
                                                      "shape": (rows, dim)})
            crc = 0
            for block in blocks:  # streamed: neither the kept rows nor the whole matrix is ever one array
                data = np.ascontiguousarray(block, dtype=STORED).data
                crc = zlib.crc32(data, crc)
                fh.write(data)
            st = os.fstat(fh.fileno())
            wrote.update(crc=crc, inode=(st.st_dev, st.st_ino))

        atomic_write(self.dir / VECTORS, write_rows, mode=_READ_ONLY)
        file = _RowsFile.open(self.dir / VECTORS, rows, dim, STORED, crc=wrote["crc"])
        if file.inode != wrote["inode"]:  # sync_vectors' lock keeps writers apart; without it, the json must not lie
            raise ValueError(f"{VECTORS} was replaced by another writer while this one wrote it")
        self._write_meta(held, file)
        return file.map(), file

    def _write_meta(self, held: Columns, file: _RowsFile) -> None:
        """The json that vouches for the rows `file` holds (which must be the file on disk)."""
        st = os.stat(self.dir / VECTORS)
        if (st.st_dev, st.st_ino) != file.inode or not file.unchanged():
            raise ValueError(f"{VECTORS} was replaced by another writer while this one wrote it")
        name, version, dim = self.embedder
        meta = {"format": _FORMAT, "embedder": name, "version": version, "dim": dim, "dtype": STORED.str,
                "scale": SCALE, "rows": file.rows, "crc32": file.checked, "ids": held.ids,
                "hashes": held.hashes, "counts": held.counts, "sources": held.sources, "texts": TEXTS_VERSION}
        data = json.dumps(meta, ensure_ascii=False).encode("utf-8")
        atomic_write(self.dir / META, lambda f: f.write(data))

    # ---------------------------------------------------------------- search

    def search(self, query_vec: np.ndarray, k: int, allowed: np.ndarray | None = None) -> list[tuple[str, float]]:
        """The k ids whose best vector is nearest `query_vec`, as (id, cosine), best first; with `allowed` (a
        bool per memory, in the store's order) only among those."""
        if k <= 0 or not self.ids:
            return []
        query = _unit(np.asarray(query_vec, dtype=np.float32).reshape(-1))
        if query.shape[0] != self.matrix.shape[1]:
            raise ValueError(f"query has dim {query.shape[0]}, store has {self.matrix.shape[1]}")
        self._reload_if_rewritten()
        if not self.ids or (allowed is not None and len(allowed) != len(self.ids)):
            return []  # reloaded since `allowed` was made: the caller's next search makes it again
        members = self._candidates(query, k, allowed)
        if members is None:  # every row scored
            scores = np.maximum.reduceat(_scores(self.matrix, query / np.float32(SCALE)), self.starts)
            members = np.flatnonzero(allowed) if allowed is not None else None
            scores = scores[members] if members is not None else scores
        else:
            rows, firsts = coarse.rows_of(members, self.starts, self._counts)
            scores = np.maximum.reduceat(_scores(self.matrix[rows], query / np.float32(SCALE)), firsts)
        np.clip(scores, -1.0, 1.0, out=scores)  # a rounded row can overshoot a cosine of 1 by ~1e-5
        found = _top_k(scores, k)
        return [(self.ids[i], float(scores[j])) for i, j in zip(found if members is None else members[found], found)]

    def _candidates(self, query: np.ndarray, k: int, allowed: np.ndarray | None) -> np.ndarray | None:
        """The memories (ascending, `allowed` ones) worth scoring exactly for the `k` nearest `query`
        (indexer/coarse.py); None: score them all (a store below `coarse_from` rows, or a `k` near its size)."""
        wanted = max(self.candidates, 4 * k)
        if len(self.matrix) < self.coarse_from or 2 * wanted >= len(self.matrix):
            return None
        if self._signs is None:  # rows this store wrote, or converted: loading format 3 made them
            self._signs = coarse.Signs.of(self._read(0, len(self.matrix)), *self.matrix.shape)
        distances = self._signs.distances(query)
        if allowed is not None:
            if self._left_out is None or self._left_out[0] is not allowed:  # a search of the same scope again
                self._left_out = (allowed, ~np.repeat(allowed, self._counts))
            np.putmask(distances, self._left_out[1], coarse.FARTHEST)
        found = coarse.nearest(distances, self.starts, wanted)
        return found[allowed[found]] if allowed is not None else found


class _RowsFile:
    """An open rows file, checked against its json: what a store maps, reads kept rows from, and
    looks at (fstat) before each search."""

    def __init__(self, fd: int, rows: int, dim: int, dtype: np.dtype, crc: int | None = None):
        self.fd, self.rows, self.dim, self.dtype = fd, rows, dim, dtype
        self.checked = crc  # the rows' CRC, once it is known to match
        st = os.fstat(fd)
        self.inode, self.stamp = (st.st_dev, st.st_ino), (st.st_size, st.st_mtime_ns)
        with open(fd, "rb", buffering=0, closefd=False) as fh:
            version = np.lib.format.read_magic(fh)
            if version not in ((1, 0), (2, 0)):
                raise ValueError(f"{VECTORS}: .npy format {version} is not one hafiza writes")
            header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, fortran, found = header(fh)
            self.offset = fh.tell()
        size = rows * dim * dtype.itemsize
        # The header and the file's size first: a header that claims more rows must not make us read them.
        if shape != (rows, dim) or found != dtype or fortran or st.st_size - self.offset != size:
            raise ValueError(f"{VECTORS}: shape {shape} {found} in {st.st_size - self.offset} bytes, "
                             f"expected ({rows}, {dim}) {dtype}")
        weakref.finalize(self, os.close, fd)  # only now: until here, open() closes it

    @classmethod
    def open(cls, path: Path, rows: int, dim: int, dtype: np.dtype, crc: int | None = None) -> _RowsFile:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            return cls(fd, rows, dim, dtype, crc)
        except BaseException:
            os.close(fd)
            raise

    def unchanged(self) -> bool:
        st = os.fstat(self.fd)
        return (st.st_size, st.st_mtime_ns) == self.stamp

    def read(self, start: int, stop: int) -> np.ndarray:
        """Rows `start:stop` read from the file (ValueError if it is shorter now)."""
        width = self.dim * self.dtype.itemsize
        data = os.pread(self.fd, (stop - start) * width, self.offset + start * width)
        if len(data) != (stop - start) * width:
            raise ValueError(f"{VECTORS}: {len(data)} bytes of rows at row {start}, expected {(stop - start) * width}")
        return np.frombuffer(data, dtype=self.dtype).reshape(stop - start, self.dim)

    def crc(self, each: Callable[[int, np.ndarray], None] | None = None) -> int:
        """The rows' CRC, read from the file; `each(start, rows)` is shown every block read on the way."""
        crc, step = 0, max(1, _READ_BYTES // max(1, self.dim * self.dtype.itemsize))
        for start in range(0, self.rows, step):
            block = self.read(start, min(self.rows, start + step))
            crc = zlib.crc32(block, crc)
            if each is not None:
                each(start, block)
        return crc

    def map(self) -> np.ndarray:
        """The rows, mapped read-only; the map keeps its own descriptor."""
        if self.rows == 0:
            return np.zeros((0, self.dim), dtype=self.dtype)
        view = mmap.mmap(self.fd, self.offset + self.rows * self.dim * self.dtype.itemsize, access=mmap.ACCESS_READ)
        return np.frombuffer(view, dtype=self.dtype, count=self.rows * self.dim, offset=self.offset).reshape(
            self.rows, self.dim)


def _map_rows(path: Path, rows: int, dim: int, crc: int,
              signed: bool) -> tuple[np.ndarray, _RowsFile, coarse.Signs | None] | None:
    """The rows of a format-3 file, mapped once their CRC checks out (read from the file, not through
    the map), and with `signed` their signs (indexer/coarse.py: made as the CRC reads the rows, ~70 ms
    more at 100,000 memories); None if it does not."""
    file = _RowsFile.open(path, rows, dim, STORED)
    signs = coarse.Signs(rows, dim) if signed else None
    if file.crc(signs.add if signs is not None else None) != crc or not file.unchanged():
        return None
    file.checked = crc
    return file.map(), file, signs


def _convert_rows(path: Path, rows: int, dim: int, crc: int,
                  signed: bool) -> tuple[np.ndarray, None, coarse.Signs | None] | None:
    """The float32 rows of a format-2 file, checked and encoded a block at a time into memory (and with
    `signed`, their signs); None if their CRC does not check out."""
    file = _RowsFile.open(path, rows, dim, np.dtype(np.float32))
    out = np.empty((rows, dim), dtype=STORED)
    signs = coarse.Signs(rows, dim) if signed else None
    check = 0
    for start in range(0, rows, CHUNK):
        block = file.read(start, min(rows, start + CHUNK))
        check = zlib.crc32(block, check)
        out[start:start + len(block)] = _encode(block)
        if signs is not None:
            signs.add(start, out[start:start + len(block)])
    if check != crc:
        return None
    out.flags.writeable = False
    return out, None, signs


def embedding_texts(title: str, aliases: Iterable[str] = (), tags: Iterable[str] = (),
                    body: str = "", limit: int = 500) -> tuple[str, ...]:
    """What a memory is embedded from: all its fields together, and its body alone.

    The body alone matters for prompts that describe a situation rather than
    name the topic: a title and tags pull the combined vector toward the topic
    words. On bench/recall (USE multilingual) scoring a memory by the better of
    the two raised hybrid recall@2 0.791 -> 0.824, held-out 0.70 -> 0.75, with
    chitchat silence unchanged; adding the title alone as a third vector
    helped the main set a little and cost held-out silence.
    """
    combined = embedding_text(title, aliases, tags, body, limit)
    head = _head(body, limit)
    return (combined, head) if head and head != combined else (combined,)


def embedding_text(title: str, aliases: Iterable[str] = (), tags: Iterable[str] = (),
                   body: str = "", limit: int = 500) -> str:
    """Title, aliases, tags, and the body's start, one per line.

    The body is cut near `limit` characters, at a word boundary when one is
    close: USE averages over tokens, so a long body would drown the title.
    """
    lines = [title.strip(), ", ".join(a for a in aliases if a), ", ".join(t for t in tags if t), _head(body, limit)]
    return "\n".join(line for line in lines if line)


def _head(body: str, limit: int) -> str:
    head = re.sub(r"\s+", " ", body).strip()
    if len(head) > limit:
        cut = head.rfind(" ", 0, limit + 1)
        head = head[:cut if cut > limit // 2 else limit]
    return head


# ---------------------------------------------------------------- helpers


def _meta_matches(meta, name: str, version: str, dim: int) -> bool:
    """The json is ours (format 3, or format 2 to convert), for this embedder, and internally consistent."""
    if not isinstance(meta, dict):
        return False
    ids, hashes, counts = meta.get("ids"), meta.get("hashes"), meta.get("counts")
    encoded = meta.get("format") == _FORMAT and (meta.get("dtype"), meta.get("scale")) == (STORED.str, SCALE)
    return ((encoded or meta.get("format") == _FLOAT32)
            and (meta.get("embedder"), meta.get("version"), meta.get("dim")) == (name, version, dim)
            and isinstance(ids, list) and isinstance(hashes, list) and isinstance(counts, list)
            and len(ids) == len(hashes) == len(counts) and len(set(ids)) == len(ids)
            and all(isinstance(c, int) and c > 0 for c in counts) and sum(counts) == meta.get("rows")
            and isinstance(meta.get("crc32"), int))


def _sources(meta: dict) -> list[str]:
    """Each memory's source as the json records it: "" for all where it records none (a sidecar of an earlier
    version), or none that this version of the texts can trust."""
    sources = meta.get("sources")
    if (meta.get("texts") != TEXTS_VERSION or not isinstance(sources, list) or len(sources) != len(meta["ids"])
            or not all(isinstance(s, str) for s in sources)):
        return [""] * len(meta["ids"])
    return sources


def _runs(spans: Iterable[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """(start, stop) spans with adjacent ones joined."""
    run = None
    for start, stop in spans:
        if run is not None and run[1] == start:
            run = (run[0], stop)
            continue
        if run is not None:
            yield run
        run = (start, stop)
    if run is not None:
        yield run


def _scores(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """matrix @ query, CHUNK stored rows widened into one float32 buffer at a time: never a float32
    copy of the whole matrix (at 100,000 memories that copy alone was 410 MB)."""
    out = np.empty(len(matrix), dtype=np.float32)
    wide = np.empty((min(CHUNK, len(matrix)), matrix.shape[1]), dtype=np.float32)
    for start in range(0, len(matrix), CHUNK):
        part = matrix[start:start + CHUNK]
        np.copyto(wide[:len(part)], part, casting="unsafe")
        np.dot(wide[:len(part)], query, out=out[start:start + len(part)])
    return out


def decode(stored: np.ndarray) -> np.ndarray:
    """Rows as stored (`_encode`) back to float32 unit vectors: the only way a stored row is read as a vector
    (the 16-bit rows read raw gave the curator cosines of ~5e8: issue 30, item 4)."""
    return stored.astype(np.float32) / np.float32(SCALE)


def _encode(rows: np.ndarray) -> np.ndarray:
    """Float rows as stored: made unit length (a zero row stays zero; NaN and inf count as 0, since
    they would poison every dot product), then rounded to Q15."""
    rows = np.nan_to_num(np.asarray(rows, dtype=np.float32), nan=0.0, posinf=0.0, neginf=0.0)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    rows = np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
    if STORED.kind == "f":
        return rows.astype(STORED)
    return np.clip(np.rint(rows * SCALE), -SCALE, SCALE).astype(STORED)


def _embed_all(embedder: Embedder, texts: list[str], progress: Progress | None) -> np.ndarray:
    """The rows of `texts`, as stored: a batch is encoded as it comes (a rebuild at 100,000 memories
    held every row in float32 first, 410 MB)."""
    out = np.zeros((len(texts), embedder.dim), dtype=STORED)
    if progress is not None and texts:
        progress(0, len(texts))  # before the first batch, which loads the model: `init --from` sat silent 19 s
    for start in range(0, len(texts), BATCH):
        batch = texts[start:start + BATCH]
        vectors = np.asarray(embedder.embed(batch), dtype=np.float32)
        if vectors.shape != (len(batch), embedder.dim):
            raise ValueError(f"{embedder.name} returned {vectors.shape} for {len(batch)} texts")
        out[start:start + len(batch)] = _encode(vectors)
        if progress is not None:
            progress(start + len(batch), len(texts))
    return out


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


def _top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest scores, largest first (ties: lower index first, at the k-th too: argpartition
    alone keeps any of the scores that tie with the k-th)."""
    if k < len(scores):
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        part = np.flatnonzero(scores >= kth)
    else:
        part = np.arange(len(scores))
    return part[np.lexsort((part, -scores[part]))][:k]
