"""A fact note's index documents: one per attribute with a current value, typed `fact`.

Recall then treats each current attribute like a memory (keyword and meaning channels, the fence, at most
two facts a prompt: hooks/render.py), and the document's text carries the history ("was Ankara 2024-02 →
2026-11-03"), so a question about where something was before finds the attribute and the hit shows it.
"""

from __future__ import annotations

import datetime as dt

from hafiza.vault import facts
from hafiza.vault.format.paths import FACT_DOC

from .schema import ALIAS_SEPARATOR, SNIPPET_CHARS, indexed_body

# A history is asked for in these words ("where was Acme previously", "Acme eskiden neredeydi"); "before" and
# "önce" are stop words (indexer/stopwords.py), so the words that do carry the question are the note's aliases.
HISTORY_WORDS = ("previously", "formerly", "earlier", "history", "eskiden", "önceden", "önceki", "geçmiş")


def documents(note: facts.Note, digest: str, cache=None) -> list[dict]:
    """The index fields of each current attribute of `note` (see indexer/index.py `document`; `cache` too)."""
    from .lexicon import concepts_text
    from .search import query_terms
    from .text import prefixes

    out = []
    today = dt.date.today()
    created = (note.created or note.updated or today).isoformat()
    for attribute in note.attributes:
        current = attribute.current
        if current is None:
            continue
        aliases = list(dict.fromkeys([*note.names(), attribute.name] + (list(HISTORY_WORDS) if attribute.history else [])))
        body = facts.describe(attribute)
        # When the value last changed, where that is a day; else when the note was.
        updated = current.since if current.since and len(current.since) == 10 else (note.updated or today).isoformat()
        out.append({
            "id": f"{FACT_DOC}{note.slug}/{facts.attribute_slug(attribute.name)}",
            "title": f"{note.entity}: {attribute.name}",
            "_stored_title": f"{note.entity}: {attribute.name}",
            "aliases": ALIAS_SEPARATOR.join(aliases),
            "alias_terms": [terms for terms in map(query_terms, aliases) if terms],
            "tags": note.kind or "",
            "body": indexed_body(body, note.scope),
            "prefixes": prefixes(words := " ".join((note.entity, attribute.name, " ".join(aliases), body))),
            "concepts": concepts_text(words, cache),
            "type": "fact",
            "scope": note.scope,
            "status": "active",
            "created": created,
            "updated": updated,
            "last_used": None,
            "shown": 0,
            "used": 0,
            "half_life": None,  # the current value of a fact never decays (docs/architecture.md, memory types)
            "snippet": body[:SNIPPET_CHARS],
            "path": f"{facts.FACTS}/{note.slug}.md",
            "supersedes": [],
            "superseded_by": None,
            "verified": None,
            "verified_note": None,
            "hash": digest,
            "chars": len(body),
        })
    return out
