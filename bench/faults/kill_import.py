"""After kill -9 of an import at a random moment, does the vault hold the whole import or none of it?

    .venv/bin/python bench/faults/kill_import.py [--trials 10] [--items 2000] [--seed 7] [--embedder hash]

Each trial is a fresh vault under a temporary folder: `hafiza init`, three
`hafiza remember`s, then `hafiza import big.jsonl` (--items generated
memories with known ids) started in its own process group; after a random
delay in [0, T] (T: one uninterrupted import, measured first; seeded RNG) the
whole group gets SIGKILL, as closing a terminal kills hafiza and the git it
is running, which can leave `.git/index.lock`. The delays are stratified: one
in each of --trials equal slices of [0, T], so every phase of the import
(reading, writing files, git add and commit, the index) gets its kills.

Then, as a user would: `hafiza doctor` (must name a stale lock and an
interrupted write where there is one), `hafiza remember "after the kill"`
(must succeed; rolls back or finishes what the kill left), and the checks:
the import's commit is in the log and every item is a tracked file, or no
item's file exists and no commit ever held one (no "record manual edits"
of half an import); `git status --porcelain --untracked-files=all` empty; no
`*.tmp`, no `.git/index.lock`, no journal; `hafiza search` finds the new
memory (and an imported one when the import landed); doctor clean after.

Classes: finished before the kill, killed before anything was written,
killed mid-write and rolled back, killed after the commit landed, VIOLATION.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness as h

SYLLABLES = ["ka", "lo", "mi", "nu", "pe", "ri", "so", "tu", "ve", "zo"]
SEEDS = {"seed-deploys": "Deploy to production only from main, after CI is green.",
         "seed-pnpm": "The team switched from npm to pnpm; use pnpm install --frozen-lockfile.",
         "seed-backups": "The database backup runs every night at 03:00 and goes to object storage."}
AFTER = "after the kill"

CLASSES = ("finished before the kill", "killed before anything was written", "killed mid-write, rolled back",
           "killed after the commit landed", "VIOLATION")


def word(n: int) -> str:
    """A made-up word only item `n` holds, to search for."""
    return "".join(SYLLABLES[int(d)] for d in f"{n:05d}")


def write_source(path: Path, items: int) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for n in range(items):
            fh.write(json.dumps({"id": f"bulk-{n:05d}", "title": f"Bulk note {n} {word(n)}",
                                 "text": f"Bulk note {n}: the {word(n)} service rotates its logs every "
                                         f"{n % 13 + 1} hours and pages the on-call after {n % 7 + 2} failures.",
                                 "tags": ["bulk"]}) + "\n")


def new_vault(where: Path, embedder: str) -> tuple[Path, dict]:
    root = where / "vault"
    env = h.hafiza_env(root, where / "home", embedder)
    h.hz_ok(env, "init")
    for memory_id, text in SEEDS.items():
        h.hz_ok(env, "remember", text, "--id", memory_id)
    return root, env


def bulk_files(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "memories").glob("bulk-*.md"))


def calibrate(work: Path, source: Path, embedder: str) -> dict:
    """One import left alone: how long it takes, and when its journal appears and goes (the commit)."""
    root, env = new_vault(work / "calibration", embedder)
    journal = root / ".hafiza" / "journal"
    start = time.monotonic()
    proc = subprocess.Popen(h.hafiza_argv("import", str(source)), env=env, cwd=work,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    appeared = gone = None
    while proc.poll() is None:
        there = journal.exists()
        if there and appeared is None:
            appeared = time.monotonic() - start
        if appeared is not None and not there and gone is None:
            gone = time.monotonic() - start
        time.sleep(0.002)
    total = time.monotonic() - start
    if proc.returncode != 0:
        raise RuntimeError(f"the calibration import failed ({proc.returncode}): {proc.stderr.read().strip()}")
    shutil.rmtree(work / "calibration", ignore_errors=True)
    return {"import_s": round(total, 3), "first_write_s": appeared and round(appeared, 3),
            "commit_s": gone and round(gone, 3)}


def trial(n: int, delay: float, work: Path, source: Path, items: int, embedder: str) -> dict:
    where = work / f"trial-{n}"
    root, env = new_vault(where, embedder)
    seeds_before = {name: (root / "memories" / f"{name}.md").read_bytes() for name in SEEDS}
    base = h.head(root)
    proc = subprocess.Popen(h.hafiza_argv("import", str(source)), env=env, cwd=where, process_group=0,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay)
    finished = proc.poll() is not None
    if not finished:
        os.killpg(proc.pid, signal.SIGKILL)
    rc = proc.wait()
    group_gone = h.wait_group_gone(proc.pid)
    subject = f"hafiza: import {items} memories"

    # What the kill left, before anything else touches the vault.
    left = h.leftovers(root)
    landed = subject in h.subjects_since(root, base)
    seen = {"files_of_import": len(bulk_files(root)), "commit_landed": landed, **left,
            "uncommitted": len(h.porcelain(root))}
    doc = h.doctor(env)
    after = h.hz(env, "remember", AFTER, "--id", "after-the-kill")
    warnings = [line for line in h.stderr_lines(after.stderr) if line.startswith("warning:")]

    problems = []
    if not group_gone:
        problems.append(f"processes of the killed group still alive: {h.group_members(proc.pid)}")
    if left["index_lock"] and doc["checks"].get("git") != "fail":
        problems.append(f"doctor did not report the stale .git/index.lock: {doc['lines']}")
    if (left["journal"] or h.writer_temp_files(left["temp_files"])) and doc["checks"].get("interrupted writes") == "ok":
        problems.append(f"doctor did not report the interrupted write: {doc['lines']}")
    if after.returncode != 0:
        problems.append(f"`hafiza remember` after the kill exited {after.returncode}: {after.stderr.strip()[-1500:]}")
    if h.TRACEBACK in after.stderr:
        problems.append("traceback from `hafiza remember` after the kill")
    problems += whole_or_absent(root, base, subject, items, landed)
    problems += clean_after(root, env, base, seeds_before, landed, items)

    # Not in the list, so a note rather than a violation: git's pathspec file of a killed `git add`.
    notes = [f".git/{name} left by the killed writer" for name in h.pathspec_files(root)]
    if problems:
        kind = "VIOLATION"
    elif finished:
        kind = CLASSES[0]
    elif landed:
        kind = CLASSES[3]
    elif seen["files_of_import"] or left["journal"] or left["temp_files"]:
        kind = CLASSES[2]
    else:
        kind = CLASSES[1]
    result = {"trial": n, "delay_s": round(delay, 3), "class": kind, "import_rc": rc, "at_kill": seen,
              "doctor_after_kill": {"rc": doc["rc"], "lines": doc["lines"]}, "warnings": warnings,
              "problems": problems, "notes": notes}
    if not problems:
        shutil.rmtree(where, ignore_errors=True)
    else:
        result["kept_at"] = str(where)
    return result


def whole_or_absent(root: Path, base: str, subject: str, items: int, landed: bool) -> list[str]:
    files = bulk_files(root)
    touched = [line for line in h.git(root, "log", "--format=%s", "--name-only", f"{base}..HEAD").splitlines()
               if line.startswith("memories/bulk-")]
    if landed:
        missing = items - len(files)
        known = h.tracked(root)
        untracked = [f for f in files if f"memories/{f}" not in known]
        return ([f"the import landed but {missing} of its {items} files are missing"] if missing else []) + \
               ([f"{len(untracked)} import files not tracked"] if untracked else [])
    problems = []
    if files:
        problems.append(f"no import commit, yet {len(files)} of its files exist (e.g. {files[:3]})")
    if touched:
        committed_by = h.subjects_since(root, base)
        problems.append(f"no import commit, yet {len(touched)} import files were committed by {committed_by}")
    return problems


def clean_after(root: Path, env: dict, base: str, seeds_before: dict, landed: bool, items: int) -> list[str]:
    problems = []
    subjects = h.subjects_since(root, base)
    if "hafiza: record manual edits" in subjects:
        problems.append(f"a 'record manual edits' commit after the kill: {subjects}")
    if not subjects or subjects[-1] != "hafiza: remember after-the-kill":
        problems.append(f"the last commit is not the remember after the kill: {subjects}")
    status = h.porcelain(root)
    if status:
        problems.append(f"git status not clean: {status[:5]} ({len(status)} lines)")
    left = h.leftovers(root)
    if left["temp_files"]:
        problems.append(f"temp files left: {left['temp_files'][:5]}")
    if left["index_lock"]:
        problems.append(".git/index.lock still there")
    if left["journal"]:
        problems.append(".hafiza/journal still there")
    for name, data in seeds_before.items():
        path = root / "memories" / f"{name}.md"
        if not path.exists() or path.read_bytes() != data:
            problems.append(f"seed memory {name} changed or gone")
    rc, ids, err = h.search_ids(env, AFTER)
    if rc != 0 or "after-the-kill" not in ids:
        problems.append(f"search for the new memory: exit {rc}, ids {ids[:5]}, {err[-500:]}")
    if landed:
        last = items - 1
        rc, ids, err = h.search_ids(env, word(last))
        if rc != 0 or f"bulk-{last:05d}" not in ids:
            problems.append(f"search for an imported memory ({word(last)}): exit {rc}, ids {ids[:5]}, {err[-500:]}")
    doc = h.doctor(env)
    bad = [line for line in doc["not_ok"] if not line.split(":")[0].endswith(("aliases", "claude-code memory"))]
    if doc["rc"] != 0 or bad:
        problems.append(f"doctor after the next write: exit {doc['rc']}, {bad}")
    return problems


def run(trials: int = 10, items: int = 2000, seed: int = 7, embedder: str = "hash", keep: bool = False) -> dict:
    """Every trial; a report with the class of each."""
    work = Path(tempfile.mkdtemp(prefix="hafiza-kill-"))
    results: list[dict] = []
    try:
        source = work / "big.jsonl"
        write_source(source, items)
        h.log(f"kill_import: measuring one uninterrupted import of {items:,} items ({embedder} embedder)")
        timing = calibrate(work, source, embedder)
        phases = f": first file at {timing['first_write_s']} s, commit at {timing['commit_s']} s, then the index" \
            if timing["commit_s"] else " (no journal seen, so no phases)"
        h.log(f"  import took {timing['import_s']} s{phases}")
        # One moment in each of `trials` equal slices of [0, T], in shuffled order: ten plain uniform draws
        # can all miss a phase (seed 7 put none past 0.65 T, so no kill landed after the commit).
        rng = random.Random(seed)
        slots = list(range(trials))
        rng.shuffle(slots)
        for n, slot in enumerate(slots, 1):
            delay = timing["import_s"] * (slot + rng.random()) / trials
            r = trial(n, delay, work, source, items, embedder)
            results.append(r)
            at = r["at_kill"]
            tmp = f": {', '.join(at['temp_files'][:3])}" if at["temp_files"] else ""
            h.log(f"  trial {n}/{trials}: kill at {r['delay_s']:.2f} s -> {r['class']} "
                  f"({at['files_of_import']} files, journal {'yes' if at['journal'] else 'no'}, "
                  f"index.lock {'yes' if at['index_lock'] else 'no'}, {len(at['temp_files'])} tmp{tmp})")
            for problem in r["problems"]:
                h.log(f"    VIOLATION: {problem}")
            if r["problems"]:
                h.log(f"    the vault is kept at {r['kept_at']}")
    finally:
        if not keep and not any(r["problems"] for r in results):
            shutil.rmtree(work, ignore_errors=True)
    counts = {c: sum(r["class"] == c for r in results) for c in CLASSES}
    return {"trials": trials, "items": items, "seed": seed, "embedder": embedder, "timing": timing,
            "whole_or_absent": trials - counts["VIOLATION"], "counts": counts, "results": results,
            "command": f"hafiza import big.jsonl ({items:,} items) in its own process group; SIGKILL to the group "
                       f"after a random moment in [0, {timing['import_s']}] s, one per slice (seed {seed}); "
                       f"then hafiza doctor; hafiza remember \"{AFTER}\"; git status/log checks; hafiza search; "
                       "hafiza doctor"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--items", type=int, default=2000, help="memories in the import (default 2,000)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--embedder", default="hash", help="HAFIZA_EMBEDDER for every hafiza run (default hash)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    args = ap.parse_args(argv)
    report = run(args.trials, args.items, args.seed, args.embedder, args.keep)
    print(f"whole or absent: {report['whole_or_absent']}/{report['trials']}; "
          + ", ".join(f"{c}: {k}" for c, k in report["counts"].items() if k))
    return 1 if report["counts"]["VIOLATION"] else 0


if __name__ == "__main__":
    sys.exit(main())
