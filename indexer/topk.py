"""The best few documents of a sum of impact-ordered lists, exactly, without reading all of them.

A query's score is a sum over lists, one per (word, field), of each list's
share in a document. Lists are read best class first across all of them
(score-at-a-time, as in Anh and Moffat's impact-ordered indexes), adding
each share to a running partial sum, until `limit` documents that may be
returned have partial sums above the most any unread document could still
reach (the sum of every list's next unread share). No document outside what
was read can then enter the top. The documents read whose partial sum plus
that bound can still reach the top are then scored exactly, in the same
order of words and fields as a full walk adds them, so scores are bit for bit
those of the full walk and ties go to the earlier document as before.
"""

from __future__ import annotations

from bisect import bisect_left
from heapq import heapify, heappop, heappush, heapreplace, nlargest

# Partial sums add the same shares in another order than the exact scores, so they may differ in the
# last bits; every bound is compared with this relative margin (far above float rounding, far below
# any real gap between scores).
EPS = 1e-9
# Scoring a document exactly looks it up in every list, each lookup costing about as much as reading
# this many postings (both ~0.8 us at 20,000 and 100,000 memories): reading goes on while that is cheaper.
LOOKUP_COST = 1


class Term:
    """One list: a word in one field across the index's segments, each class's share computed.

    `parts` maps a segment (leaf) number to (its first document number, its Postings).
    """

    __slots__ = ("parts", "shares", "blocks", "size")

    def __init__(self, parts: dict, share):
        self.parts = parts
        self.shares = {leaf: [share(tf, fl) for tf, fl in zip(p.tf, p.fl)] for leaf, (_, p) in parts.items()}
        self.blocks = sorted(((s, leaf, c) for leaf, shares in self.shares.items() for c, s in enumerate(shares)),
                             key=lambda b: -b[0])
        self.size = sum(len(p) for _, p in parts.values())

    def __len__(self) -> int:
        return self.size

    def block(self, at: int):
        """(share, first document number of its segment, its documents) of the `at`-th best class."""
        share, leaf, c = self.blocks[at]
        offset, postings = self.parts[leaf]
        return share, offset, postings.ordered[postings.starts[c]:postings.starts[c + 1]]

    def shares_of(self, located) -> list[float]:
        """`share` of each (segment, local number) of `located`, which is in ascending order."""
        out = []
        parts, shares = self.parts, self.shares
        last, docs, cls, table, lo = None, None, None, None, 0
        for leaf, local in located:
            if leaf != last:
                last, part = leaf, parts.get(leaf)
                docs, lo = None, 0
                if part is not None:
                    docs, cls, table = part[1].docs, part[1].cls, shares[leaf]
            if docs is None:
                out.append(0.0)
                continue
            lo = bisect_left(docs, local, lo)
            out.append(table[cls[lo]] if lo < len(docs) and docs[lo] == local else 0.0)
        return out


def top(terms: list[Term], excluded, limit: int, locate) -> list[tuple[int, float, int]]:
    """The `limit` best documents not in `excluded` by the sum of `terms`, as (document, score, which
    terms hold it as bits), best first, ties to the earlier document. `locate` maps a document
    number to (segment, number within it)."""
    if limit <= 0:
        return []
    partial, rest = _gather(terms, excluded, limit)
    least = _kth(partial, limit) / (1 + EPS) - rest
    # Whatever was not read, or was but cannot reach `least` with everything unread added, is below the
    # limit-th best partial sum, so below the top. The rest is scored exactly, best partial sum first, a
    # batch at a time and a list at a time, adding each list's share in the order a full walk adds it;
    # once the best exact scores are in, a batch whose best partial sum cannot reach them ends it
    # (in two slow queries at 100,000 memories, 744 of 1,324 and 383 of 1,877 candidates still
    # needed scoring).
    candidates = sorted(((v, d) for d, v in partial.items() if v >= least), reverse=True)
    best: list[tuple[float, int, int]] = []  # a min-heap of (score, -document, bits): its head is the worst
    step = max(limit, 32)
    for start in range(0, len(candidates), step):
        if len(best) == limit and (candidates[start][0] + rest) * (1 + EPS) < best[0][0]:
            break
        docnums = sorted(d for _, d in candidates[start:start + step])
        located = [locate(d) for d in docnums]
        scores, bits = [0.0] * len(docnums), [0] * len(docnums)
        for j, term in enumerate(terms):
            for i, share in enumerate(term.shares_of(located)):
                if share:
                    scores[i] += share
                    bits[i] |= 1 << j
        for item in zip(scores, (-d for d in docnums), bits):
            if len(best) < limit:
                heappush(best, item)
            elif item > best[0]:
                heapreplace(best, item)
    return [(-negative, score, held) for score, negative, held in sorted(best, key=lambda b: (-b[0], -b[1]))]


def _gather(terms: list[Term], excluded, limit: int) -> tuple[dict[int, float], float]:
    """Partial sums of the documents not excluded, from reading classes best first until `limit` of them are
    certain to beat every unread document (and scoring the others that may still reach them costs less than
    reading on); and the most an unread document could still add."""
    frontier = [t.blocks[0][0] if t.blocks else 0.0 for t in terms]
    heap = [(-frontier[j], j, 0) for j, t in enumerate(terms) if t.blocks]
    heapify(heap)
    partial: dict[int, float] = {}
    get = partial.get
    unread = sum(len(t) for t in terms)
    since = 0
    while heap:
        _, j, at = heappop(heap)
        term = terms[j]
        share, offset, docs = term.block(at)
        # Excluded documents (another project's, superseded: ~40% of a generated 100,000) are never
        # summed: the passes deciding when to stop then need not skip them (they were most of their cost).
        if excluded:
            for d in docs:
                d += offset
                if d not in excluded:
                    partial[d] = get(d, 0.0) + share
        elif offset:
            for d in docs:
                d += offset
                partial[d] = get(d, 0.0) + share
        else:
            for d in docs:
                partial[d] = get(d, 0.0) + share
        at += 1
        if at < len(term.blocks):
            frontier[j] = term.blocks[at][0]
            heappush(heap, (-frontier[j], j, at))
        else:
            frontier[j] = 0.0
        since += len(docs)
        unread -= len(docs)
        # Deciding costs two passes over every partial sum: done once as many postings again have been
        # read, so deciding costs about as much as reading, and reading overshoots by at most that much.
        if since >= len(partial):
            since = 0
            rest = sum(frontier)
            floor = _kth(partial, limit)
            if floor > rest * (1 + EPS) and \
                    _open(partial, floor / (1 + EPS) - rest) * len(terms) * LOOKUP_COST <= unread:
                break
    return partial, sum(frontier)


def _kth(partial: dict[int, float], limit: int) -> float:
    """The `limit`-th largest partial sum (0.0 if there are fewer)."""
    found = nlargest(limit, partial.values())
    return found[-1] if len(found) == limit else 0.0


def _open(partial: dict[int, float], least: float) -> int:
    """How many documents read so far may still reach the top, and so would be scored exactly."""
    return sum(1 for v in partial.values() if v >= least)
