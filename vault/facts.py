"""Fact notes: one markdown file per person, client, project or service under facts/, holding its current
attributes and their dated history. The file is the truth; a person edits it in any editor:

    ---
    entity: Acme A.Ş.
    kind: client
    aliases: [Acme]
    created: 2024-02-01
    updated: 2026-11-03
    ---
    Free notes about Acme, kept as written.

    ## based in
    - İzmir (since 2026-11-03)
    - Ankara (2024-02 → 2026-11-03)

Every `## ` section is an attribute; it lists its values newest first: the first one without an end date is the
current value, the others its history. A change adds one line at the top of its section and closes the
line below it (`since X` becomes `X → Y`), so a diff shows exactly what changed and when; removing an
attribute only closes its current value, so it has none (no longer recalled or shown as current). Nothing is
ever removed (docs/architecture.md: facts change; supersede, never delete, and show history). Dates may
be a year, a month or a day. Frontmatter keys hafiza does not know, and lines it does not read inside a
section, are kept on rewrite.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .errors import FrontmatterError, HafizaError, MemoryNotFound
from .format.ids import slugify, transliterate
from .format.paths import FACT_DOC, FACTS
from .format.text import fold_text

KNOWN_KEYS = ("entity", "kind", "aliases", "scope", "created", "updated")
MAX_NAME_CHARS = 120   # an entity's or an attribute's name: a heading, not a paragraph
MAX_VALUE_CHARS = 300  # a value stands on one line of the note
DATE = r"\d{4}(?:-\d{2}(?:-\d{2})?)?"
_DATE = re.compile(rf"^{DATE}$")
ARROW = "→"
_ENTRY = re.compile(rf"^[-*]\s+(?P<value>.*?)(?:\s*\((?:since\s+(?P<since>{DATE})|(?P<start>{DATE})?\s*(?:→|->)\s*"
                    rf"(?P<end>{DATE})?)\))?\s*$")
_SECTION = re.compile(r"^##\s+(?P<name>\S.*?)\s*#*\s*$")


@dataclass(frozen=True)
class Entry:
    """One value an attribute had, from `since` until `until` (None: still current, or not known)."""

    value: str
    since: str | None = None
    until: str | None = None

    def line(self, current: bool) -> str:
        if current:
            return f"- {self.value}" + (f" (since {self.since})" if self.since else "")
        span = f"{self.since or ''} {ARROW} {self.until or ''}".strip()
        return f"- {self.value} ({span})"

    def span(self) -> str:
        """'2024-02 → 2026-11-03', for one line of history."""
        return f"{self.since or '?'} {ARROW} {self.until or '?'}"


@dataclass
class Attribute:
    name: str
    entries: list[Entry] = field(default_factory=list)   # newest first
    other: list[str] = field(default_factory=list)        # lines of the section that are not values: kept

    @property
    def current(self) -> Entry | None:
        return self.entries[0] if self.entries and self.entries[0].until is None else None

    @property
    def history(self) -> list[Entry]:
        return self.entries[1:] if self.current else list(self.entries)


@dataclass
class Note:
    entity: str
    kind: str | None = None
    aliases: list[str] = field(default_factory=list)
    scope: str = "global"
    created: dt.date | None = None
    updated: dt.date | None = None
    notes: str = ""                                        # the text before the first attribute
    attributes: list[Attribute] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)    # the user's own frontmatter keys, in order
    path: Path | None = None

    @property
    def slug(self) -> str:
        return self.path.stem if self.path else entity_slug(self.entity)

    def attribute(self, name: str) -> Attribute | None:
        wanted = key(name)
        return next((a for a in self.attributes if key(a.name) == wanted), None)

    def named(self, name: str) -> Attribute:
        """The attribute `name` (compared folded), or an error naming the ones the note has."""
        found = self.attribute(name)
        if found is None:
            names = ", ".join(a.name for a in self.attributes) or "none"
            raise HafizaError(f"{self.entity} has no attribute {name!r} (it has: {names})", field="attribute")
        return found

    def names(self) -> list[str]:
        """The entity's name and aliases: what a lookup or a prompt may call it."""
        return [self.entity, *self.aliases]


def key(name: str) -> str:
    """A name as lookups compare it: Turkish-aware folding, one space ("İzmir", "izmir" and "IZMIR" alike)."""
    return " ".join(fold_text(name).split())


def entity_slug(entity: str) -> str:
    """The note's file name (without .md): ASCII, safe on every file system ("Acme A.Ş." -> acme-a-s);
    `entity` for a name with no Latin letter or digit ("東京"), made unique by the writer."""
    return slugify(entity) if re.search(r"[a-z0-9]", transliterate(entity).lower()) else "entity"


def attribute_slug(name: str) -> str:
    return slugify(name)


