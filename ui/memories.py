"""The memories screen: the list with its filters, sorts and pages, and search through the hooks' recall."""

from __future__ import annotations

from hafiza.vault.format.kinds import TYPES

from .catalog import LABELS, SORTS, STATUSES, Filters, matches, page_of
from .web import render


async def memories(request):
    hold = request.app.state.hold
    f = Filters.of(request.query_params)
    note = None
    names = [f.vault] if f.vault in hold.rows else list(hold.rows)
    if f.q:
        rows, note = _searched(hold, f, names)
    else:
        rows = hold.listing.rows([hold.rows[name] for name in names], f)
    page = page_of(rows, f.page)
    return render(request, "memories.html", f=f, page=page, note=note, types=TYPES, statuses=STATUSES,
                  labels=LABELS, sorts=SORTS, scopes=hold.scopes(names), searched=bool(f.q),
                  left_out=_left_out(hold, names))


def _left_out(hold, names: list[str]) -> list[dict]:
    """The files the index left out, by vault: quarantined for a secret (issue 29, item 4) or not parsing; each
    named with why, never with its text, and a quarantined memory linked to its page's notice."""
    from hafiza.vault.format.paths import MEMORIES

    from .memory import url_of

    out = []
    for name in names:
        for rel, why in hold.rows[name].index.unparsable().items():  # named under memories/, or facts/...
            memory = rel.removesuffix(".md") if "/" not in rel and why.startswith("quarantined") else None
            out.append({"vault": name, "rel": rel if "/" in rel else f"{MEMORIES}/{rel}", "why": why,
                        "url": url_of(memory, name) if memory else None})
    return out


def _searched(hold, f: Filters, names: list[str]) -> tuple[list[dict], str | None]:
    """Search hits in rank order, joined to their rows (for the counts and labels), the filters applied."""
    hits, note = hold.search(f.q, f.mode, include_inactive=f.status != "active")
    for name in names:
        hold.rows[name].current()
    rows = []
    for hit in hits:
        owner = hold.rows.get(hit.get("vault") or "personal")
        row = owner.get(hit["id"]) if owner is not None and owner.vault in names else None
        if row is not None and matches(row, f):
            rows.append({**row, "score": hit["score"], "parts": hit.get("parts") or {}})
    return rows, note
