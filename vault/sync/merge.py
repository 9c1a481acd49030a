"""Three-way merges of vault files by their nature, never by lines alone.

A memory merges field by field against the common ancestor: a change made
on one side only is taken; `id` and `created` never change; usage counters
add both sides' increments (the larger alone would lose uses); dates take the
later, and so does `verified` with its details (the later check); lists merge as sets,
honouring a removal made on one side; a supersede or archive made on either
side sticks unless the other side restored the memory since the ancestor. A title both sides changed
takes the later edit's, unless both texts are kept: then each keeps its own (the
fence holds the other's), so picking a text picks its title. A title never
becomes an alias (issue 30, item 5).
Bodies merge three-way by text (`git merge-file`). A fact note keeps every
value either side recorded, newest current (vault/facts.py). JSON-lines records
(episodes, rulings) merge as a union.

Two callers want different things where both sides changed the same thing:
accepting a review branch (`merge`) refuses, and the proposal stays open;
sync and git's merge driver (`reconcile`) never refuse: they keep both texts
(vault/format/conflicts.py) and a person picks later. Nothing is ever dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from hafiza.vault.format import conflicts, model, properties
from hafiza.vault.errors import FrontmatterError
from hafiza.vault.facts import is_fact_path

COUNTERS = ("shown", "used")
LATEST = ("last_used", "updated")
SETS = ("tags", "aliases", "supersedes", "claims")
FIXED = ("id", "created")
STATUS = ("status", "superseded_by", "archived_reason")  # decided together, by one side
VERIFIED = tuple(properties.VERIFIED)  # one check's status and details: decided together, by the later check
# When both sides changed the status differently, the one that takes the memory further out of recall sticks.
STICKS = {"active": 0, "archived": 1, "superseded": 2}


class Conflict(Exception):
    """Both sides changed the same thing differently; `what` names it."""

    def __init__(self, what: str):
        super().__init__(what)
        self.what = what


@dataclass
class Merged:
    """What `reconcile` made: the content (None: absent) and, when a person should look, why."""

    data: bytes | None
    note: str | None = None


def merge(path: str, base: bytes | None, ours: bytes | None, theirs: bytes | None) -> bytes | None:
    """The merged content of `path` (None: the file is absent); raises Conflict."""
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    if ours is None or theirs is None or base is None:
        raise Conflict("added or removed on one side and changed on the other")
    if path.endswith(".jsonl"):
        return _union(ours, theirs)
    if is_memory(path):
        return _memory(base, ours, theirs, strict=True).data
    if is_fact_path(path):
        return _fact(base, ours, theirs).data
    raise Conflict("both sides changed it")


def reconcile(path: str, base: bytes | None, ours: bytes | None, theirs: bytes | None,
              machine: str | None = None) -> Merged:
    """Like `merge`, but never refuses: where both sides changed the same thing both are kept (a second
    text fenced in the body, recorded as merged on `machine`, this one; a file deleted on one side and changed
    on the other kept), and `note` says what a person may want to look at."""
    base = base or None  # git hands its driver an empty ancestor for a file both sides added
    try:
        return Merged(merge(path, base, ours, theirs))
    except Conflict:
        pass
    if ours is None or theirs is None:
        return Merged(ours if theirs is None else theirs, "deleted on one side and changed on the other: kept")
    if path.endswith(".jsonl"):
        return Merged(_union(ours, theirs))
    if is_memory(path) or is_fact_path(path):
        try:
            if is_memory(path):
                return _memory(base, ours, theirs, strict=False, machine=machine)
            return _fact(base, ours, theirs)
        except Conflict:
            pass  # a side that does not parse: merged as text below
    return _text(ours, base or b"", theirs)


def twice(base: bytes, same: bytes) -> bytes:
    """A memory both sides changed to the same bytes since the ancestor (git takes such a file without asking
    the driver): the same change made twice, so its counters hold both increments."""
    try:
        return _memory(base, same, same, strict=False).data
    except Conflict:
        return same


def is_memory(path: str) -> bool:
    from hafiza.vault.format.layout import is_memory_rel

    return path.startswith("memories/") and is_memory_rel(path[len("memories/"):])


def _fact(base: bytes | None, ours: bytes, theirs: bytes) -> Merged:
    """A fact note (vault/facts.py), field by field and value by value: every value either side recorded is
    kept (minus one a side removed by hand since the ancestor), ordered by date; the newest is current, each
    older one closed where the next began. Never a conflict, unless a side does not parse."""
    from dataclasses import replace

    from hafiza.vault import facts

    try:
        b, o, t = (facts.parse(x.decode("utf-8")) if x else None for x in (base, ours, theirs))
    except (FrontmatterError, UnicodeDecodeError) as exc:
        raise Conflict(f"a side does not parse ({exc})") from None
    if o is None or t is None:
        raise Conflict("a side is empty")
    b = b or facts.Note(entity=o.entity)
    clashes: list[str] = []
    names = [a.name for a in o.attributes] + [a.name for a in t.attributes if not o.attribute(a.name)]
    extra = {k: _side(b.extra.get(k), o.extra.get(k), t.extra.get(k)) for k in dict.fromkeys([*o.extra, *t.extra])}
    merged = replace(
        o, entity=_side(b.entity, o.entity, t.entity), kind=_side(b.kind, o.kind, t.kind),
        aliases=_set(b.aliases, o.aliases, t.aliases), scope=_side(b.scope, o.scope, t.scope),
        created=min((d for d in (o.created, t.created) if d), default=None),
        updated=max((d for d in (o.updated, t.updated) if d), default=None),
        notes=_notes(b.notes, o.notes, t.notes), extra={k: v for k, v in extra.items() if v is not None},
        attributes=[_values(b.attribute(n), o.attribute(n), t.attribute(n), clashes) for n in names])
    note = f"both sides changed {', '.join(clashes)}: every value kept, the newest current" if clashes else None
    return Merged(facts.dump(merged).encode("utf-8"), note)


def _side(base, ours, theirs):
    """Theirs where only they changed it, else ours."""
    return theirs if ours == base and theirs != base else ours


def _notes(base: str, ours: str, theirs: str) -> str:
    """A fact note's free text: three-way, both sides' lines kept where they clash."""
    from hafiza.vault.git import merge_text

    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    text, clashes = merge_text(ours + "\n", base + "\n", theirs + "\n")
    if clashes:
        text, _ = merge_text(ours + "\n", base + "\n", theirs + "\n", favor="union")
    return text.strip("\n")


class _Dated(NamedTuple):
    """A value as the merge compares it: its folded form (facts.key) and the day it began."""

    value: str
    since: str | None


def _dated(entry) -> _Dated:
    from hafiza.vault.facts import key

    return _Dated(key(entry.value), entry.since)


def _values(base, ours, theirs, clashes: list):
    """One attribute's values from both sides (facts.Attribute or None each), newest first; its name is added
    to `clashes` where the two sides' current values differ."""
    from hafiza.vault.facts import Attribute, key

    sides = [a for a in (ours, theirs) if a is not None]
    found = _by_value(sides)
    if base is not None and len(sides) == 2:
        _drop_taken_out(found, base, sides)
    if ours and theirs and ours.current and theirs.current and key(ours.current.value) != key(theirs.current.value):
        clashes.append(ours.name)
    other = list(dict.fromkeys([*(ours.other if ours else []), *(theirs.other if theirs else [])]))
    return Attribute((ours or theirs).name, _history(found), other)


