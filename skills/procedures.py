"""Procedures a user repeats, found by counting, never by a model.

From transcripts: each session's tool calls become steps (steps.py); a run of consecutive step templates
that comes back in at least MIN_SESSIONS distinct sessions on at least MIN_DAYS different days is a
procedure. Of runs inside one another only one is kept: the one seen in most sessions, then the longest.
From the episode log (MCP `record_episode`): a task done successfully at least MIN_SUCCESSES times with no
failure since.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from hafiza.vault import episodes as episode_log
from hafiza.vault.format.text import fold_text

from . import transcripts
from .steps import Step, command_step, steps

MIN_SESSIONS, MIN_DAYS, MIN_SUCCESSES = 3, 2, 3
MIN_STEPS, MAX_STEPS = 2, 8   # a procedure is at least two steps; longer runs are cut to the first eight


@dataclass
class Seen:
    """One session (or episode) where the procedure was done."""

    client: str
    session: str
    day: str
    project: str = ""
    cwd: str = ""


@dataclass
class Procedure:
    key: str                      # stable across runs: rulings and open proposals compare it
    source: str                   # transcripts | episodes
    templates: list[str]
    steps: list[Step]             # as done the last time, verbatim
    seen: list[Seen] = field(default_factory=list)
    task: str = ""                # episodes: the task as recorded
    notes: list[str] = field(default_factory=list)  # episodes: what happened, the last times

    @property
    def days(self) -> list[str]:
        return sorted({s.day for s in self.seen})

    @property
    def last(self) -> Seen:
        return max(self.seen, key=lambda s: s.day)


def key_of(source: str, what: str) -> str:
    return f"skill:{source}:" + hashlib.sha256(what.encode("utf-8")).hexdigest()[:16]


# ---- from transcripts

def read_sessions(found: list[tuple[str, Path]], since: dt.date | None = None) -> dict[tuple[str, str], list]:
    """The tool turns of every transcript in `found`, by (client, session), in order; unreadable files skipped."""
    sessions: dict[tuple[str, str], dict] = {}
    for client, path in found:
        try:
            turns = transcripts.read(client, path, {})
        except transcripts.UNREADABLE:
            continue
        for turn in turns:
            if turn.call is not None and (since is None or turn.time[:10] >= since.isoformat()):
                # a message written again as it updates (Gemini CLI) is one call: the last line wins
                sessions.setdefault((turn.client, turn.session), {})[turn.key] = turn
    return {k: sorted(v.values(), key=lambda t: (t.time, t.pos)) for k, v in sessions.items()}


def session_steps(turns: list) -> list[Step]:
    """A session's steps in order, a step repeated at once (a retry) counted once."""
    out: list[Step] = []
    for turn in turns:
        for step in steps(turn.call):
            if not out or out[-1].template != step.template:
                out.append(step)
    return out


def from_sessions(sessions: dict[tuple[str, str], list]) -> list[Procedure]:
    """The procedures recurring in `sessions` (see the module's docstring), most sessions first."""
    done: dict[tuple[str, str], tuple[Seen, list[Step], list[str]]] = {}
    for (client, session), turns in sessions.items():
        steps_ = session_steps(turns)
        if len(steps_) >= MIN_STEPS:
            first = turns[0]
            seen = Seen(client, session, first.time[:10], first.project, first.call.cwd)
            done[(client, session)] = (seen, steps_, [s.template for s in steps_])
    recurring = _recurring(done)
    # The run seen in the most sessions wins, the longest among equals. A run inside or around a kept one, or
    # sharing a step with it in none but its sessions, is the same procedure (a step fewer or more): left out.
    kept: list[tuple[str, ...]] = []
    holding: dict[str, list[tuple[str, ...]]] = {}  # template -> kept runs with it: only those can cover a run
    for run in sorted(recurring, key=lambda r: (-len(recurring[r]), -len(r), r)):
        near = {other for template in set(run) for other in holding.get(template, ())}
        if not any(_inside(run, other) or _inside(other, run) or recurring[run].keys() <= recurring[other].keys()
                   for other in near):
            kept.append(run)
            for template in set(run):
                holding.setdefault(template, []).append(run)
    out = []
    for run in kept:
        found = sorted(((done[k][0], at) for k, at in recurring[run].items()), key=lambda x: (x[0].day, x[0].session))
        last, at = found[-1]
        steps_ = done[(last.client, last.session)][1][at:at + len(run)]
        out.append(Procedure(key_of("transcripts", "\n".join(run)), "transcripts", list(run), steps_,
                             [seen for seen, _ in found]))
    return sorted(out, key=lambda p: (-len(p.seen), -len(p.templates), p.key))


