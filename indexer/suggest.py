"""Aliases to suggest for a memory, from the vault's own vocabulary (issue 34, lever 3: `hafiza remember`).

An alias is how someone will ask for a memory in other words. The lexicon (lexicon.py) knows which words name
the same thing; the vault knows which of them this team uses. So the suggestions are the other wordings of the
concepts a memory names that other memories of the vault use and this one does not, the most used first. They
are shown, never written: the person adds the ones they would type (`hafiza alias`).
"""

from __future__ import annotations

from pathlib import Path

from .lexicon import groups, lexicon
from .stopwords import informative
from .text import prefix, terms


def alias_suggestions(root: Path, text: str, limit: int = 6) -> list[str]:
    """Up to `limit` phrases for a memory of `text` (its title, tags and body) in the vault at `root`."""
    from .index import Index

    own = set(terms(text))
    own |= {cut for cut in map(prefix, own) if cut}  # "deploy" is no other wording of "deployment"
    index = Index(root, notice=lambda _: None)
    named = lexicon(index.sidecar).concepts(terms(text))
    if not named:
        return []
    wordings = groups()  # read once: ~16 ms for the 1,517 groups
    ix = index.open()
    reader = ix.reader()
    try:
        fields = ("title", "aliases", "tags", "body")
        scored = {}
        for concept in named:
            for phrase in wordings.get(concept, ()):
                words = informative(terms(phrase))
                if not words or all(w in own or prefix(w) in own for w in words) or phrase in scored:
                    continue
                # Used by the vault: every word of the phrase in some memory, counted by its rarest word.
                used = min(max(reader.doc_frequency(f, w) for f in fields) for w in words)
                if used:
                    scored[phrase] = used
    finally:
        reader.close()
    return sorted(scored, key=lambda p: (-scored[p], p))[:limit]