def _by_value(sides: list) -> dict[_Dated, list]:
    """Every entry of the sides by its dated value, ours first."""
    found: dict[_Dated, list] = {}
    for side in sides:
        for entry in side.entries:
            found.setdefault(_dated(entry), []).append(entry)
    return found


def _drop_taken_out(found: dict[_Dated, list], base, sides: list) -> None:
    """A value of the ancestor that one side took out by hand stays out."""
    for entry in base.entries:
        dated = _dated(entry)
        if dated in found and not all(dated in {_dated(e) for e in side.entries} for side in sides):
            del found[dated]


def _history(found: dict[_Dated, list]) -> list:
    """The values newest first, among values of the same day ours first (our machine's current value stays
    current), each closed where the next newer one began, at the latest."""
    from hafiza.vault.facts import Entry

    seen = list(found)
    out: list = []
    for dated in sorted(seen, key=lambda d: (d.since or "", -seen.index(d)), reverse=True):
        entries = found[dated]
        ends = [e.until for e in entries if e.until]
        if out and out[-1].since:
            ends.append(out[-1].since)
        closed = min(ends) if ends and (out or any(e.until for e in entries)) else None
        out.append(Entry(entries[0].value, dated.since, closed))
    return out


def _union(ours: bytes, theirs: bytes) -> bytes:
    """Our lines, then theirs that we lack: an append-only log loses nothing and repeats nothing."""
    have = [line for line in ours.splitlines() if line.strip()]
    seen = set(have)
    extra = [line for line in theirs.splitlines() if line.strip() and line not in seen]
    return b"\n".join(have + extra) + b"\n"