def _recurring(done: dict) -> dict[tuple[str, ...], dict[tuple[str, str], int]]:
    """Each run of MIN_STEPS to MAX_STEPS templates in MIN_SESSIONS sessions on MIN_DAYS days: the sessions
    and where it starts in each. Level by level: a run is only extended where it already recurs, so
    chance pairs in a long history cost one pass, not eight."""
    out: dict[tuple[str, ...], dict[tuple[str, str], int]] = {}
    alive = {key: range(len(templates) - MIN_STEPS + 1) for key, (_, _, templates) in done.items()}
    for length in range(MIN_STEPS, MAX_STEPS + 1):
        runs: dict[tuple[str, ...], dict[tuple[str, str], int]] = {}
        at: list[tuple[tuple[str, str], int, tuple[str, ...]]] = []
        for key, starts in alive.items():
            templates = done[key][2]
            for start in starts:
                if start + length <= len(templates):
                    run = tuple(templates[start:start + length])
                    runs.setdefault(run, {}).setdefault(key, start)  # the first time in a session counts
                    at.append((key, start, run))
        frequent = {run: found for run, found in runs.items() if len(found) >= MIN_SESSIONS}
        out.update((run, found) for run, found in frequent.items()
                   if len({done[k][0].day for k in found}) >= MIN_DAYS)
        alive = {}
        for key, start, run in at:
            if run in frequent:
                alive.setdefault(key, []).append(start)
        if not alive:
            break
    return out


def _inside(short: tuple, long: tuple) -> bool:
    n = len(short)
    return any(long[i:i + n] == short for i in range(len(long) - n + 1))


# ---- from the episode log

_CODE = re.compile(r"`([^`\n]{1,300})`")


def from_episodes(root: Path, since: dt.date | None = None) -> list[Procedure]:
    """Tasks done successfully MIN_SUCCESSES times or more since their last failure."""
    by_task: dict[str, list[dict]] = {}
    for item in episode_log.read(root):
        task = " ".join(str(item.get("task", "")).split())
        if task and item.get("outcome") in ("success", "failure"):
            by_task.setdefault(fold_text(task), []).append(item)
    out = []
    for folded, items in by_task.items():
        items.sort(key=lambda e: str(e.get("time", "")))
        failures = [n for n, e in enumerate(items) if e["outcome"] == "failure"]
        wins = items[failures[-1] + 1:] if failures else items
        if len(wins) < MIN_SUCCESSES or (since and str(wins[-1].get("time", ""))[:10] < since.isoformat()):
            continue
        seen = [Seen("episode", str(e.get("id", "")), str(e.get("time", ""))[:10]) for e in wins]
        notes = [" ".join(str(e.get("what_happened", "")).split()) for e in wins[-3:]]
        commands = list(dict.fromkeys(c.strip() for note in notes for c in _CODE.findall(note)))
        done = [s for s in (command_step(c) for c in commands) if s is not None]
        out.append(Procedure(key_of("episodes", folded), "episodes", [s.template for s in done], done, seen,
                             task=" ".join(str(wins[-1]["task"]).split()), notes=notes))
    return out


def find(found: list[tuple[str, Path]], root: Path, since: dt.date | None = None) -> list[Procedure]:
    """Every recurring procedure: from the transcripts in `found`, then from the vault's episode log."""
    return from_sessions(read_sessions(found, since)) + from_episodes(root, since)
