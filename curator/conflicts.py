"""Related pairs: possible duplicates and contradictions; a model may judge, code decides.

Pairs close by meaning, or sharing uncommon words, that the duplicates pass
did not merge. Without a model they are only reported ("possible duplicate"
or "possible conflict, needs a person or a model"). With one, the model says
whether they say the same thing, and if not which memory is current,
whether it covers everything the other says, whether both are about the
same subject, and how sure it is. A supersede is proposed only past every
guard, each written after a real failure of a published curator (right on
~55% of unguarded decisions, every error confident):

- same subject needs >= 2 shared uncommon terms, or entities the model names
  that appear verbatim in both texts (one shared word once retired a fact
  about a different product);
- a rule or identity never loses to a memory of another kind (an event);
- only full coverage supersedes (a note resolving one of six open decisions
  once retired all six);
- confidence >= 0.75;
- a verdict that would retire the newer memory is reported for a person,
  never proposed as a change;
- a pair a person rejected is never proposed again (the caller drops ruled keys).

A duplicate verdict merges (duplicates.keeper decides which stays) only with
evidence code can see: close by meaning (a translation shares no words) or
two shared uncommon terms, no differing numbers or `code`, and the same
confidence floor.
"""

from __future__ import annotations

from hafiza.vault.format.text import fold_text

from .corpus import MUTUAL, Corpus, Entry
from .duplicates import different_facts, jaccard, keeper, similarity, why_kept
from .findings import Finding, pair_key

MIN_CONFIDENCE = 0.75
MIN_SHARED = 2
RELATED_ALONE = 0.75  # cosine that makes a pair related without a shared word (a translation)
SAME_MEANING = 0.55   # cosine that counts as "about the same thing" for a duplicate verdict
STRONG = ("rule", "identity")
VERDICT = {
    "type": "object",
    "required": ["same_subject", "duplicate", "current", "coverage", "confidence"],
    "properties": {
        "same_subject": {"type": "boolean"},
        "duplicate": {"type": "boolean"},
        "current": {"enum": ["A", "B", "both", "neither"]},
        "coverage": {"enum": ["full", "partial", "none"]},
        "shared": {"type": "array", "items": {"type": "string", "maxLength": 80}, "maxItems": 10},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "why": {"type": "string", "maxLength": 400},
    },
}
SYSTEM = ("You compare two notes from a developer's memory for an AI coding agent. Answer only with JSON. "
          "Judge only from the two texts.")


def candidates(corpus: Corpus, skip: set[frozenset]) -> list[tuple[Entry, Entry, set[str], float | None]]:
    """(older, newer, shared terms, cosine) for same-scope pairs close by meaning or sharing uncommon words."""
    out = []
    for a, b, cosine in corpus.pairs():
        if frozenset((a.id, b.id)) in skip or a.memory.scope != b.memory.scope or a.folded == b.folded:
            continue
        shared = corpus.informative_shared(a, b)
        if cosine is not None:
            # By meaning: each other's nearest, or very close. Every pair among a memory's 8 nearest at cosine
            # >= 0.5 that shared a term listed 83 pairs on bench/related, 61% of them real; mutual nearest
            # neighbours list 78, 73% real, and find more (58 of 65 against 52: a translation shares no term);
            # on bench/curate 49% real instead of 27%: bench/results/curate-2026-12-07.md.
            related = cosine >= RELATED_ALONE or (cosine >= MUTUAL and corpus.mutual(a, b))
        else:
            related = len(shared) >= MIN_SHARED and jaccard(a, b) >= 0.25
        if related:
            older, newer = sorted((a, b), key=lambda e: (_when(e), e.id))
            out.append((older, newer, shared, cosine))
    return out


def report(older: Entry, newer: Entry, shared: set[str], cosine: float | None) -> Finding:
    what = "conflict" if different_facts(older, newer) else "duplicate or conflict"
    return Finding("related", (older.id, newer.id),
                   f"possible {what}: {older.id} and {newer.id} ({', '.join(sorted(shared)[:4]) or 'close by meaning'})",
                   similarity(cosine, jaccard(older, newer), sorted(shared)[:8]), 0.5,
                   pair_key("related", older.id, newer.id), proposable=False)


def judge(provider, older: Entry, newer: Entry, shared: set[str], cosine: float | None = None) -> Finding:
    """Ask the model about one pair and turn its verdict into a merge or supersede proposal, or a report
    line saying which guard stopped it. Raises the provider's errors (the caller counts and goes on)."""
    answer = provider.ask(_prompt(older, newer), VERDICT, system=SYSTEM)
    verdict = answer.data
    quoted = " ".join(str(verdict.get("why") or "").split())[:200]
    said = (f"model: duplicate={verdict['duplicate']}, current={verdict['current']}, coverage={verdict['coverage']}, "
            f"same subject={verdict['same_subject']}, confidence {verdict['confidence']:.2f}"
            + (f", \"{quoted}\"" if quoted else ""))
    if verdict["duplicate"]:
        return _duplicate(verdict, older, newer, shared, cosine, said)
    current, retired = {"A": (older, newer), "B": (newer, older)}.get(verdict["current"], (None, None))
    stop, passed = guard(verdict, older, newer, shared, current, retired)
    if stop:
        return _stopped(older, newer, stop, said, verdict, passed)
    return Finding("supersede", (current.id, retired.id),
                   f"{retired.id} is replaced by {current.id}: {quoted or 'the newer statement of the same fact'}",
                   said, float(verdict["confidence"]), pair_key("supersede", retired.id, current.id, ordered=True),
                   guards=tuple(passed))


