"""Decay to archive: a memory of a decaying type that nobody has used for long, proposed for archive.

Never identity, rule or fact (they do not decay), and never anything used
within its half-life. Archive is a status: the file and its history stay, and
`hafiza search --include-inactive` still finds it.
"""

from __future__ import annotations

from hafiza.vault.store import usage

from .corpus import Corpus
from .findings import Finding

NEVER = ("identity", "rule", "fact")
AGE_HALF_LIVES = 2        # older than twice its half-life
OFTEN_SHOWN = 10          # shown this often and never used: recall keeps offering it and nobody takes it


def find(corpus: Corpus, pending: dict | None = None) -> list[Finding]:
    """`pending`: usage not yet folded into the files (id -> counts), so a use this morning counts."""
    found = []
    for e in corpus.active:
        m = e.memory
        if m.type in NEVER or not m.half_life:
            continue
        counts = usage.total(m.shown, m.used, m.last_used, (pending or {}).get(m.id))
        age = (corpus.today - m.created).days
        if age <= AGE_HALF_LIVES * m.half_life:
            continue
        if counts.last_used is not None and (corpus.today - counts.last_used).days <= m.half_life:
            continue
        never = counts.used == 0
        idle = (corpus.today - counts.last_used).days if counts.last_used else None
        how = (f"shown {counts.shown} times and never used" if never and counts.shown else
               "never shown or used" if never else f"last used {idle} days ago")
        confidence = 0.9 if never and counts.shown >= OFTEN_SHOWN else 0.8 if never else 0.7
        found.append(Finding(
            "archive", (m.id,),
            f"{m.id} is a {m.type} memory {age} days old (half-life {m.half_life:.0f} days), {how}",
            f"created {m.created}, shown {counts.shown}, used {counts.used}, last used {counts.last_used or 'never'}",
            confidence, f"archive:{m.id}", guards=("decaying-type", "unused-for-a-half-life", "older-than-2-half-lives"),
            data={"reason": f"unused: {how}"}))
    return found
