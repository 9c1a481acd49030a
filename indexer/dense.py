"""Keyword scores of every document at once, with numpy: the warm process's way once the meaning channel
has loaded numpy anyway.

topk.top reads impact-ordered lists a posting at a time in Python and stops once the top is certain; at
100,000 memories the keyword channel still took ~11 ms of a warm search's CPU (p50 of 200 generated
prompts in three scopes), the largest part of a hybrid search once the vector scan was cut
(bench/results/vector-scan-2026-12-02.md). Here each list adds its shares into one array of all
documents, a few array operations per list: ~2.5 ms for the same searches. The result is the same,
score for score: a document's sum adds its lists' shares in the order a full walk adds them (topk.top
scores its candidates that way), so the same documents come out on top with the same scores, ties to
the earlier as there (tests/test_topk.py; all 600 of those searches alike).

Not for the keyword-only paths (the cold hook, a keyword-only warm process): they never import numpy
(docs/architecture.md, the prompt path).
"""

from __future__ import annotations

import numpy as np

from .topk import Term


def top(terms: list[Term], excluded: np.ndarray, limit: int) -> list[tuple[int, float, int]]:
    """topk.top's answer: the `limit` best documents not `excluded` (a bool per document number) by the sum
    of `terms`, as (document, score, which terms hold it as bits), best first, ties to the earlier one."""
    if limit <= 0:
        return []
    scores = np.zeros(len(excluded))
    for term in terms:
        for leaf, (offset, postings) in term.parts.items():
            docs = _array(postings.docs)
            shares = np.asarray(term.shares[leaf])[_array(postings.cls)]
            scores[docs + offset if offset else docs] += shares  # a list holds a document once
    np.putmask(scores, excluded, 0.0)
    found = np.flatnonzero(scores > 0.0)  # every share is positive: a document any list holds is above 0
    if len(found) > limit:
        kth = np.partition(scores[found], len(found) - limit)[len(found) - limit]
        found = found[scores[found] >= kth]  # all that tie with the limit-th, for the tie rule below
    best = found[np.lexsort((found, -scores[found]))[:limit]]
    return list(zip(best.tolist(), scores[best].tolist(), _held(terms, best)))


def _held(terms: list[Term], docnums: np.ndarray) -> list[int]:
    """Which of `terms` hold each of `docnums`, as bits (topk.top's)."""
    bits = [0] * len(docnums)
    for j, term in enumerate(terms):
        for offset, postings in term.parts.values():
            docs = _array(postings.docs)
            local = docnums - offset
            at = np.minimum(np.searchsorted(docs, local), len(docs) - 1)
            for i in np.flatnonzero(docs[at] == local).tolist():
                bits[i] |= 1 << j
    return bits


def _array(values) -> np.ndarray:
    """An array('i'/'H'/'I') or a memoryview of an impact file, as numpy without a copy."""
    return np.frombuffer(values, dtype=getattr(values, "typecode", None) or values.format)
