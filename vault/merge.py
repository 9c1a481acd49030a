"""Three-way merges of vault files by their nature, never by lines alone.

A memory merges field by field against the common ancestor: a change made
on one side only is taken; usage counters add both sides' increments (the
larger alone would lose uses); dates take the later; lists merge as sets,
honouring a removal made on one side. Only a field (or a body) that both
sides changed differently is a conflict. JSON-lines records (episodes,
rulings) merge as a union. Accepting a review branch uses this to bring a
proposal onto a main that moved since (a usage fold, a hand edit); sync's
merge driver builds on the same rules.
"""

from __future__ import annotations

from . import model
from .errors import FrontmatterError

COUNTERS = ("shown", "used")
LATEST = ("last_used", "updated")
SETS = ("tags", "aliases", "supersedes", "claims")


class Conflict(Exception):
    """Both sides changed the same thing differently; `what` names it."""

    def __init__(self, what: str):
        super().__init__(what)
        self.what = what


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
    if path.startswith("memories/") and path.endswith(".md"):
        return _memory(path, base, ours, theirs)
    raise Conflict("both sides changed it")


def _union(ours: bytes, theirs: bytes) -> bytes:
    """Our lines, then theirs that we lack: an append-only log loses nothing and repeats nothing."""
    have = ours.splitlines()
    seen = set(have)
    extra = [line for line in theirs.splitlines() if line not in seen]
    return b"\n".join(have + extra) + b"\n"


def _memory(path: str, base: bytes, ours: bytes, theirs: bytes) -> bytes:
    sides = []
    for data in (base, ours, theirs):
        try:
            meta, body = model.split(data.decode("utf-8"))
        except Exception as exc:  # undecodable, bad YAML: a person decides
            raise Conflict(f"a side does not parse ({exc.__class__.__name__})") from None
        if meta is None:
            raise Conflict("a side has no frontmatter")
        sides.append((meta, body))
    (b_meta, b_body), (o_meta, o_body), (t_meta, t_body) = sides
    meta = {}
    for key in dict.fromkeys([*o_meta, *t_meta]):  # ours' order, then keys only theirs has
        value = _field(key, b_meta.get(key), o_meta.get(key), t_meta.get(key))
        if value is not None:
            meta[key] = value
    body = _pick("the body", b_body, o_body, t_body)
    try:
        memory = model.from_metadata(meta, body)
    except (model.FieldError, FrontmatterError) as exc:
        raise Conflict(f"the merged header does not validate ({exc})") from None
    return model.dump(memory).encode("utf-8")


def _field(key: str, base, ours, theirs):
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    if key in COUNTERS:
        return _num(ours) + _num(theirs) - _num(base)
    if key in LATEST:
        return max((v for v in (ours, theirs) if v is not None), key=str)
    if key in SETS:
        return _set(base or [], ours or [], theirs or [])
    raise Conflict(f"both sides changed {key}")


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


def _pick(what: str, base, ours, theirs):
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    raise Conflict(f"both sides changed {what}")

