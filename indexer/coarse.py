"""The meaning channel's coarse pass: which memories are worth scoring exactly.

Scoring every stored row was most of a warm hybrid search at 100,000 memories: ~48 ms of its ~70 ms
of CPU (200,000 rows of 512 components widened to float32 and multiplied). So each row's signs are kept
too, packed 64 to a word (64 bytes a row at 512-d, 13 MB at 100,000 memories). A search first works
out, for every row, how far its signs are from the query's: over the components where they differ,
the sum of how much each weighs in the query (its magnitude's quartile, 0 to 3: two popcounts a word,
numpy's bitwise_count). It then scores exactly the memories of the CANDIDATES nearest rows (every row
of them, as before) and takes its top from those: ~10 ms of CPU at 100,000 memories, and a warm hybrid
search 16-18 ms instead of 49-52 (bench/results/vector-scan-2026-12-02.md).

Signs estimate an angle, not its exact order: a memory that would have ranked among the nearest but
whose rows are not among the candidates is missed. On the real model's vectors of a generated
100,000-memory vault, 200 generated prompts searched as the hooks search (limit 8, the floor, every
mode, two scopes: 5,786 hits), no hit differed from scoring every row with 2,048 candidate rows or
more (one search's 4 hits did with 1,024); the channel's own 50 nearest, which the floor mostly
drops, differed somewhere in 21 of 400 searches with CANDIDATES (never in the first 20), 8 with
8,192 (bench/results/warm-same-vector-scan-2026-12-02.json). Weighing components by the query was
worth it: the exact 50 nearest reached 1,466 memories deep into the coarse order at p90 with the
weights, 8,051 with a plain Hamming distance. Smaller stores need less (the nearest are less
crowded), and one below SKETCH_FROM rows is scored in full.

Random vectors (bench/vector_memory.py's stand-in for the model, each text its own random direction)
have nearest neighbours hardly nearer than the rest, which no sketch finds: on such a vault of
100,000 the hooks' hits differed in 3 of 400 searches by meaning and 3 of 400 hybrid ones (10 hits
each), and the 50 nearest in 382 of 400. Those are figures of the stand-in, not of the model.

The signs are made from the rows as stored (.hafiza/vectors.npy) as they are loaded, so nothing new is
kept on disk and there is nothing to rebuild or go stale.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

# Rows from which a store keeps signs (below it, scoring every row costs a few ms: ~8.5 ms at 40,000
# rows, 20,000 memories, on this machine).
SKETCH_FROM = 40_000
CANDIDATES = 4096  # rows the coarse pass picks: their memories are scored exactly
FARTHEST = np.iinfo(np.uint16).max  # a distance no row has: what a search leaves out is set to it
PLANES = 2  # the query's weights in `Signs.distances`: 2 bits each (0 planes: a plain Hamming distance)
_WORD = np.dtype("<u8")
_BYTE_BITS = np.array([bin(b).count("1") for b in range(256)], dtype=np.uint8)


class Signs:
    """Each row's signs, one array of words per 64 components: `words[w][row]`."""

    def __init__(self, rows: int, dim: int):
        self.words = np.zeros((-(-dim // 64), rows), dtype=_WORD)

    def __len__(self) -> int:
        return self.words.shape[1]

    @classmethod
    def of(cls, blocks: Iterable[np.ndarray], rows: int, dim: int) -> Signs:
        """The signs of `rows` rows, given as consecutive blocks."""
        signs = cls(rows, dim)
        at = 0
        for block in blocks:
            signs.add(at, block)
            at += len(block)
        return signs

    def add(self, start: int, block: np.ndarray) -> None:
        """Set the signs of rows `start:start + len(block)`."""
        self.words[:, start:start + len(block)] = packed(block).T

    def distances(self, query: np.ndarray, planes: int | None = None) -> np.ndarray:
        """Each row's distance from `query` (uint16, one per row): over the components where the row's sign
        differs from the query's, the sum of how much each weighs in the query, its magnitude's quantile
        in 2 ** `planes` steps (0 to 2 ** planes - 1); with no planes, how many differ (Hamming)."""
        rows, planes = len(self), PLANES if planes is None else planes
        signs = packed(query.reshape(1, -1))[0]
        masks = [None]  # every component counts alike
        if planes:
            size = np.abs(query.reshape(-1))
            steps = np.quantile(size, np.arange(1, 2 ** planes) / 2 ** planes)
            level = np.searchsorted(steps, size, side="right")
            masks = [packed(((level >> p) & 1).reshape(1, -1))[0] for p in range(planes)]
        sums = [np.zeros(rows, dtype=np.uint16) for _ in masks]
        differ, part, count = np.empty(rows, dtype=_WORD), np.empty(rows, dtype=_WORD), np.empty(rows, dtype=np.uint8)
        for w, words in enumerate(self.words):
            np.bitwise_xor(words, signs[w], out=differ)
            for mask, total in zip(masks, sums):
                if mask is not None:
                    np.bitwise_and(differ, mask[w], out=part)
                np.add(total, popcount(differ if mask is None else part, out=count), out=total)
        for p in range(1, len(sums)):
            sums[0] += sums[p] << np.uint16(p)
        return sums[0]


def packed(rows: np.ndarray) -> np.ndarray:
    """(len(rows), words) uint64: bit i of a row's signs set where its component i is above 0."""
    bits = np.packbits(np.asarray(rows) > 0, axis=1)
    pad = -bits.shape[1] % _WORD.itemsize
    if pad:
        bits = np.pad(bits, ((0, 0), (0, pad)))
    return bits.view(_WORD)


def popcount(words: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The set bits of each uint64, as uint8 (numpy >= 2.0's bitwise_count; a byte table before it)."""
    count = getattr(np, "bitwise_count", None)
    if count is not None:
        return count(words, out=out)
    found = table_popcount(words)
    if out is None:
        return found
    out[...] = found
    return out


def table_popcount(words: np.ndarray) -> np.ndarray:
    """popcount without bitwise_count (numpy < 2.0): each byte's count from a table, ~4x slower."""
    return _BYTE_BITS[words.view(np.uint8)].reshape(*words.shape, _WORD.itemsize).sum(axis=-1, dtype=np.uint8)


def nearest(distances: np.ndarray, starts: np.ndarray, wanted: int) -> np.ndarray:
    """Memories (ascending), each the rows from its start to the next's, that have a row among the `wanted`
    nearest rows, or tied with the last of them (so the choice does not depend on the order of the rows)."""
    within = int(np.searchsorted(np.cumsum(np.bincount(distances)), wanted))
    memories = np.searchsorted(starts, np.flatnonzero(distances <= within), side="right") - 1
    return memories[np.concatenate(([True], memories[1:] != memories[:-1]))] if len(memories) else memories


def rows_of(memories: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows of `memories` (indices) in order, and where each memory's rows start among them."""
    sizes = counts[memories]
    firsts = np.cumsum(sizes) - sizes
    return np.arange(int(sizes.sum())) + np.repeat(starts[memories] - firsts, sizes), firsts
