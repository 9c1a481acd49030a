"""The memories screen's rows: every memory's listed fields, held by the server and read again only when the
index moved, so a page of a 20,000-memory vault is a filter, a sort and a slice in memory.

The rows come from the index's stored fields (what recall ranks by: the same counts, labels and dates), the
usage not yet folded into the files is added from the log (vault/usage.py), and the memories a sync left
holding two texts are asked of git once per commit (vault/sync.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hafiza.vault.paths import FACT_DOC, SIDECAR

PAGE = 50
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
    """The listed fields of one vault's memories, read again from the index when it moved."""

    def __init__(self, root: Path, vault: str):
        from hafiza.indexer.index import Index
        from hafiza.vault.usage import PendingReader

        self.root, self.vault = Path(root), vault
        self.index = Index(self.root, notice=lambda _: None)
        self.pending = PendingReader(self.root / SIDECAR)
        self._state = None
        self._rows: list[dict] = []
        self._head = None
        self._conflicted: set[str] = set()

    def current(self) -> list[dict]:
        """Every memory's row, the index first brought up to hafiza's writes (a quick sync)."""
        self.index.sync(quick=True)
        state = self.index.state()
        if state != self._state:
            self._rows = [_row(doc, self.vault) for doc in self.index.stored() if not doc["id"].startswith(FACT_DOC)]
            self._state = state
        waiting = self.pending.read()
        conflicted = self.conflicted()
        for row in self._rows:
            extra = waiting.get(row["id"])
            row["shown_now"] = row["shown"] + (extra.shown if extra else 0)
            row["used_now"] = row["used"] + (extra.used if extra else 0)
            row["conflict"] = row["id"] in conflicted
        return self._rows

    def conflicted(self) -> set[str]:
        """Ids of memories holding a merge's second text: git is asked once per commit."""
        from hafiza.vault.git import GitStore

        git = GitStore(self.root)
        head = git.head()
        if head != self._head:
            from hafiza.vault.conflicts import START
            from hafiza.vault.paths import MEMORIES

            # Each file holding a fence, by its id: the file's name (vault/layout.py), as `resolve` lists them.
            self._conflicted = {Path(rel).stem for rel in git.grep([START], MEMORIES)}
            self._head = head
        return self._conflicted


def _row(doc: dict, vault: str) -> dict:
    return {"id": doc["id"], "title": doc.get("title") or "", "type": doc.get("type") or "", "scope": doc.get("scope") or "",
            "status": doc.get("status") or "", "tags": [t.strip() for t in (doc.get("tags") or "").split(",") if t.strip()],
            "created": doc.get("created") or "", "updated": doc.get("updated") or doc.get("created") or "",
            "shown": int(doc.get("shown") or 0), "used": int(doc.get("used") or 0),
            "last_used": doc.get("last_used"), "verified": doc.get("verified"),
            "verified_note": doc.get("verified_note"), "superseded_by": doc.get("superseded_by"),
            "snippet": doc.get("snippet") or "", "vault": vault}


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