def _text(ours: bytes, base: bytes, theirs: bytes) -> Merged:
    """A file that is not a memory, or does not parse: three-way by text; where hunks conflict, both sides'
    lines are kept (git's union merge), never raw conflict markers."""
    from hafiza.vault.git import merge_text

    o, b, t = (x.decode("utf-8", "replace") for x in (ours, base, theirs))
    text, clashes = merge_text(o, b, t)
    if clashes:
        text, _ = merge_text(o, b, t, favor="union")
    return Merged(text.encode("utf-8"), "both sides changed the same lines: both kept" if clashes else None)


def _parse(data: bytes | None) -> tuple[dict, str]:
    if data is None:
        return {}, ""
    try:
        meta, body = model.split(data.decode("utf-8"))
    except Exception as exc:  # undecodable, bad YAML: a person decides
        raise Conflict(f"a side does not parse ({exc.__class__.__name__})") from None
    if meta is None:
        raise Conflict("a side has no frontmatter")
    # Both sides, and their ancestor, in the form written now: one side may come from before issue 32.
    return properties.migrate(meta), body


def _memory(base: bytes | None, ours: bytes, theirs: bytes, strict: bool, machine: str | None = None) -> Merged:
    (b_meta, b_body), (o_meta, o_body), (t_meta, t_body) = (_parse(x) for x in (base, ours, theirs))
    if base is None and o_body.strip() != t_body.strip():
        if strict:
            raise Conflict("both sides created it with different texts")
        return _same_id(o_meta, o_body, t_meta, t_body)
    sides = (o_meta, t_meta)
    keeper, checked = _status_side(b_meta, o_meta, t_meta), _verified_side(b_meta, o_meta, t_meta)
    meta = {}
    for key in dict.fromkeys([*o_meta, *t_meta]):  # ours' order, then keys only theirs has
        if key in FIXED and key in b_meta:
            value = b_meta[key]
        elif key in STATUS and keeper is not None:
            value = keeper.get(key)
        elif key in VERIFIED and checked is not None:
            value = checked.get(key)
        else:
            value = _field(key, b_meta.get(key), o_meta.get(key), t_meta.get(key), strict, sides)
        if value is not None:
            meta[key] = value
    titles = (o_meta.get("title"), t_meta.get("title"))
    # The fence remembers the other title, so keeping the other text (`hafiza resolve`) takes it too.
    info = {"title": titles[1]} if titles[0] != titles[1] and titles[1] else {}
    if machine:
        info["merged_on"] = machine  # whose text is the body: ours and theirs as each machine sees them
    body, note = _body(b_body, o_body, t_body, strict, str(meta.get("id", "")), info)
    if note and "title" in info and titles[0]:
        meta["title"] = titles[0]  # our text stays the body: so does its title
    return Merged(_dump(meta, body), note)


