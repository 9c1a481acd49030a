"""The memories screen's rows: every memory's listed fields, held by the server and read again only when the
index moved, so a page of a 20,000-memory vault is a filter, a sort and a slice in memory.

The rows come from the index's stored fields (what recall ranks by: the same counts, labels and dates), the
usage not yet folded into the files is added from the log (vault/store/usage.py), and the memories a sync left
holding two texts are asked of git once per commit (vault/sync/machines.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hafiza.vault.format.paths import FACT_DOC, SIDECAR

PAGE = 50
PATCH_MAX = 200  # files changed since the rows were read that are read one by one; past it, all of them
SORTS = ("recent", "most-used", "least-useful", "id")
LABELS = ("unverified", "conflict", "superseded", "never-recalled")
STATUSES = ("active", "superseded", "archived", "all")
MIN_SHOWN = 5  # usefulness is judged only after this many impressions (docs/architecture.md, memory types)


@dataclass(frozen=True)
class Filters:
    """What the memories screen asks for: each field as the query string gives it ('' for any)."""

    q: str = ""
    mode: str = "keyword"
    type: str = ""
    scope: str = ""
    status: str = "active"
    tag: str = ""
    vault: str = ""
    label: str = ""
    sort: str = "recent"
    page: int = 1

    @classmethod
    def of(cls, params) -> "Filters":
        def pick(name, allowed=None, default=""):
            value = (params.get(name) or default).strip()
            return value if allowed is None or value in allowed else default

        try:
            page = max(1, min(int(params.get("page") or 1), 100_000))
        except ValueError:
            page = 1
        return cls(q=pick("q")[:500], mode=pick("mode", ("keyword", "meaning", "hybrid"), "keyword"),
                   type=pick("type")[:40], scope=pick("scope")[:200], status=pick("status", STATUSES, "active"),
                   tag=pick("tag")[:100], vault=pick("vault")[:40], label=pick("label", LABELS),
                   sort=pick("sort", SORTS, "recent"), page=page)

    def query(self, **changes) -> dict:
        """These filters as query parameters, with `changes`, leaving out what is at its default."""
        values = {**self.__dict__, **changes}
        default = Filters()
        return {k: v for k, v in values.items() if v != getattr(default, k)}


class Rows:
    """The listed fields of one vault's memories, read again from the index when it moved.

    `version` changes whenever anything a page shows of them changes (the index, the usage log not yet folded,
    the memories holding a merge's two texts), so a page's rows can be kept until then (`Listing`); each sort's
    order is kept too, until the rows (or, for the usage sorts, the counts) change: sorting 20,000 rows was
    most of a page's time."""

    def __init__(self, root: Path, vault: str):
        from hafiza.indexer.index import Index
        from hafiza.vault.store.usage import PendingReader

        self.root, self.vault = Path(root), vault
        self.index = Index(self.root, notice=lambda _: None)
        self.pending = PendingReader(self.root / SIDECAR)
        self.version = 0
        self._state = None
        self._rows: list[dict] = []
        self._by_id: dict[str, dict] = {}
        self._waiting: dict[str, tuple[int, int]] = {}
        self._head = None
        self._conflicted: set[str] = set()
        self._found: set[str] = set()
        self._orders: dict[str, tuple[int, list[dict], bool]] = {}  # sort -> (counts' mark, rows, to sort again)
        self._usage_version = 0

    def current(self) -> list[dict]:
        """Every memory's row, the index first brought up to hafiza's writes (a quick sync)."""
        self.index.sync(quick=True)
        state = self.index.state()
        if state != self._state:
            if not self._patch(state):
                self._rows = [_row(doc, self.vault) for doc in self.index.stored()
                              if not doc["id"].startswith(FACT_DOC)]
                self._by_id = {row["id"]: row for row in self._rows}
                self._waiting, self._conflicted = {}, set()  # every row is fresh: counts and labels anew
                self._orders.clear()
                self._head = None  # and git is asked again which memories hold two texts
            self._state = state
            self.version += 1
        self._follow_usage()
        self._follow_conflicts()
        return self._rows

    def _patch(self, state) -> bool:
        """Read again only the memories hafiza's writes changed since the rows were read (the change log names
        their files: vault/store/changes.py), as the index itself catches up; False when the log cannot say (a hand
        edit, a pull) or names many, and every row is read (2-3 s at 20,000 memories)."""
        from hafiza.vault.store import changes

        if self._state is None:
            return False
        names = changes.since(self.root, self._state[0][1], state[0][1])
        if names is None or len(names) > PATCH_MAX:
            return False
        from hafiza.vault.format.paths import MEMORIES

        names = {name for name in names if not name.startswith("facts/")}
        with self.index.open().searcher() as searcher:
            found = {name: searcher.document(id=Path(name).stem) for name in names}
        if any(doc is None and (self.root / MEMORIES / name).exists() for name, doc in found.items()):
            return False  # a file that declares another id than its name: read every row
        from hafiza.vault.format.conflicts import START
        from hafiza.vault.git import GitStore

        gone, fresh = set(), []
        for name, doc in found.items():
            old = self._by_id.pop(Path(name).stem, None)
            if old is not None:
                gone.add(id(old))
                self._found.discard(old["id"])
            if doc is not None:
                row = self._by_id[doc["id"]] = _row(doc, self.vault)
                shown, used = self._waiting.get(row["id"], (0, 0))  # what the log adds, as before the write
                row["shown_now"], row["used_now"] = row["shown"] + shown, row["used"] + used
                fresh.append(row)
                if _holds(self.root / MEMORIES / name, START):  # only these files changed: no git grep of all
                    self._found.add(row["id"])
                row["conflict"] = row["id"] in self._conflicted
        self._rows = [r for r in self._rows if id(r) not in gone] + fresh
        # Each order kept, the changed rows at its end, sorted again when next asked for: a sort of a list
        # sorted but for a few rows is quick, and only the order a page asks for is sorted.
        for sort, (mark, rows, _) in list(self._orders.items()):
            self._orders[sort] = (mark, [r for r in rows if id(r) not in gone] + fresh, True)
        if self._head is not None:
            self._head = GitStore(self.root).head()
        return True

    def _follow_usage(self) -> None:
        """Add the log's counts not yet folded to the rows they name (only those: the log is short)."""
        waiting = {i: (c.shown, c.used) for i, c in self.pending.read().items()}
        if waiting == self._waiting:
            return
        for memory_id in self._waiting.keys() | waiting.keys():
            row = self._by_id.get(memory_id)
            if row is not None:
                shown, used = waiting.get(memory_id, (0, 0))
                row["shown_now"], row["used_now"] = row["shown"] + shown, row["used"] + used
        self._waiting = waiting
        self._usage_version += 1
        self.version += 1

    def _follow_conflicts(self) -> None:
        found = self.conflicted()
        if found == self._conflicted:
            return
        for memory_id in found ^ self._conflicted:
            if memory_id in self._by_id:
                self._by_id[memory_id]["conflict"] = memory_id in found
        self._conflicted = set(found)
        self.version += 1

    def get(self, memory_id: str) -> dict | None:
        """The row of `memory_id` as `current` last made it."""
        return self._by_id.get(memory_id)

    def ordered(self, sort: str) -> list[dict]:
        """Every row in the order `sort` names, kept until the rows (or for a usage sort, the counts) change."""
        mark = self._usage_version if sort in ("most-used", "least-useful") else -1
        kept = self._orders.get(sort)
        if kept is None or kept[0] != mark or kept[2]:
            kept = self._orders[sort] = (mark, ordered(self._rows if kept is None else kept[1], sort), False)
        return kept[1]

    def conflicted(self) -> set[str]:
        """Ids of memories holding a merge's second text: git is asked once per commit."""
        from hafiza.vault.git import GitStore

        git = GitStore(self.root)
        head = git.head()
        if head != self._head:
            from hafiza.vault.format.conflicts import START
            from hafiza.vault.format.paths import MEMORIES

            # Each file holding a fence, by its id: the file's name (vault/format/layout.py), as `resolve` lists them.
            self._found = {Path(rel).stem for rel in git.grep([START], MEMORIES)}
            self._head = head
        return self._found


class Listing:
    """The rows a page's filters pick, in its order, kept for the last few filters asked until a vault's rows
    change: turning pages, or coming back to the list, reads nothing again."""

    KEEP = 16

    def __init__(self):
        self._kept: dict[tuple, list[dict]] = {}

    def rows(self, vaults: list[Rows], f: "Filters") -> list[dict]:
        for rows in vaults:
            rows.current()
        key = (tuple((r.vault, r.version) for r in vaults), f.query(page=1, q=""))
        key = (key[0], tuple(sorted(key[1].items())))
        found = self._kept.get(key)
        if found is None:
            if len(vaults) == 1:
                found = [r for r in vaults[0].ordered(f.sort) if matches(r, f)]
            else:
                found = ordered([r for rows in vaults for r in rows.current() if matches(r, f)], f.sort)
            if len(self._kept) >= self.KEEP:
                self._kept.pop(next(iter(self._kept)))
            self._kept[key] = found
        return found


def _holds(path: Path, text: str) -> bool:
    from hafiza.vault.files import read_regular

    try:
        return text.encode() in read_regular(path)
    except OSError:
        return False


def _row(doc: dict, vault: str) -> dict:
    return {"id": doc["id"], "title": doc.get("title") or "", "type": doc.get("type") or "", "scope": doc.get("scope") or "",
            "status": doc.get("status") or "", "tags": [t.strip() for t in (doc.get("tags") or "").split(",") if t.strip()],
            "created": doc.get("created") or "", "updated": doc.get("updated") or doc.get("created") or "",
            "shown": int(doc.get("shown") or 0), "used": int(doc.get("used") or 0),
            "last_used": doc.get("last_used"), "verified": doc.get("verified"),
            "verified_note": doc.get("verified_note"), "superseded_by": doc.get("superseded_by"),
            "supersedes": tuple(doc.get("supersedes") or ()),
            "snippet": doc.get("snippet") or "", "vault": vault,
            "shown_now": int(doc.get("shown") or 0), "used_now": int(doc.get("used") or 0), "conflict": False}


def matches(row: dict, f: Filters) -> bool:
    """Whether a row passes every filter but the search words."""
    if f.type and row["type"] != f.type or f.scope and row["scope"] != f.scope:
        return False
    if f.status != "all" and row["status"] != f.status:
        return False
    if f.tag and f.tag.casefold() not in (t.casefold() for t in row["tags"]):
        return False
    return not f.label or has_label(row, f.label)


def has_label(row: dict, label: str) -> bool:
    if label == "unverified":
        return row["verified"] in ("failed", "stale")
    if label == "conflict":
        return row.get("conflict", False)
    if label == "superseded":
        return row["status"] == "superseded"
    return row.get("shown_now", row["shown"]) == 0  # never recalled


def usefulness(row: dict) -> float:
    """Used per shown, smoothed; a memory shown fewer than MIN_SHOWN times is not judged (ranks last)."""
    shown = row.get("shown_now", row["shown"])
    if shown < MIN_SHOWN:
        return 2.0
    return (row.get("used_now", row["used"]) + 1) / (shown + 2)


def ordered(rows: list[dict], sort: str) -> list[dict]:
    if sort == "most-used":
        return sorted(rows, key=lambda r: (-r.get("used_now", r["used"]), -r.get("shown_now", r["shown"]), r["id"]))
    if sort == "least-useful":
        return sorted(rows, key=lambda r: (usefulness(r), -r.get("shown_now", r["shown"]), r["id"]))
    if sort == "id":
        return sorted(rows, key=lambda r: r["id"])
    return sorted(rows, key=lambda r: (r["updated"], r["created"], r["id"]), reverse=True)


@dataclass
class Page:
    rows: list[dict]
    total: int
    number: int
    pages: int


def page_of(rows: list[dict], number: int, size: int = PAGE) -> Page:
    pages = max(1, -(-len(rows) // size))
    number = min(number, pages)
    return Page(rows[(number - 1) * size:number * size], len(rows), number, pages)
