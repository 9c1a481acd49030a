"""Do the fault guarantees hold: kill -9 of imports, every write on a full disk, the fast fault tests?

    .venv/bin/python bench/faults/run.py            # run, print the figures
    .venv/bin/python bench/faults/run.py --save     # and write bench/results/faults-YYYY-MM-DD.{json,md} (make faults)
    .venv/bin/python bench/faults/run.py --commit HEAD --label head   # a frozen copy of HEAD, not the working tree

Runs bench/faults/kill_import.py (--trials kill -9s of `hafiza import` at random
moments; each must leave the whole import or none of it), bench/faults/disk_full.py
(each write command at each free-space level on a small tmpfs: landed or refused in
one clear line; skipped with a message where no tmpfs can be mounted), and
`pytest -q` over the fast fault tests that exist (tests/test_faults.py,
test_daemon_faults.py, test_fences.py, test_secrets.py, test_secret_paths.py).

By default every process runs the working tree as it is: the suite is how a
fix is checked before it is committed. `--commit REV` runs a frozen copy of
REV instead (bench/common.py's snapshot), to show a fault reproduces on the
old code. Exits 1 on any violation or failing test.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import disk_full
import harness as h
import kill_import
from common import save, snapshot, use_code

TESTS = ("tests/test_faults.py", "tests/test_daemon_faults.py", "tests/test_fences.py", "tests/test_secrets.py",
         "tests/test_secret_paths.py")


def run_tests() -> dict:
    """`pytest -q` over the fault test files that exist; its counts and failing tests."""
    files = [t for t in TESTS if (h.ROOT / t).exists()]
    missing = [t for t in TESTS if t not in files]
    # pyproject's addopts already says -q, and -qq prints no counts when everything passes
    command = [sys.executable, "-m", "pytest", "-o", "addopts=", "-q", "-p", "no:cacheprovider", *files]
    absent = f" ({', '.join(missing)} not there yet)" if missing else ""
    h.log(f"pytest: {' '.join(['pytest', '-q', *files])}{absent}")
    if not files:
        return {"files": [], "missing": missing, "rc": None, "counts": {}, "summary": "no fault test files"}
    start = time.monotonic()
    proc = subprocess.run(command, cwd=h.ROOT, capture_output=True, text=True)
    lines = proc.stdout.splitlines()
    summary = next((line.strip("= ") for line in reversed(lines) if re.search(r"\d+ (passed|failed|error)", line)),
                   (proc.stderr or proc.stdout).strip()[-300:])
    counts = {kind: int(n) for n, kind in re.findall(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)", summary)}
    failing = [line for line in lines if line.startswith(("FAILED ", "ERROR "))]
    h.log(f"  {summary} (exit {proc.returncode})")
    for line in failing:
        h.log(f"    {line}")
    return {"files": files, "missing": missing, "rc": proc.returncode, "counts": counts, "summary": summary,
            "failing": failing, "seconds": round(time.monotonic() - start, 1),
            "command": " ".join(["pytest", "-q", *files])}


# ---- reporting

def violations(report: dict) -> list[str]:
    """One line per trial that broke a rule: where, what it printed, every rule it broke."""
    out = []
    for r in report.get("kill", {}).get("results", []):
        if r["problems"]:
            out.append(f"kill trial {r['trial']} (kill at {r['delay_s']} s): " + "; ".join(r["problems"]))
    for r in report.get("disk_full", {}).get("results", []):
        if r["problems"]:
            out.append(f"disk full, `{shlex.join(r['argv'])}` with {r['free']:,} B free (asked {r['level']:,}): "
                       f"exit {r['rc']}; " + "; ".join(r["problems"]) + f". Last lines on stderr: {r['stderr'][-3:]}")
    return out


def markdown(report: dict) -> str:
    m = report["machine"]
    out = [f"# Fault suite, {report['date']}", "",
           f"Machine: {m['nproc']} cores ({m['cpu']}), Python {m['python']}, git {m['git']}, {m['platform']}; "
           f"hafiza at {report['code']}. Load average (1 min) {m['loadavg_1m']} at the start. "
           f"Took {report['minutes']} min.", "",
           f"Run: `{report['run']}`{' (`make faults`)' if report['run'].endswith('run.py --save') else ''}. "
           f"Verdict: **{report['verdict']}**.", ""]
    out += kill_md(report.get("kill"))
    out += disk_md(report.get("disk_full"))
    t = report.get("tests")
    if t:
        out += ["## Fast fault tests", "", f"`{t.get('command', 'pytest')}`: {t['summary']} (exit {t['rc']}"
                + (f", {t['seconds']} s" if "seconds" in t else "") + ")."
                + (f" Not there yet: {', '.join(t['missing'])}." if t["missing"] else ""), ""]
        out += [f"- `{line}`" for line in t.get("failing", [])] + ([""] if t.get("failing") else [])
    found = violations(report)
    out += ["## Violations", ""] + ([f"- {v}" for v in found] if found else ["None."]) + [""]
    return "\n".join(out)


def kill_md(k: dict | None) -> list[str]:
    if not k:
        return []
    t = k["timing"]
    out = ["## kill -9 of `hafiza import` (bench/faults/kill_import.py)", "",
           f"**Whole or absent: {k['whole_or_absent']}/{k['trials']}.** "
           + ", ".join(f"{c}: {n}" for c, n in k["counts"].items() if n) + ".", "",
           f"One uninterrupted import of {k['items']:,} items ({k['embedder']} embedder) took {t['import_s']} s: "
           + (f"first file written at {t['first_write_s']} s, commit at {t['commit_s']} s, then the index. "
              if t["commit_s"] else "(this code keeps no journal, so its phases were not timed). ")
           + f"Kill moments: one uniform in each of {k['trials']} equal slices of [0, {t['import_s']}] s, shuffled, "
           f"seed {k['seed']}.", "",
           f"Per trial: {k['command']}.", "",
           "| trial | kill at s | class | at the kill: files / journal / index.lock / tmp | doctor after the kill "
           "| warnings of the next write |", "|---|---|---|---|---|---|"]
    for r in k["results"]:
        a = r["at_kill"]
        doc = "; ".join(line for line in r["doctor_after_kill"]["lines"] if not line.startswith("ok")) or "all ok"
        out.append(f"| {r['trial']} | {r['delay_s']:.2f} | {r['class']} | {a['files_of_import']} / "
                   f"{'yes' if a['journal'] else 'no'} / {'yes' if a['index_lock'] else 'no'} / "
                   f"{len(a['temp_files'])} | exit {r['doctor_after_kill']['rc']}: {doc} | "
                   f"{'; '.join(r['warnings']) or '—'} |")
    notes = sorted({re.sub(r"\d+", "N", n) for r in k["results"] for n in r.get("notes", [])})
    return out + [""] + ([f"Notes: {'; '.join(notes)}.", ""] if notes else [])


def disk_md(d: dict | None) -> list[str]:
    if not d:
        return []
    out = ["## Full disk (bench/faults/disk_full.py)", ""]
    if "skipped" in d:
        return out + [f"Skipped: {d['skipped']}.", ""]
    kb = [f"{s:,}" for s in d["levels"]]
    out += [f"`{d['mount']}`; a fresh copy of the vault per trial, a filler file leaving each of {len(kb)} levels "
            f"free (bytes asked: {', '.join(kb)}; tmpfs counts whole 4 KiB pages), then the command; the filler goes, "
            "a refused command is run again, then `hafiza remember` as the next write.", "",
            "| command | setup | landed | of which with an index warning | refused cleanly | violations |",
            "|---|---|---|---|---|---|"]
    for name, t in d["summary"].items():
        setup = "; ".join(f"`{s}`" for s in d["setup"].get(name, [])) or "—"
        out.append(f"| `{d['commands'][name]}` | {setup} | {t['landed']} | {t['index_warning']} | "
                   f"{t['refused cleanly']} | {t['VIOLATION']} |")
    out += ["", "Lines seen on stderr (free bytes where first seen; paths and ids shortened):", ""]
    seen: dict[tuple, int] = {}
    for r in d["results"]:
        for line in r["stderr"]:
            key = (r["command"], re.sub(r"/\S*/disk/vault", "<vault>", re.sub(r"\d{3,}", "N", line)))
            seen.setdefault(key, r["free"])
    out += [f"- {name}, {free:,} B: `{line}`" for (name, line), free in seen.items()]
    notes: dict[str, list[str]] = {}
    for r in d["results"]:
        for n in r["notes"]:
            notes.setdefault(re.sub(r"\d+", "N", n), []).append(f"{r['command']} {r['free']:,}")
    if notes:
        out += ["", "Notes (not violations):", ""]
        out += [f"- {n}: {len(where)} trial(s) ({', '.join(where[:6])}{', ...' if len(where) > 6 else ''})"
                for n, where in notes.items()]
    return out + [""]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=10, help="kill -9 trials (default 10)")
    ap.add_argument("--items", type=int, default=2000, help="memories in the killed import (default 2,000)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--embedder", default="hash", help="HAFIZA_EMBEDDER for every hafiza run (default hash)")
    ap.add_argument("--size", default="8m", help="tmpfs size for the disk-full trials")
    ap.add_argument("--step-kb", type=int, default=16)
    ap.add_argument("--max-kb", type=int, default=256)
    ap.add_argument("--parts", default="kill,disk,tests", help="which of kill,disk,tests to run")
    ap.add_argument("--commit", default="worktree", help="'worktree' (default) or a revision to run a frozen copy of")
    ap.add_argument("--label", help="saved as faults-LABEL-DATE instead of faults-DATE")
    ap.add_argument("--save", action="store_true", help="write bench/results/faults-DATE.json and .md")
    args = ap.parse_args(argv)
    parts = set(args.parts.split(","))
    start = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="hafiza-faults-"))
    try:
        code = "the working tree"
        if args.commit != "worktree":
            code = f"{snapshot(args.commit, work / 'code')} (a frozen copy, imported by every process of the run)"
            use_code(work / "code")
        machine = h.machine()
        if args.commit == "worktree":
            code = f"{machine['commit']} (the working tree)"
        h.log(f"fault suite: hafiza at {code}; {machine['nproc']} cores, Python {machine['python']}, "
              f"git {machine['git']}")
        report = {"date": dt.date.today().isoformat(), "machine": machine, "code": code,
                  "run": "python bench/faults/run.py " + " ".join(argv if argv is not None else sys.argv[1:])}
        if "kill" in parts:
            report["kill"] = kill_import.run(args.trials, args.items, args.seed, args.embedder)
        if "disk" in parts:
            report["disk_full"] = disk_full.run(args.size, args.step_kb, args.max_kb, None, args.embedder)
        if "tests" in parts:
            report["tests"] = run_tests()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    found = violations(report)
    tests = report.get("tests") or {}
    failed = bool(tests.get("counts", {}).get("failed") or tests.get("counts", {}).get("errors")
                  or tests.get("counts", {}).get("error") or tests.get("rc") not in (0, None, 5))
    report["verdict"] = "FAIL" if found or failed else "PASS"
    report["minutes"] = round((time.monotonic() - start) / 60, 1)
    text = markdown(report)
    print("\n" + text)
    if args.save:
        name = f"faults-{args.label}" if args.label else "faults"
        save(name, report["date"], report, text)
    return 1 if report["verdict"] == "FAIL" else 0


if __name__ == "__main__":
    sys.exit(main())