def note_of(doc_id: str) -> str | None:
    """The vault-relative note a recalled fact's id names (`fact:acme-a-s/based-in` -> facts/acme-a-s.md)."""
    slug, _, attribute = doc_id.removeprefix(FACT_DOC).partition("/")
    if not doc_id.startswith(FACT_DOC) or not attribute or not slug or "/" in attribute or slug.startswith("."):
        return None
    return f"{FACTS}/{slug}.md"


def is_fact_path(rel: str) -> bool:
    """A fact note's vault-relative path: facts/<slug>.md."""
    return rel.startswith(f"{FACTS}/") and rel.endswith(".md") and rel.count("/") == 1


# ---- reading

def parse(text: str, path: Path | None = None) -> Note:
    """Parse one fact note; FrontmatterError names the path and why."""
    from .format import model

    where = path or "<text>"
    try:
        meta, body = model.split(text.strip())
    except Exception as exc:  # bad YAML, a list for frontmatter
        raise FrontmatterError(where, f"invalid frontmatter: {str(exc).splitlines()[0] if str(exc) else exc}") from None
    meta = dict(meta or {})
    entity = " ".join(str(meta.get("entity") or "").split())
    if not entity:
        raise FrontmatterError(where, "entity: missing (the name of the person, client, project or service)")
    try:
        created = model.as_date(meta.get("created"), "created")
        updated = model.as_date(meta.get("updated"), "updated")
    except ValueError as exc:
        raise FrontmatterError(where, str(exc)) from None
    aliases = meta.get("aliases") or []
    aliases = [str(a).strip() for a in (aliases if isinstance(aliases, list) else [aliases]) if str(a).strip()]
    scope = str(meta.get("scope") or "global").strip()
    if not model.SCOPE.match(scope):
        raise FrontmatterError(where, f"scope: {scope!r} must be 'global' or 'project:<name>'")
    notes, attributes = _body(body)
    return Note(entity=entity, kind=str(meta["kind"]) if meta.get("kind") else None, aliases=aliases,
                scope=scope, created=created, updated=updated, notes=notes,
                attributes=attributes, extra={k: v for k, v in meta.items() if k not in KNOWN_KEYS}, path=path)


def _body(body: str) -> tuple[str, list[Attribute]]:
    from .format.conflicts import readable

    notes: list[str] = []
    attributes: list[Attribute] = []
    for line in readable(body).split("\n"):  # a merge fence's lines are not values; both texts are
        heading = _SECTION.match(line)
        if heading:
            attributes.append(Attribute(heading.group("name")))
            continue
        if not attributes:
            notes.append(line)
            continue
        entry = _ENTRY.match(line.strip())
        if entry and entry.group("value"):
            attributes[-1].entries.append(Entry(entry.group("value").strip(), entry.group("since") or entry.group("start"),
                                                entry.group("end")))
        elif line.strip():
            attributes[-1].other.append(line.rstrip())
    return "\n".join(notes).strip("\n"), attributes


def read(path: Path) -> Note:
    """A fact note, parsed; Quarantined when it holds a secret (vault/guard/quarantine.py)."""
    from .format.model import read_note
    from .guard import quarantine

    return parse(quarantine.check(read_note(path), path), path)


def load_all(root: Path) -> tuple[list[Note], list[FrontmatterError]]:
    """Every fact note that parses, by file name, and an error per one that does not."""
    notes, errors = [], []
    for path in sorted((Path(root) / FACTS).glob("*.md")):
        try:
            notes.append(read(path))
        except FrontmatterError as exc:
            errors.append(exc)
    return notes, errors


def find(root: Path, entity: str) -> Note:
    """The note about `entity`, by its name or an alias compared folded, or by its file name (`acme-a-s`);
    else the one note whose name starts with those words ("Acme" for "Acme A.Ş."). Two such notes: an
    error naming both. (Names are not compared by slug: "東京" and "大阪" both slug to the fallback.)"""
    wanted = key(entity)
    notes, _ = load_all(root)
    for note in notes:
        if wanted in map(key, note.names()) or note.slug == entity.strip():
            return note
    starts = [n for n in notes if any(key(name).startswith(wanted + " ") for name in n.names())] if wanted else []
    if len(starts) == 1:
        return starts[0]
    if starts:
        raise HafizaError(f"{entity!r} may be any of {', '.join(n.entity for n in starts)}; give the whole name",
                          field="entity")
    raise MemoryNotFound(f"no fact note about {entity!r}; `hafiza fact list` shows them", field="entity")


# ---- writing

