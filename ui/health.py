"""The health screen: `hafiza doctor`'s checks, the vault's size and growth, shown and used over time (the
counts each daily fold wrote into the files, and the log not yet folded), and the memories never recalled in
90 days. Charts are inline SVG drawn by the template."""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter

from hafiza.vault.store import usage

from .web import render

QUIET_DAYS = 90
FOLDS = 120     # the newest fold commits read for the chart (one a day: four months)
LISTED = 200    # memories listed as never recalled (the memories screen's label filter lists all)
_COUNT = re.compile(rb"^(shown|used): (\d+)$", re.MULTILINE)


async def health(request):
    from hafiza.hooks.health import adapter_checks
    from hafiza.indexer.doctor import run_checks

    hold = request.app.state.hold
    vault = hold.writable(None)  # doctor's checks sync the index; nothing is committed
    checks = run_checks(vault, hold.settings, adapters=adapter_checks())
    rows = [r for name in hold.rows for r in hold.rows[name].current()]
    history = vault.git.log(None)  # read once: the folds for both charts, and the count
    days = daily_usage(vault, history)
    quiet = never_recalled(vault, rows, history)
    return render(request, "health.html", checks=checks, growth=growth(rows), days=days[-60:], quiet=quiet[:LISTED],
                  quiet_total=len(quiet), counts=Counter(r["status"] for r in rows), total=len(rows),
                  commits=len(history))


def growth(rows: list[dict]) -> list[dict]:
    """Memories by the month they were created, and the running total."""
    months = Counter(r["created"][:7] for r in rows if r["created"])
    out, total = [], 0
    for month in sorted(months):
        total += months[month]
        out.append({"month": month, "added": months[month], "total": total})
    return out[-24:]


def daily_usage(vault, history: list) -> list[dict]:
    """Shown and used per day: what each fold commit added to the files' counters (dated by the fold), and the
    log not yet folded (dated by the event)."""
    per_day: dict[str, list[int]] = {}
    for commit in [c for c in history if c.action == "fold"][:FOLDS]:
        day = per_day.setdefault(commit.date[:10], [0, 0])
        for shown, used in deltas(vault, commit.sha).values():
            day[0] += shown
            day[1] += used
    for day, counts in usage.by_day(vault.sidecar).items():
        found = per_day.setdefault(day, [0, 0])
        found[0] += counts.shown
        found[1] += counts.used
    return [{"date": d, "shown": s, "used": u, "rate": (u / s) if s else None} for d, (s, u) in sorted(per_day.items())]


def deltas(vault, sha: str) -> dict[str, tuple[int, int]]:
    """What a commit added to each memory's shown and used counters, by id (the file's name), read in one git
    process for all its files."""
    rels = [rel for rel in vault.git.changed_paths(sha) if rel.endswith(".md")]
    texts = vault.git.blobs([spec for rel in rels for spec in (f"{sha}^:{rel}", f"{sha}:{rel}")])
    out = {}
    for n, rel in enumerate(rels):
        before, after = _counts(texts[2 * n]), _counts(texts[2 * n + 1])
        out[rel.rsplit("/", 1)[-1].removesuffix(".md")] = (after[0] - before[0], after[1] - before[1])
    return out


def _counts(data: bytes | None) -> tuple[int, int]:
    head = (data or b"").split(b"\n---", 2)[0]
    found = dict(_COUNT.findall(head))
    return int(found.get(b"shown", 0)), int(found.get(b"used", 0))


def never_recalled(vault, rows: list[dict], history: list) -> list[dict]:
    """Active memories older than QUIET_DAYS that no fold or log line of the last QUIET_DAYS shows."""
    since = (dt.date.today() - dt.timedelta(days=QUIET_DAYS)).isoformat()
    recent = usage.ids_since(vault.sidecar)
    for commit in history:
        if commit.date[:10] < since:
            break
        if commit.action == "fold":
            recent |= {memory_id for memory_id, (shown, _) in deltas(vault, commit.sha).items() if shown > 0}
    return sorted((r for r in rows if r["status"] == "active" and r["created"] < since and r["id"] not in recent),
                  key=lambda r: (r["created"], r["id"]))