def _duplicate(verdict, older: Entry, newer: Entry, shared: set[str], cosine, said: str) -> Finding:
    passed = []
    if different_facts(older, newer):
        return _stopped(older, newer, "they name different numbers or code: two facts, not one", said, verdict, passed)
    passed.append("same-numbers-and-code")
    if not ((cosine is not None and cosine >= SAME_MEANING) or len(shared) >= MIN_SHARED):
        return _stopped(older, newer, "neither close by meaning nor sharing 2 uncommon terms", said, verdict, passed)
    passed.append("same-subject")
    if verdict["confidence"] < MIN_CONFIDENCE:
        return _stopped(older, newer, f"confidence {verdict['confidence']:.2f} is below {MIN_CONFIDENCE}", said,
                        verdict, passed)
    passed.append(f"confidence>={MIN_CONFIDENCE}")
    kept = keeper([older, newer])
    other = newer if kept is older else older
    return Finding("merge-duplicate", (kept.id, other.id),
                   f"{other.id} says what {kept.id} says; keeping {kept.id} ({why_kept(kept, other)})",
                   f"{similarity(cosine, jaccard(older, newer), sorted(shared)[:6])}; {said}",
                   float(verdict["confidence"]), pair_key("merge-duplicate", kept.id, other.id), guards=tuple(passed))


def _stopped(older: Entry, newer: Entry, stop: str, said: str, verdict: dict, passed) -> Finding:
    return Finding("related", (older.id, newer.id), f"not changed: {stop}", said, float(verdict["confidence"]),
                   pair_key("related", older.id, newer.id), guards=tuple(passed), proposable=False,
                   data={"stopped": stop})


def guard(verdict: dict, older: Entry, newer: Entry, shared: set[str], current, retired) -> tuple[str | None, list]:
    """(why the verdict may not be applied, or None; the guards it passed)."""
    passed = []
    if current is None:
        return f"the model named no single current memory ({verdict['current']})", passed
    named = [s for s in verdict.get("shared") or [] if _verbatim(s, older) and _verbatim(s, newer)]
    if not verdict["same_subject"] or len(shared | {fold_text(s) for s in named}) < MIN_SHARED:
        return "not shown to be about the same subject (fewer than 2 shared terms or entities)", passed
    passed.append("same-subject")
    if retired.memory.type in STRONG and current.memory.type not in STRONG:
        return f"a {retired.memory.type} never loses to a {current.memory.type} memory", passed
    passed.append("rule-not-retired-by-event")
    if verdict["coverage"] != "full":
        return f"the current memory covers the other only {verdict['coverage']}ly", passed
    passed.append("full-coverage")
    if verdict["confidence"] < MIN_CONFIDENCE:
        return f"confidence {verdict['confidence']:.2f} is below {MIN_CONFIDENCE}", passed
    passed.append(f"confidence>={MIN_CONFIDENCE}")
    if retired is newer:
        return "the verdict would retire the newer memory; a person must decide that", passed
    passed.append("retires-the-older")
    return None, passed


def _verbatim(phrase: str, e: Entry) -> bool:
    """The model's argument counts only if it appears in the memory's own text."""
    folded = " ".join(fold_text(phrase).split())
    return bool(folded) and folded in fold_text(f"{e.memory.title} {e.folded}")


def _when(e: Entry):
    return e.memory.updated or e.memory.created


def _prompt(older: Entry, newer: Entry) -> str:
    def block(label, e):
        m = e.memory
        return (f"{label} (id {m.id}, type {m.type}, written {m.created}, updated {_when(e)}):\n"
                f"{m.title}\n{m.body[:1500]}")

    return "\n\n".join([
        block("A", older), block("B", newer),
        "Questions: Do A and B say the same thing, perhaps in other words or another language (duplicate)? "
        "Are they about the same subject (same system, setting or decision)? If they disagree, "
        "which one is current (A, B, both if they do not conflict, neither)? Does the current one cover "
        "everything the other says (full), only some of it (partial), or none? List the entities or topics "
        "both texts name, copied exactly as written. Give your confidence from 0 to 1 and one sentence why.",
        'Answer as JSON: {"same_subject": bool, "duplicate": bool, "current": "A"|"B"|"both"|"neither", "coverage": '
        '"full"|"partial"|"none", "shared": [str], "confidence": number, "why": str}'])