def dump(note: Note) -> str:
    """The note's file text: frontmatter (hafiza's keys, then the user's), notes, one section per attribute."""
    import yaml

    meta: dict[str, Any] = {"entity": note.entity}
    if note.kind:
        meta["kind"] = note.kind
    if note.aliases:
        meta["aliases"] = list(note.aliases)
    if note.scope != "global":
        meta["scope"] = note.scope
    for name in ("created", "updated"):
        if getattr(note, name):
            meta[name] = getattr(note, name)
    meta.update(note.extra)
    # One key a line, lists in brackets (as memories write them): a changed key is one changed line in a diff.
    header = "".join(yaml.safe_dump({k: v}, sort_keys=False, allow_unicode=True, width=1000,
                                    default_flow_style=isinstance(v, list)) for k, v in meta.items())
    parts = [note.notes.strip("\n")] if note.notes.strip() else []
    for attribute in note.attributes:
        lines = [f"## {attribute.name}"]
        lines += [e.line(current=i == 0 and e.until is None) for i, e in enumerate(attribute.entries)]
        lines += attribute.other
        parts.append("\n".join(lines))
    return f"---\n{header}---\n" + "\n\n".join(parts) + "\n"


def check_date(value: str | dt.date | None, what: str = "since") -> str:
    """A date as the note writes it: YYYY, YYYY-MM or YYYY-MM-DD (default: today)."""
    if value is None or value == "":
        return dt.date.today().isoformat()
    text = value.isoformat() if isinstance(value, dt.date) else str(value).strip()
    if not _DATE.match(text):
        raise HafizaError(f"{what}: {text!r} is not a date (YYYY-MM-DD, YYYY-MM or YYYY)", field=what)
    try:
        dt.date.fromisoformat(text + "-01-01"[len(text) - 4:] if len(text) < 10 else text)
    except ValueError:
        raise HafizaError(f"{what}: {text!r} is not a date", field=what) from None
    return text


def _name(value: str, what: str, most: int) -> str:
    if not isinstance(value, str):
        raise HafizaError(f"{what}: expected a string, got {value!r}", field=what)
    value = " ".join(value.split())
    if not value:
        raise HafizaError(f"{what} is empty", field=what)
    if len(value) > most:
        raise HafizaError(f"{what} has {len(value):,} characters; at most {most}", field=what)
    return value


def check_input(entity: str, attribute: str, value: str) -> tuple[str, str, str]:
    """Entity, attribute and value as a note holds them (one line each), or HafizaError naming the field."""
    entity = _name(entity, "entity", MAX_NAME_CHARS)
    attribute = _name(attribute, "attribute", MAX_NAME_CHARS)
    value = _name(value, "value", MAX_VALUE_CHARS)
    if _ENTRY.match(f"- {value}").group("value") != value:
        raise HafizaError(f"value: {value!r} ends in what reads as a date range; write it without the brackets",
                          field="value")
    return entity, attribute, value


@dataclass(frozen=True)
class Change:
    """What `apply` or `close` did: the attribute, its new current value (None: it has none now, removed), and
    the one it replaced (None: a first value, or none to remove; the same entry as `new`: nothing changed)."""

    attribute: str
    new: Entry | None
    old: Entry | None

    @property
    def changed(self) -> bool:
        return self.old != self.new


def apply(note: Note, attribute: str, value: str, since: str, today: dt.date | None = None) -> tuple[Note, Change]:
    """The note with `attribute` set to `value` from `since`: the current value moves into the history, closed
    at `since`; nothing is removed. Setting the value it already has changes nothing."""
    today = today or dt.date.today()
    found = note.attribute(attribute)
    new = Entry(value, since)
    if found is None:
        attributes = [*note.attributes, Attribute(attribute, [new])]
        return replace(note, attributes=attributes, updated=today), Change(attribute, new, None)
    current = found.current
    if current is not None and key(current.value) == key(value):
        return note, Change(found.name, current, current)
    _starts_after(found, since, "since")
    entries = [new] + ([replace(current, until=since)] + found.entries[1:] if current else found.entries)
    return _with(note, found, entries, today), Change(found.name, new, current)


def close(note: Note, attribute: str, until: str, today: dt.date | None = None) -> tuple[Note, Change]:
    """The note with `attribute`'s current value ended at `until`, so that it has none: the value stays in its
    history, as a value a change replaced does. An attribute with no current value changes nothing."""
    found = note.named(attribute)
    current = found.current
    if current is None:
        return note, Change(found.name, None, None)
    _starts_after(found, until, "until")
    return _with(note, found, [replace(current, until=until), *found.entries[1:]], today), Change(found.name, None, current)


def _starts_after(found: Attribute, day: str, what: str) -> None:
    """Refuse a change dated before the current value began: the history would run backwards."""
    current = found.current
    if current is not None and current.since and day < current.since:
        raise HafizaError(f"{what}: {day} is before {found.name}'s current value {current.value!r} began "
                          f"({current.since}); a change starts on or after it", field=what)


