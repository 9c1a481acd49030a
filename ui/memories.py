"""The memories screen: the list with its filters, sorts and pages, and search through the hooks' recall."""

from __future__ import annotations

from hafiza.vault.kinds import TYPES

from .catalog import LABELS, SORTS, STATUSES, Filters, matches, ordered, page_of
from .web import render


async def memories(request):
    hold = request.app.state.hold
    f = Filters.of(request.query_params)
    note = None
    names = [f.vault] if f.vault in hold.rows else list(hold.rows)
    if f.q:
        rows, note = _searched(hold, f, names)
    else:
        rows = [r for name in names for r in hold.rows[name].current() if matches(r, f)]
        rows = ordered(rows, f.sort)
    page = page_of(rows, f.page)
    scopes = sorted({r["scope"] for name in names for r in hold.rows[name].current()})
    return render(request, "memories.html", f=f, page=page, note=note, types=TYPES, statuses=STATUSES,
                  labels=LABELS, sorts=SORTS, scopes=scopes, searched=bool(f.q))


def _searched(hold, f: Filters, names: list[str]) -> tuple[list[dict], str | None]:
    """Search hits in rank order, joined to their rows (for the counts and labels), the filters applied."""
    hits, note = hold.search(f.q, f.mode, include_inactive=f.status != "active")
    by_id = {(name, r["id"]): r for name in names for r in hold.rows[name].current()}
    rows = []
    for hit in hits:
        row = by_id.get((hit.get("vault") or "personal", hit["id"]))
        if row is not None and matches(row, f):
            rows.append({**row, "score": hit["score"], "parts": hit.get("parts") or {}})
    return rows, note
