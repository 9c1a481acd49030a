"""A verify run: probe the claims memories make, write what changed into their frontmatter, one commit.

A memory gets a summary (`verified: failed`, with `verified_at`, `verified_by`,
`verified_note` and `verified_commit` beside it: flat, as Obsidian's Properties
view edits them, issue 32): `failed` when any claim failed (recall labels it
and ranks it lower; nothing is archived or deleted), `ok` when none failed and
one held, else `unknown`. `at` is when the status began, so the label reads
"unverified since <at>". A memory is rewritten only when its summary changed.
Each claim's own outcome, and when it was last probed, is kept in the sidecar
(`.hafiza/verify.json`), which makes re-probing incremental: a claim is checked
again once its interval has passed or the project's history touched its path
since, or always with `force`.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from hafiza.vault.files import atomic_write, read_regular
from hafiza.vault.format.model import Memory
from hafiza.vault.format.text import plural
from hafiza.vault.store.projects import folder

from .probes import Context, Outcome, check
from .tools import git

STATE = "verify.json"
# Days before a claim is probed again when nothing says it changed. Files and git are cheap and change
# with every pull; a URL or a pull request is someone else's server.
INTERVAL_DAYS = {"url": 7, "pr": 7}
DEFAULT_INTERVAL_DAYS = 1
PATH_PROBES = ("path", "contains", "symbol")


@dataclass
class Result:
    memory: str
    claim: int
    probe: str
    outcome: Outcome
    probed: bool = True           # False: within its interval and untouched, the stored outcome stands


@dataclass
class Report:
    results: list[Result] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)        # memories whose frontmatter was rewritten
    commit: str | None = None
    seconds: float = 0.0

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.results:
            out[r.outcome.status] = out.get(r.outcome.status, 0) + 1
        return out

    def to_json(self) -> dict:
        return {"commit": self.commit, "changed": self.changed, "counts": self.counts(),
                "seconds": round(self.seconds, 2),
                "results": [{"memory": r.memory, "claim": r.claim, "probe": r.probe, "status": r.outcome.status,
                             "detail": r.outcome.detail, "probed": r.probed} for r in self.results]}


def verify(vault, *, ids=None, projects: dict | None = None, network: bool = False, allow_private: bool = False,
           force: bool = False, dry_run: bool = False, now: dt.datetime | None = None, timeout: float = 5.0) -> Report:
    """Probe the claims of `ids` (every memory with claims when None) and commit what changed."""
    started = time.monotonic()
    now = now or dt.datetime.now()
    projects = projects or {}
    state = _load_state(vault.sidecar)
    report = Report()
    heads: dict[str, str | None] = {}
    contexts: dict[Path | None, Context] = {}  # one per project: what it reads once is shared by its claims
    updated: list[Memory] = []
    for memory in _memories(vault, ids):
        root = folder(memory.scope, projects)
        ctx = contexts.setdefault(root, Context(project=root, network=network, allow_private=allow_private,
                                                timeout=timeout))
        head = _head(root, heads)
        outcomes = []
        for n, claim in enumerate(memory.claims):
            key = _state_key(memory.id, claim)
            seen = state.get(key)
            if not force and _fresh(claim, seen, head, root, now):
                outcome = Outcome(seen["status"], seen["detail"])
                report.results.append(Result(memory.id, n, _probe_name(claim), outcome, probed=False))
            else:
                outcome = check(claim, ctx)
                state[key] = {"status": outcome.status, "detail": outcome.detail, "at": now.isoformat(timespec="seconds"),
                              "head": head}
                report.results.append(Result(memory.id, n, _probe_name(claim), outcome))
            outcomes.append(outcome)
        changed = _labelled(memory, outcomes, now.date(), head)
        if changed is not None:
            updated.append(changed)
    if updated and not dry_run:
        # Memories were read before the probes ran; _commit applies the results to them as they are now.
        report.commit = _commit(vault, updated, report)
    report.changed = [m.id for m in updated]
    if not dry_run:
        _save_state(vault.sidecar, state)
    report.seconds = time.monotonic() - started
    return report


def _memories(vault, ids) -> list[Memory]:
    if ids:
        return [vault.get(i) for i in ids]
    return [m for m in vault.load_all()[0] if m.claims]


def _head(root: Path | None, heads: dict) -> str | None:
    if root is None:
        return None
    key = str(root)
    if key not in heads:
        out = git(root, "rev-parse", "--verify", "--quiet", "HEAD")
        heads[key] = out.strip() if out else None
    return heads[key]


def _state_key(memory_id: str, claim) -> str:
    """What a stored outcome belongs to: the memory and the claim as written (rewrite it and it is new)."""
    import hashlib

    bare = {k: v for k, v in claim.items() if k != "verified"} if isinstance(claim, dict) else claim
    digest = hashlib.blake2b(json.dumps(bare, sort_keys=True, default=str).encode(), digest_size=8).hexdigest()
    return f"{memory_id}#{digest}"


def _probe_name(claim) -> str:
    return str(claim.get("probe"))[:40] if isinstance(claim, dict) else "?"


def _fresh(claim, seen: dict | None, head: str | None, root: Path | None, now: dt.datetime) -> bool:
    """The stored outcome still stands: probed within its interval, and no commit since touched its path."""
    if not seen or seen.get("status") == "invalid" or not isinstance(claim, dict):
        return False
    if not isinstance(claim.get("probe"), str) or not isinstance(claim.get("args") or {}, dict):
        return False
    try:
        age = now - dt.datetime.fromisoformat(seen["at"])
    except (KeyError, TypeError, ValueError):
        return False
    if age > dt.timedelta(days=INTERVAL_DAYS.get(claim.get("probe"), DEFAULT_INTERVAL_DAYS)):
        return False
    if head == seen.get("head") or root is None:
        return True
    if claim.get("probe") not in PATH_PROBES or not seen.get("head"):
        return False  # the project moved on: branches, scripts and dependencies may have changed with it
    path = (claim.get("args") or {}).get("path")
    if not isinstance(path, str) or path.startswith("-"):
        return False
    touched = git(root, "log", "--format=%H", "-n", "1", f"{seen['head']}..{head}", "--", path)
    return touched is not None and not touched.strip()


def _labelled(memory: Memory, outcomes: list[Outcome], today: dt.date, head: str | None) -> Memory | None:
    """The memory with its new summary, or None when the summary did not change."""
    summary = _summary(memory.verified, outcomes, today, head)
    return None if summary == memory.verified else memory.evolve(verified=summary)


def _summary(before, outcomes: list[Outcome], today: dt.date, head: str | None) -> dict | None:
    if not outcomes:
        return before
    failed = [o for o in outcomes if o.status == "failed"]
    status = "failed" if failed else "ok" if any(o.status == "ok" for o in outcomes) else "unknown"
    detail = "; ".join(o.detail for o in failed) if failed else _tally(outcomes)
    before = before if isinstance(before, dict) else {}
    if before.get("status") == status and before.get("detail") == detail and before.get("by") == "verify":
        return before  # unchanged: keep its date, so the label says since when
    summary = {"status": status, "at": today, "by": "verify", "detail": detail[:300]}
    if head:
        summary["commit"] = head[:10]
    return summary


def _tally(outcomes: list[Outcome]) -> str:
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
    return ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))


def _commit(vault, updated: list[Memory], report: Report) -> str | None:
    """Write the results onto each memory as it is now, under the writer lock: a memory whose claims a
    person or agent changed while the probes ran is left for the next run, never overwritten."""
    counts = report.counts()
    failed = [m.id for m in updated if (m.verified or {}).get("status") == "failed"]
    with vault.transaction():
        fresh = []
        for m in updated:
            now = vault.get(m.id)
            if now.claims == m.claims:
                fresh.append(now.evolve(verified=m.verified))
        if not fresh:
            return None
        paths = [vault.write_file(m) for m in fresh]
        subject = f"verify {plural(len(updated), 'memory')}" + (f" ({len(failed)} failed)" if failed else "")
        reason = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + " claims"
        return vault.commit(paths, subject, "verify", reason,
                            trailers={"Hafiza-Memories": " ".join(m.id for m in updated)})


def _load_state(sidecar: Path) -> dict:
    try:
        data = json.loads(read_regular(Path(sidecar) / STATE, limit=64 << 20))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save_state(sidecar: Path, state: dict) -> None:
    Path(sidecar).mkdir(parents=True, exist_ok=True)
    atomic_write(Path(sidecar) / STATE, json.dumps(state, ensure_ascii=False), fsync=False)