def _with(note: Note, found: Attribute, entries: list[Entry], today: dt.date | None) -> Note:
    """`note` with `found`'s values replaced by `entries`, updated `today`."""
    changed = replace(found, entries=entries)
    attributes = [changed if a is found else a for a in note.attributes]
    return replace(note, attributes=attributes, updated=today or dt.date.today())


def new_note(entity: str, kind: str | None, today: dt.date | None = None) -> Note:
    today = today or dt.date.today()
    return Note(entity=entity, kind=kind, created=today, updated=today)


def describe(attribute: Attribute, entity: str | None = None) -> str:
    """'based in: İzmir (since 2026-11-03; was Ankara 2024-02 → 2026-11-03)': one attribute in one line."""
    current = attribute.current
    head = f"{entity} " if entity else ""
    was = [f"was {e.value} {e.span()}" for e in attribute.history]
    if current is None:
        return f"{head}{attribute.name}: no current value" + (f" ({'; '.join(was)})" if was else "")
    dates = ([f"since {current.since}"] if current.since else []) + was
    return f"{head}{attribute.name}: {current.value}" + (f" ({'; '.join(dates)})" if dates else "")


def to_json(note: Note) -> dict:
    """The note for a script or an agent: `attributes`, those with a current value; `removed`, those with none
    (removed, or ended by hand), with the history they keep."""
    def attribute(a: Attribute) -> dict:
        return {"name": a.name, "value": a.current.value if a.current else None,
                "since": a.current.since if a.current else None,
                "history": [{"value": e.value, "since": e.since, "until": e.until} for e in a.history]}

    return {"entity": note.entity, "kind": note.kind, "aliases": note.aliases, "scope": note.scope,
            "path": f"{FACTS}/{note.slug}.md", "updated": note.updated.isoformat() if note.updated else None,
            "attributes": [attribute(a) for a in note.attributes if a.current],
            "removed": [attribute(a) for a in note.attributes if not a.current]}


def set_value(vault, entity: str, attribute: str, value: str, since=None, kind: str | None = None,
              reason: str | None = None) -> tuple[Note, Change]:
    """Set `entity`'s `attribute` to `value` (from `since`, default today) in its note, creating the note if
    there is none: one commit, the old value kept in the history. Nothing is written when the value is the
    one it has."""
    from .guard import secrets

    given = value if isinstance(value, str) else ""
    entity, attribute, value = check_input(entity, attribute, value)
    since = check_date(since)
    if kind is not None:
        kind = _name(kind, "kind", MAX_NAME_CHARS)
    with vault.transaction():
        # `attribute: value` on one line: `db password` set to a password reads as the assignment it is. The
        # value as given too: a key the terminal wrapped is whole there, two words once the spaces are folded.
        text = "\n".join([entity, f"{attribute}: {value}", given if given != value else "", kind or ""])
        vault.warnings += secrets.check(text, "the fact", field="value")
        try:
            note = find(vault.root, entity)
        except MemoryNotFound:
            note = new_note(entity, kind)
            note.path = free_path(vault.root, entity)
        if kind and not note.kind:
            note = replace(note, kind=kind)
        note, change = apply(note, attribute, value, since)
        if change.changed:
            was = f" (was {change.old.value})" if change.old else ""
            _commit(vault, note, f"fact {note.slug}: {change.attribute} = {value}{was}", reason)
    return note, change


def remove_value(vault, entity: str, attribute: str, until=None, reason: str | None = None) -> tuple[Note, Change]:
    """End `entity`'s `attribute` at `until` (default today), so that it has no current value: recall, `fact
    show` and `get_fact` leave it out, and its values stay in the note's history. One commit; nothing is
    written when it has no current value."""
    entity, attribute = _name(entity, "entity", MAX_NAME_CHARS), _name(attribute, "attribute", MAX_NAME_CHARS)
    until = check_date(until, "until")
    with vault.transaction():
        note, change = close(find(vault.root, entity), attribute, until)
        if change.changed:
            _commit(vault, note, f"fact {note.slug}: {change.attribute} removed (was {change.old.value})", reason)
    return note, change


def _commit(vault, note: Note, subject: str, reason: str | None) -> None:
    """Write `note` and commit it alone, inside the caller's transaction."""
    from .guard import secrets

    (vault.root / FACTS).mkdir(mode=0o700, exist_ok=True)
    path = vault.write_bytes(note.path, dump(note).encode("utf-8"))
    vault.commit([path], secrets.mask(subject), "fact", reason)  # a value the guard let pass is masked: issue 29


def free_path(root: Path, entity: str) -> Path:
    """facts/<slug>.md for a new note: the entity's slug, or slug-2... when another entity folds to it."""
    from .format.ids import unique_id

    folder = Path(root) / FACTS
    taken = {p.stem for p in folder.glob("*.md")} if folder.is_dir() else set()
    return folder / f"{unique_id(entity_slug(entity), taken)}.md"
