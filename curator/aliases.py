"""Aliases: the short phrases people would type for a memory, asked of a model offline, checked by code.

This is how a prompt that shares no word with its memory reaches it without a
model on the prompt path: measured on an independent TR/EN set, aliases
written by a model that never saw the prompts raised paraphrase recall@2
0.31 -> 0.46 with chitchat silence 1.00 -> 0.98.
"""

from __future__ import annotations

from hafiza.vault.guard import secrets
from hafiza.vault.errors import SecretRefused
from hafiza.vault.format.inputs import MAX_ALIAS_CHARS
from hafiza.vault.format.text import fold_text

from .corpus import Corpus, Entry
from .findings import Finding

PER_MEMORY = 6
MIN_CHARS = 3
SCHEMA = {
    "type": "object",
    "required": ["aliases"],
    "properties": {"aliases": {"type": "array", "maxItems": 12,
                               "items": {"type": "string", "maxLength": 200}}},
}
SYSTEM = ("You write search aliases for notes in a developer's memory for AI coding agents. Answer only with JSON.")


def wanting(corpus: Corpus) -> list[Entry]:
    """Active memories without aliases, the most used first (their recall matters most)."""
    return sorted((e for e in corpus.active if not e.memory.aliases),
                  key=lambda e: (-e.memory.used, -e.memory.shown, e.id))


def propose(provider, corpus: Corpus, e: Entry) -> Finding | None:
    answer = provider.ask(_prompt(e), SCHEMA, system=SYSTEM)
    kept, dropped = check(answer.data["aliases"], e, corpus)
    if not kept:
        return None
    note = f"; dropped {len(dropped)} ({', '.join(dropped[:3])})" if dropped else ""
    return Finding("add-aliases", (e.id,), f"phrases people may type for {e.id}: {', '.join(kept)}",
                   f"model-written, {len(kept)} kept{note}", 0.8, f"add-aliases:{e.id}",
                   guards=("no-secret", f"<= {MAX_ALIAS_CHARS} chars", "not-another-title"),
                   data={"aliases": kept})


def check(phrases, e: Entry, corpus: Corpus) -> tuple[list[str], list[str]]:
    """The phrases code lets through: no secret, bounded length, not this or another memory's title,
    no repeats; (kept, dropped with why)."""
    titles = {fold_text(x.memory.title): x.id for x in corpus.entries}
    kept, dropped, seen = [], [], set()
    for raw in phrases:
        phrase = " ".join(str(raw).split())
        key = fold_text(phrase)
        why = None
        if len(phrase) < MIN_CHARS or len(phrase) > MAX_ALIAS_CHARS:
            why = "length"
        elif key in seen:
            why = "repeat"
        elif key in titles:
            why = "a title" if titles[key] == e.id else f"the title of {titles[key]}"
        else:
            try:
                secrets.check(phrase, "alias")
            except SecretRefused:
                why = "looks like a secret"
        if why:
            dropped.append(f"{phrase[:30]!r}: {why}")
            continue
        seen.add(key)
        kept.append(phrase)
    return kept[:PER_MEMORY], dropped


def _prompt(e: Entry) -> str:
    m = e.memory
    return (f"Note (type {m.type}):\n{m.title}\n{m.body[:1200]}\n\n"
            f"Write up to {PER_MEMORY} short phrases (2-6 words) a developer would type to an AI coding agent "
            "when this note is what they need, in Turkish and in English, using words the note itself does "
            "not use where possible. No full sentences, no secrets. "
            'Answer as JSON: {"aliases": [str]}')
