"""Duplicates: the same text after folding, or the same fact reworded (in one language or across two).

Exact duplicates are found by their folded body (the index's own folding:
case, Turkish letters, diacritics, spacing). Near duplicates need two kinds
of evidence to agree: the meaning channel's cosine (which alone also pairs
"staging uses port 5433" with "production uses port 5432") and the words
they share; a pair that names different numbers or different `code` is two
facts, never a duplicate. Reworded and cross-language duplicates that fall
short are found as related pairs (conflicts.py): listed, or judged by a model.
"""

from __future__ import annotations

from collections import defaultdict

from .corpus import Corpus, Entry
from .findings import Finding, pair_key

# Without a model a near duplicate is proposed only when words and meaning both nearly agree. On
# bench/curate (USE multilingual, short notes) reworded duplicates sit at cosine 0.54-0.81, among
# contradictions (0.53-0.85: "default currency TRY" / "...EUR" at 0.82) and unrelated pairs; the best
# threshold proposed 0 right and 1 wrong merge. So the rest are listed as related pairs for a person, or
# judged by a model behind guards (conflicts.py), which merged 11 of 14. bench/results/curate-* has it.
COSINE_NEAR = 0.90
JACCARD_WITH_COSINE = 0.5
JACCARD_ALONE = 0.8        # no vectors (HAFIZA_EMBEDDER=none): words alone


def find(corpus: Corpus) -> list[Finding]:
    found, paired = [], set()
    for finding in exact(corpus) + near(corpus):
        pair = frozenset(finding.ids)
        if pair not in paired:
            paired.add(pair)
            found.append(finding)
    return found


def exact(corpus: Corpus) -> list[Finding]:
    groups: dict[tuple, list[Entry]] = defaultdict(list)
    for e in corpus.active:
        groups[(e.memory.scope, e.folded)].append(e)
    found = []
    for group in groups.values():
        if len(group) < 2:
            continue
        kept = keeper(group)
        for other in group:
            if other is kept:
                continue
            spacing_only = _spaced(kept) == _spaced(other)
            how = "the same text" if spacing_only else "the same text after folding case and Turkish letters"
            found.append(Finding(
                "merge-duplicate", (kept.id, other.id),
                f"{other.id} says {how} as {kept.id}; keeping {kept.id} ({why_kept(kept, other)})",
                f"exact duplicate{'' if spacing_only else ' (folded)'}: {kept.id} = {other.id}",
                1.0 if spacing_only else 0.98, pair_key("merge-duplicate", kept.id, other.id),
                guards=("same-scope", "same-text"), exact=spacing_only))
    return found


def near(corpus: Corpus) -> list[Finding]:
    found = []
    for a, b, cosine in corpus.pairs():
        if a.memory.scope != b.memory.scope or a.folded == b.folded or different_facts(a, b):
            continue
        overlap = jaccard(a, b)
        if not is_near(cosine, overlap):
            continue
        kept = keeper([a, b])
        other = b if kept is a else a
        shared = sorted(corpus.informative_shared(a, b))[:6]
        evidence = similarity(cosine, overlap, shared)
        confidence = min(0.95, max(cosine or 0.0, overlap))
        found.append(Finding(
            "merge-duplicate", (kept.id, other.id),
            f"{other.id} restates {kept.id}; keeping {kept.id} ({why_kept(kept, other)})",
            evidence, confidence, pair_key("merge-duplicate", kept.id, other.id),
            guards=("same-scope", "same-numbers", "same-code")))
    return found


def similarity(cosine: float | None, overlap: float, shared) -> str:
    return ((f"cosine {cosine:.2f}" if cosine is not None else "no vectors") + f", word overlap {overlap:.2f}"
            + (f" ({', '.join(shared)})" if shared else ""))


def is_near(cosine: float | None, overlap: float) -> bool:
    if cosine is None:
        return overlap >= JACCARD_ALONE
    return cosine >= COSINE_NEAR and overlap >= JACCARD_WITH_COSINE


def different_facts(a: Entry, b: Entry) -> bool:
    """Two similar texts where each names a value the other lacks (5433 / 6543, TRY / EUR, `npm` / `pnpm`)
    are two facts, or a contradiction, never one. A value only one side adds is a detail, not a change."""
    return _both_sides(a.numbers, b.numbers) or _both_sides(a.code, b.code)


def _both_sides(x: frozenset, y: frozenset) -> bool:
    return bool(x - y) and bool(y - x)


def jaccard(a: Entry, b: Entry) -> float:
    union = a.terms | b.terms
    return len(a.terms & b.terms) / len(union) if union else 0.0


def keeper(group: list[Entry]) -> Entry:
    """The memory a merge keeps: the one agents used most (its id is the one they know), then the more
    specific (longer), then the older (links and supersessions already name it)."""
    return max(group, key=lambda e: (e.memory.used, len(_spaced(e)), -e.memory.created.toordinal(), e.id))


def why_kept(kept: Entry, other: Entry) -> str:
    if kept.memory.used != other.memory.used:
        return f"used {kept.memory.used} times against {other.memory.used}"
    if len(_spaced(kept)) != len(_spaced(other)):
        return "the more specific text"
    if kept.memory.created != other.memory.created:
        return "the older one"
    return "either would do"


def _spaced(e: Entry) -> str:
    return " ".join(e.memory.body.split())
