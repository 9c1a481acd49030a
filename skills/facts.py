"""Capture of fact changes: what a user says moved ("Acme moved to İzmir", "Acme artık İzmir'de") is proposed
as a change to the entity's fact note, and a `fact` memory a fact note now contradicts is proposed for
supersede; both into the inbox (skills/capture.py), never straight into recall. No model.

Precision first: only a few sentence shapes count, the entity and the new value must be written as names
(capitalised), and a sentence starting with a pronoun or an article ("The button moved to the left", "It
moved to Slack") is not about an entity. A contradiction needs a memory naming the entity and a value the
note holds as history, and not its current value.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import NamedTuple

from hafiza.vault import facts
from hafiza.vault.format import model
from hafiza.vault.errors import HafizaError
from hafiza.vault.format.layout import memory_rel
from hafiza.vault.review import Action
from hafiza.vault.guard.secrets import held_secret
from hafiza.vault.format.text import fold_text

LOCATION = "based in"
CONFIDENCE = 0.8
_UP = "A-ZÇĞİÖŞÜ"
_NAME = rf"[{_UP}][\w.&-]*(?:\s+[{_UP}][\w.&-]*){{0,3}}"   # one to four capitalised words: Acme A.Ş.
_SUFFIX = r"(?:'|’)?(?:y?[ae]|d[ae]|t[ae])"                       # İzmir'e, İzmir'de, Ankara'ya
_SHAPES = [
    re.compile(rf"^(?P<entity>{_NAME})\s+(?:has\s+|have\s+|just\s+)?(?:moved|relocated)\s+(?:to|into)\s+(?P<value>{_NAME})"
               r"(?:\s+(?:on|in|since|last|this)\b.*)?[.!]?$"),
    re.compile(rf"^(?P<entity>{_NAME})\s+(?:is|are)\s+now\s+(?:based|located)\s+in\s+(?P<value>{_NAME})[.!]?$"),
    re.compile(rf"^(?P<entity>{_NAME})\s+artık\s+(?P<value>{_NAME}){_SUFFIX}\s*(?:bulunuyor|yerleşik|çalışıyor)?[.!]?$"),
    re.compile(rf"^(?P<entity>{_NAME})\s+(?:\S+\s+)?(?P<value>{_NAME}){_SUFFIX}\s+taşındı(?:lar)?[.!]?$"),
]
# Sentences end where the next starts with a capital: "Acme A.Ş. artık İzmir'de." is one.
_SENTENCES = re.compile(rf"(?<=[.!?])\s+(?=[{_UP}])|\n+")
# Not entities: a sentence that starts with one of these describes something else.
_NOT_NAMES = frozenset(fold_text(w) for w in """the a an it this that these those we i you he she they our my your
his her their there here then bu şu o biz ben sen siz onlar bizim benim dosya buton""".split())


class FactChange(NamedTuple):
    entity: str
    attribute: str
    value: str
    quote: str


def changes(text: str) -> list[FactChange]:
    """The fact changes stated in one user turn, in order."""
    out = []
    for sentence in _SENTENCES.split(text):
        sentence = sentence.strip().strip("\"'“”‘’«»`").strip()
        if sentence.endswith("?") or len(sentence) > 200:
            continue
        for shape in _SHAPES:
            m = shape.match(sentence)
            if m and fold_text(m.group("entity").split()[0]) not in _NOT_NAMES:
                entity, value = m.group("entity").strip(" ,"), m.group("value").strip(" .,")
                if fold_text(entity) != fold_text(value):
                    out.append(FactChange(entity, LOCATION, value, sentence))
                break
    return out


def proposals(vault, turns, decided: set, now: dt.datetime | None = None) -> list[Action]:
    """A proposed fact-note change for each fact change the user stated, unless decided before, already
    the current value, or holding a secret; then a supersede for each `fact` memory a note contradicts."""
    actions, planned = [], {}
    for turn in turns:
        if turn.role != "user":
            continue
        for change in changes(turn.text):
            action = _change(vault, change, turn, decided, planned)
            if action is not None:
                decided.add(action.key)
                actions.append(action)
    return actions + contradicted(vault, decided)


def _change(vault, change: FactChange, turn, decided: set, planned: dict) -> Action | None:
    key = "capture-fact:" + model.content_hash(fold_text(f"{change.entity}|{change.attribute}|{change.value}"))[:16]
    if key in decided or held_secret(change.quote):
        return None
    try:
        entity, attribute, value = facts.check_input(change.entity, change.attribute, change.value)
        try:
            note = planned.get(facts.key(entity)) or facts.find(vault.root, entity)
        except HafizaError:
            note = facts.new_note(entity, None)
            note.path = facts.free_path(vault.root, entity)
        since = facts.check_date(turn.time[:10] or None)
        note, done = facts.apply(note, attribute, value, since)
    except HafizaError:
        return None  # a value that reads as a date range, a change dated before the current value began
    if not done.changed:
        return None
    planned[facts.key(entity)] = note
    rel = f"{facts.FACTS}/{note.slug}.md"
    was = f" (was {done.old.value})" if done.old else ""
    when = turn.time[:16].replace("T", " ")
    return Action("fact", f"capture fact {note.slug}: {done.attribute} = {value}{was}", key,
                  {rel: facts.dump(note).encode("utf-8")},
                  reason=f"the user said it changed ({turn.client} session {turn.session}, {when})",
                  evidence=f"{turn.client}:{turn.session} {turn.time}: \"{' '.join(change.quote.split())[:300]}\"",
                  confidence=CONFIDENCE, guards=("stated change", "secret guard"),
                  ids=(f"fact:{note.slug}/{facts.attribute_slug(done.attribute)}",), body=f"> {change.quote}")


def contradicted(vault, decided: set) -> list[Action]:
    """A supersede proposal for each active `fact` memory that names an entity and one of its earlier values
    but not the current one: the note has the newer value, the memory still says the old."""
    from hafiza.indexer.index import Index

    notes, _ = facts.load_all(vault.root)
    if not notes:
        return []
    # The catalog says which memories are active facts: only those are read, not every memory's YAML.
    memories = []
    for row in Index(vault.root, notice=lambda _: None).catalog(type="fact", status="active"):
        try:
            memories.append(vault.get(row["id"]))
        except HafizaError:
            continue  # gone or broken since the catalog was read
    memories = [m for m in memories if m.type == "fact" and m.active]
    actions = []
    for memory in memories:
        text = _words(f"{memory.title} {memory.body}")
        for note in notes:
            if not any(_words(name) in text for name in note.names()):
                continue
            for attribute in note.attributes:
                action = _supersede(memory, note, attribute, text, decided)
                if action is not None:
                    decided.add(action.key)
                    actions.append(action)
                    break
            else:
                continue
            break
    return actions


def _supersede(memory, note, attribute, text: str, decided: set) -> Action | None:
    current = attribute.current
    if current is None or _words(current.value) in text:
        return None
    old = next((e for e in attribute.history if _words(e.value) in text), None)
    if old is None or (current.since and len(current.since) == 10 and memory.created.isoformat() > current.since):
        return None  # written after the change: the memory may know better than the note
    target = f"fact:{note.slug}/{facts.attribute_slug(attribute.name)}"
    key = f"supersede-fact:{memory.id}:{target}:{model.content_hash(facts.key(current.value))[:8]}"
    if key in decided:
        return None
    day = dt.date.today()
    data = model.dump(memory.evolve(status="superseded", superseded_by=target, updated=day)).encode("utf-8")
    rel = memory_rel(memory)
    return Action("supersede", f"capture supersede {memory.id} (contradicted by {target})", key, {rel: data},
                  reason=f"{note.entity}'s {attribute.name} is {current.value} since {current.since or '?'}; the "
                         f"memory still says {old.value} ({facts.FACTS}/{note.slug}.md)",
                  evidence=facts.describe(attribute, note.entity), confidence=CONFIDENCE,
                  guards=("entity named", "earlier value named", "current value absent"), ids=(memory.id,))


def _words(text: str) -> str:
    """Folded words joined by single spaces and padded, so `in` tests whole words: ' acme a s '."""
    return " " + " ".join(re.findall(r"\w+", fold_text(text))) + " "
