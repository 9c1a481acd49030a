"""A curator run: the passes in order, their findings filtered by rulings and open branches, then proposed.

Deterministic passes first (duplicates, dead paths, decay, profile fitting,
conflict candidates); the model passes (judging conflicts, writing aliases)
run only with a provider, within a budget of calls. Each proposal is one
commit on a review branch; only exact duplicates may go straight to main,
and only when asked (`apply`). A run proposes at most `max_actions`: the
rest waits for the next run, which skips what is open or was rejected, so a
run that died part-way is simply run again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from hafiza.vault.errors import HafizaError
from hafiza.vault.format.text import plural
from hafiza.vault.review import Review

from . import aliases, conflicts, deadpaths, decay, duplicates
from .actions import ACTOR, build
from .corpus import Corpus
from .findings import Finding

PASSES = ("duplicates", "paths", "decay", "profile", "conflicts", "aliases")
MAX_ACTIONS = 25
PAIRS = ("related", "merge-duplicate", "supersede")  # findings about a pair of memories
RELATED_FILE = "related.json"  # in .hafiza/: the last run's related pairs, for a person to judge (hafiza ui)


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)     # every one, report-only ones included
    selected: list[Finding] = field(default_factory=list)   # what this run proposes (or, dry, would)
    proposed: list[tuple[Finding, str]] = field(default_factory=list)   # (finding, commit on the branch)
    applied: list[tuple[Finding, str]] = field(default_factory=list)    # (finding, commit on main)
    branch: str | None = None
    ruled: int = 0          # found again but rejected before: not proposed
    waiting: int = 0        # already open on a review branch
    deferred: int = 0       # past --max-actions, or a memory another action of this run touches
    model: str = "none"
    model_notes: list[str] = field(default_factory=list)
    calls: int = 0
    tokens: tuple[int, int] = (0, 0)
    seconds: float = 0.0

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for finding in self.findings:
            out[finding.kind] = out.get(finding.kind, 0) + 1
        return out

    def to_json(self) -> dict:
        return {"branch": self.branch, "seconds": round(self.seconds, 2), "counts": self.counts(),
                "selected": [f.to_json() for f in self.selected],
                "proposed": [{**f.to_json(), "commit": sha} for f, sha in self.proposed],
                "applied": [{**f.to_json(), "commit": sha} for f, sha in self.applied],
                "findings": [f.to_json() for f in self.findings],
                "skipped": {"ruled": self.ruled, "open": self.waiting, "deferred": self.deferred},
                "model": {"provider": self.model, "calls": self.calls, "tokens_in": self.tokens[0],
                          "tokens_out": self.tokens[1], "notes": self.model_notes}}


def curate(vault, corpus: Corpus, *, provider=None, passes=PASSES, max_actions: int = MAX_ACTIONS,
           dry_run: bool = False, apply: bool = False, pending=None, profile=None, progress=None) -> Report:
    """Run `passes` over `corpus` (the vault's memories as loaded now) and propose what they find.

    `provider` is a budgeted model provider (hafiza.vault.offline.provider.Budget) or None; `profile` the
    session-start profile report (hafiza.indexer.profile.Profile) for the profile pass; `pending`
    the usage not yet folded into files; `progress(done, total, label)` draws a bar."""
    started = time.monotonic()
    review = Review(vault, actor=ACTOR)
    rulings = review.rulings()
    ruled, waiting = set(rulings), review.open_keys()
    judged = {frozenset(r.get("memories") or ()) for r in rulings.values() if r.get("action") == "judge"}
    report = Report(model=getattr(provider, "name", "none") if _usable(provider) else "none")
    steps = [p for p in PASSES if p in passes]
    for n, name in enumerate(steps):
        if progress:  # in hundredths, so a bar is drawn for a handful of passes
            progress(100 * n // len(steps), 100, "curating")
        # A pair a person judged (duplicate, conflict or fine: Review.judge) is neither listed nor proposed again.
        report.findings += [f for f in _pass(name, corpus, provider, report, pending, profile)
                            if not (f.kind in PAIRS and frozenset(f.ids) in judged)]
    if progress:
        progress(100, 100, "curating")
    _account(provider, report)
    if not dry_run:
        _propose(vault, review, corpus, report, ruled, waiting, max_actions, apply)
    else:
        report.selected = _selected(report, ruled, waiting, max_actions)
    report.seconds = time.monotonic() - started
    return report


def _usable(provider) -> bool:
    return provider is not None and getattr(provider, "available", True)


def _pass(name: str, corpus: Corpus, provider, report: Report, pending, profile) -> list[Finding]:
    if name == "duplicates":
        return duplicates.find(corpus)
    if name == "paths":
        return deadpaths.find(corpus)
    if name == "decay":
        return decay.find(corpus, pending)
    if name == "profile":
        return _profile(profile)
    if name == "conflicts":
        dup_pairs = {frozenset(f.ids) for f in report.findings if f.kind == "merge-duplicate"}
        return _conflicts(corpus, provider, report, dup_pairs)
    if name == "aliases":
        return _aliases(corpus, provider, report)
    raise HafizaError(f"unknown pass {name!r}; passes are {', '.join(PASSES)}", field="passes")


def _profile(profile) -> list[Finding]:
    """The profile's own demotion report, as one line to read: which lines did not fit, and why."""
    if profile is None:
        return []
    left = [line for line in profile.lines if not line.included]
    if not left:
        return []
    names = ", ".join(line.id or repr(line.text[:30]) for line in left[:8])
    return [Finding("profile", tuple(line.id for line in left if line.id),
                    f"the session-start profile is full ({profile.cap} chars): {plural(len(left), 'line')} left to "
                    f"prompt-time recall ({names}); shorten or merge rules, or raise HAFIZA_PROFILE_CHARS",
                    "; ".join(f"{line.id or 'pinned'}: {line.reason}" for line in left[:8]), 1.0,
                    "profile:" + "+".join(sorted(line.id or "pinned" for line in left)), proposable=False)]


def _conflicts(corpus: Corpus, provider, report: Report, dup_pairs: set) -> list[Finding]:
    pairs = conflicts.candidates(corpus, dup_pairs)
    if not _usable(provider):
        if pairs:
            report.model_notes.append(f"no model provider: {plural(len(pairs), 'related pair')} listed, not judged")
        return [conflicts.report(*pair) for pair in pairs]
    found = []
    for pair in pairs:
        judged = None if _spent(provider, report) else _ask(provider, lambda: conflicts.judge(provider, *pair), report)
        found.append(judged or conflicts.report(*pair))
    return found


def _aliases(corpus: Corpus, provider, report: Report) -> list[Finding]:
    if not _usable(provider):
        report.model_notes.append("no model provider: aliases not written")
        return []
    found = []
    for e in aliases.wanting(corpus):
        if _spent(provider, report):
            break
        finding = _ask(provider, lambda: aliases.propose(provider, corpus, e), report)
        if finding is not None:
            found.append(finding)
    return found


def _spent(provider, report: Report) -> bool:
    """The budget is used up: no more calls, and the run says so once."""
    if not getattr(provider, "spent", False):
        return False
    if not any(n.startswith("budget spent") for n in report.model_notes):
        report.model_notes.append(f"budget spent: all {provider.calls} model calls were made")
    return True


def _ask(provider, call, report: Report):
    """One model call: an answer that fails (transport, invalid JSON, spent budget) is noted, never applied."""
    from hafiza.vault.offline.provider import BudgetSpent

    try:
        return call()
    except BudgetSpent:
        _spent(provider, report)  # notes it, once
        return None
    except HafizaError as exc:
        report.model_notes.append(f"answer discarded: {exc.message[:200]}")
        return None


def _account(provider, report: Report) -> None:
    if provider is not None:
        report.calls = getattr(provider, "calls", 0)
        report.tokens = (getattr(provider, "tokens_in", 0), getattr(provider, "tokens_out", 0))


def _selected(report: Report, ruled: set, waiting: set, max_actions: int):
    """The proposable findings to write now, in pass order; counts what is skipped and why."""
    touched: set[str] = set()
    chosen = []
    for finding in report.findings:
        if not finding.proposable:
            continue
        if finding.key in ruled:
            report.ruled += 1
        elif finding.key in waiting:
            report.waiting += 1
        elif touched & set(finding.ids) or len(chosen) >= max_actions:
            report.deferred += 1  # a second change to one memory waits for the first to be decided
        else:
            touched |= set(finding.ids)
            chosen.append(finding)
    return chosen


def _propose(vault, review: Review, corpus: Corpus, report: Report, ruled, waiting, max_actions, apply) -> None:
    chosen = report.selected = _selected(report, ruled, waiting, max_actions)
    if apply:
        for finding in [f for f in chosen if f.exact]:
            report.applied.append((finding, review.apply(build(finding, corpus))))
        chosen = [f for f in chosen if not f.exact]
    if not chosen:
        return
    report.branch = review.start("curate")
    for finding in chosen:
        report.proposed.append((finding, review.propose(report.branch, build(finding, corpus))))


def run(vault, *, embedder=None, provider=None, projects=None, profile_cap=None, progress=None,
        dry_run: bool = False, **options) -> Report:
    """Curate a vault as it is now: hand edits recorded, index and vectors brought up to the files first
    (a dry run writes nothing, so it reads the files as they are)."""
    from hafiza.indexer.index import Index
    from hafiza.indexer.profile import build_profile
    from hafiza.indexer.refresh import refresh_all
    from hafiza.vault.store import usage

    from .corpus import load, sidecar_vectors

    if not dry_run:
        with vault.transaction():
            pass  # records hand edits and finishes an interrupted write: proposals start from a clean main
    # Waits for an embedding in progress (the one an import or a write started in the background): a run
    # right after `hafiza import` read no vectors and went by words alone, without saying so (issue 30, item 4).
    refresh_all(vault.root, progress, embedder, wait=True)
    corpus = load(vault, vectors=sidecar_vectors(vault.root, embedder), projects=projects)
    profile = build_profile(Index(vault.root), vault.root, None, profile_cap)
    report = curate(vault, corpus, provider=provider, pending=usage.pending(vault.sidecar), profile=profile,
                    progress=progress, dry_run=dry_run, **options)
    if not dry_run:
        save_related(vault.sidecar, report)
    return report


def save_related(sidecar, report: Report) -> None:
    """Keep the run's related pairs (listed, not proposed) for a person to judge one by one (`hafiza ui`);
    rebuildable like the rest of the sidecar: the next run lists them again."""
    import json

    from hafiza.vault.files import atomic_write

    pairs = [f.to_json() for f in report.findings if f.kind == "related"]
    atomic_write(sidecar / RELATED_FILE, json.dumps({"pairs": pairs}, ensure_ascii=False), fsync=False)


def related(sidecar) -> list[dict]:
    """The related pairs the last run listed (see save_related); [] when none was run or the file is unreadable."""
    import json

    try:
        pairs = json.loads((sidecar / RELATED_FILE).read_text(encoding="utf-8"))["pairs"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    return [p for p in pairs if isinstance(p, dict) and isinstance(p.get("memories"), list) and p.get("key")]