def _dump(meta: dict, body: str) -> bytes:
    try:
        memory = model.from_metadata(meta, body)
    except (model.FieldError, FrontmatterError) as exc:
        raise Conflict(f"the merged header does not validate ({exc})") from None
    return model.dump(memory).encode("utf-8")


def _same_id(o_meta: dict, o_body: str, t_meta: dict, t_body: str) -> Merged:
    """One id made on two machines for two memories: the incoming one keeps the id (others may have it
    already), ours is fenced with its header until sync gives it an id of its own."""
    memory_id = str(t_meta.get("id", ""))
    body = t_body.strip("\n") + conflicts.fence("same-id", o_body, memory_id, meta=o_meta)
    return Merged(_dump(t_meta, body), f"{memory_id} was created on two machines with different texts")


def _status_side(base: dict, ours: dict, theirs: dict) -> dict | None:
    """The side whose status (with superseded_by, archived_reason) wins; None: merge those fields one by one."""
    o, t, b = (d.get("status") or "active" for d in (ours, theirs, base))
    if o == t:
        return None
    if t == b:
        return ours
    if o == b:
        return theirs  # one side restored, superseded or archived it since the ancestor: that side's change
    return ours if STICKS.get(o, 0) >= STICKS.get(t, 0) else theirs


def _verified_side(base: dict, ours: dict, theirs: dict) -> dict | None:
    """The side whose verification (`verified` and its details) wins: the one that changed it, or where both
    did, the later check; None when the two agree."""
    o, t, b = ({k: d.get(k) for k in VERIFIED} for d in (ours, theirs, base))
    if o == t:
        return None
    if t == b:
        return ours
    if o == b:
        return theirs
    return theirs if str(t["verified_at"] or "") > str(o["verified_at"] or "") else ours


def _field(key: str, base, ours, theirs, strict: bool, sides: tuple[dict, dict]):
    if key in COUNTERS:  # before the equality test: both sides used it once (3 -> 4 each) is 5, not 4
        return max(0, _num(ours) + _num(theirs) - _num(base))
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    if key in LATEST:
        return max((v for v in (ours, theirs) if v is not None), key=str)
    if key in SETS:
        return _set(base or [], ours or [], theirs or [])
    if strict:
        raise Conflict(f"both sides changed {key}")
    # The side edited later wins; on the same day ours, as our text stays the body where both changed it.
    o_meta, t_meta = sides
    return theirs if str(t_meta.get("updated") or "") > str(o_meta.get("updated") or "") else ours


def _num(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _set(base: list, ours: list, theirs: list) -> list:
    """Items either side has, minus those one side removed from the ancestor."""
    removed = [v for v in base if v not in ours or v not in theirs]
    out = []
    for value in [*ours, *theirs]:
        if value not in out and value not in removed:
            out.append(value)
    return out


def _body(base: str, ours: str, theirs: str, strict: bool, memory_id: str, info: dict) -> tuple[str, str | None]:
    """The merged body: one side's change, a clean three-way merge, or both texts (ours, theirs fenced)."""
    from hafiza.vault.git import merge_text

    o, b, t = (x.strip("\n") + "\n" for x in (ours, base, theirs))
    if o == t or t == b:
        return ours, None
    if o == b:
        return theirs, None
    text, clashes = merge_text(o, b, t)
    if not clashes:
        return text, None
    if strict:
        raise Conflict("both sides changed the body")
    mine, _ = merge_text(o, b, t, favor="ours")
    other, _ = merge_text(o, b, t, favor="theirs")
    return mine.strip("\n") + conflicts.fence("body", other, memory_id, **info), "both sides changed the same lines: both kept"
