"""Does every write command, on a disk filled to the brim, land or refuse in one clear line?

    .venv/bin/python bench/faults/disk_full.py [--size 8m] [--step-kb 16] [--max-kb 256] [--commands remember,undo]

Mounts a small tmpfs (`mount -t tmpfs -o size=8m tmpfs DIR`; needs root or a
mount namespace: where it cannot, it says so and exits 0, and the skip is
what gets recorded) and builds a vault on it. For each write command
(remember, import of a 5-item JSONL, forget, alias, supersede, fold after
`hafiza used`, undo) and each free-space level (0 to --max-kb in --step-kb
steps, plus odd sizes; tmpfs counts whole 4 KiB pages, so the free space
actually left is recorded too), a fresh copy of the vault as it stood before
the command is put on the disk, a filler file leaves that much room, and the
command runs. Then the filler goes; a refused command is tried again (what a
user does next), and `hafiza remember` runs as the next write.

Outcomes: "landed" (exit 0, its commit is there; an index warning allowed);
"refused cleanly" (exit != 0, exactly one `Error: ` line on stderr, no
traceback, no new commit; the retry lands once and the next write leaves
`git status` clean); VIOLATION (a traceback, exit != 0 after the commit
landed, a half-written state, a memory duplicated by the retry, ...).
The tmpfs is unmounted at the end, also on failure.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import harness as h

ODD_SIZES = (1_000, 3_000, 6_000, 9_999, 40_960, 77_777, 123_457, 200_001)  # 40,960: the "40 KB free"
SEEDS = {"seed-a": "Deploy to production only from main, after CI is green.",
         "seed-b": "The team switched from npm to pnpm; use pnpm install --frozen-lockfile.",
         "seed-c": "The database backup runs every night at 03:00 and goes to object storage."}
NEXT = "next-write"


@dataclass
class Command:
    """A write command: what the vault needs first, its arguments, the subject of its commit."""
    setup: list[list[str]]
    subject: str
    args: list[str] = field(default_factory=list)
    texts: int = 0  # how many made-up texts it writes (each must end up in exactly one file)


COMMANDS = {
    "remember": Command([], "hafiza: remember ", texts=1),
    "import": Command([], "hafiza: import 5 memories", texts=5),
    "forget": Command([], "hafiza: forget seed-b", ["forget", "seed-b"]),
    "alias": Command([], "hafiza: alias seed-b", ["alias", "seed-b", "paket yöneticisi", "package manager"]),
    "supersede": Command([], "hafiza: supersede seed-a", ["supersede", "seed-a", "seed-c"]),
    "fold": Command([["used", "seed-a", "seed-b"]], "hafiza: fold usage", ["fold"]),
    "undo": Command([["remember", "A memory written to be undone.", "--id", "to-undo"]], "hafiza: undo ", ["undo"]),
}


def text_of(name: str, level: int, n: int) -> str:
    return f"Disk full trial {name} {level} number {n}: the zorbax{level}x{n} queue drains at night."


def argv_for(name: str, level: int, work: Path) -> list[str]:
    if name == "remember":
        return ["remember", text_of(name, level, 0)]
    if name == "import":
        source = work / f"small-{level}.jsonl"
        source.write_text("".join(json.dumps({"text": text_of(name, level, n)}) + "\n" for n in range(5)))
        return ["import", str(source)]
    return COMMANDS[name].args


# ---- the disk

def mount(where: Path, size: str) -> str | None:
    """Mount a tmpfs of `size` at `where`; None, or why it could not."""
    where.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(where)],
                          capture_output=True, text=True)
    return None if proc.returncode == 0 else (proc.stderr.strip() or f"mount exited {proc.returncode}")


def unmount(where: Path) -> None:
    if subprocess.run(["umount", str(where)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def free_bytes(where: Path) -> int:
    st = os.statvfs(where)
    return st.f_bavail * st.f_frsize


def fill(disk: Path, leave: int) -> int:
    """Fill `disk` with a filler file until at most `leave` bytes are free; the bytes left."""
    want = max(0, free_bytes(disk) - leave)
    chunk = b"\0" * (1 << 20)
    with open(disk / "filler", "wb") as fh:
        while want > 0:
            want -= fh.write(chunk[:min(want, len(chunk))])
    return free_bytes(disk)


def put(template: Path, vault: Path) -> None:
    shutil.rmtree(vault, ignore_errors=True)
    shutil.copytree(template, vault, symlinks=True)


# ---- templates: the vault as it stands just before each command, built once on the disk itself

def templates(disk: Path, work: Path, env: dict, names: list[str]) -> dict[str, Path]:
    vault = disk / "vault"
    h.hz_ok(env, "init")
    for memory_id, text in SEEDS.items():
        h.hz_ok(env, "remember", text, "--id", memory_id)
    base = work / "templates" / "base"
    shutil.copytree(vault, base, symlinks=True)
    out = {}
    for name in names:
        put(base, vault)
        for step in COMMANDS[name].setup:
            h.hz_ok(env, *step)
        out[name] = work / "templates" / name
        shutil.copytree(vault, out[name], symlinks=True)
    return out


# ---- one trial

def trial(name: str, level: int, disk: Path, work: Path, template: Path, env: dict) -> dict:
    vault = disk / "vault"
    put(template, vault)
    spec = COMMANDS[name]
    base = h.head(vault)
    argv = argv_for(name, level, work)
    free = fill(disk, level)
    proc = h.hz(env, *argv)
    (disk / "filler").unlink()
    lines = h.stderr_lines(proc.stderr)
    errors = [line for line in lines if line.startswith("Error: ")]
    others = [line for line in lines if not line.startswith(("Error: ", "warning: "))]
    new = h.subjects_since(vault, base)
    ours = [s for s in new if s.startswith(spec.subject)]
    landed = bool(ours)
    state = {"uncommitted": h.porcelain(vault), **h.leftovers(vault)}

    problems = []
    if h.TRACEBACK in proc.stderr:
        problems.append("traceback on stderr")
    if [s for s in new if not s.startswith(spec.subject)]:
        problems.append(f"commits other than the command's: {new}")
    if proc.returncode == 0:
        outcome = "landed"
        if not landed:
            problems.append(f"exit 0 but no '{spec.subject}...' commit: {new}")
        if state["uncommitted"]:
            problems.append(f"exit 0 but uncommitted changes: {state['uncommitted'][:5]}")
        if state["journal"]:
            problems.append("exit 0 but its journal is left in .hafiza/: doctor reports an interrupted write, and "
                            "the next write rolls back any of its paths edited by hand since")
        if h.writer_temp_files(state["temp_files"]):
            problems.append(f"exit 0 but temp files left: {h.writer_temp_files(state['temp_files'])}")
    else:
        outcome = "refused cleanly"
        if landed:
            problems.append(f"exit {proc.returncode} after its commit landed ({ours}): a retry repeats it")
        if proc.returncode < 0:
            problems.append(f"killed by signal {-proc.returncode}")
        if len(errors) != 1 or others:
            problems.append(f"expected exactly one 'Error: ' line, got {len(errors)} and {len(others)} other line(s)")

    retry = None
    if proc.returncode != 0:  # what a user does once there is room again
        retry = h.hz(env, *argv)
        if not landed and retry.returncode != 0:
            problems.append(f"the retry with room again exited {retry.returncode}: {retry.stderr.strip()[-800:]}")
        if h.TRACEBACK in retry.stderr:
            problems.append("traceback from the retry")
    done = h.subjects_since(vault, base)
    if len([s for s in done if s.startswith(spec.subject)]) != 1:
        problems.append(f"the command's commit is there {len([s for s in done if s.startswith(spec.subject)])} "
                        f"times after the retry: {done}")
    problems += duplicates(vault, name, level, spec.texts)

    nxt = h.hz(env, "remember", "The next write after the disk was full.", "--id", NEXT)
    if nxt.returncode != 0 or h.TRACEBACK in nxt.stderr:
        problems.append(f"the next write exited {nxt.returncode}: {nxt.stderr.strip()[-800:]}")
    problems += clean_after(vault, env, base)
    notes = []
    doc = h.doctor(env, names=("index", "vectors", "git", "interrupted writes"))
    if doc["rc"] != 0 or any(line.startswith("fail") for line in doc["not_ok"]):
        problems.append(f"doctor after the next write: exit {doc['rc']}, {doc['not_ok']}")
    notes += [line for line in doc["not_ok"] if line.startswith("warn  ") and
              line.split(":")[0][6:] in ("index", "vectors")]
    notes += [f".git/{p} left" for p in h.pathspec_files(vault)]
    if proc.returncode != 0 and (state["uncommitted"] or state["journal"]):
        # Allowed (the next write rolls it back), but "nothing was changed" was not yet true.
        notes.append(f"refused, but left {len(state['uncommitted'])} uncommitted path(s)"
                     f"{' and the journal' if state['journal'] else ''} until the next write")
    later = h.stderr_lines((retry.stderr if retry else "") + nxt.stderr)
    notes += [f"next write: {line}" for line in later if line.startswith("warning: rolled back")]
    return {"command": name, "level": level, "free": free, "argv": ["hafiza", *argv], "rc": proc.returncode,
            "outcome": "VIOLATION" if problems else outcome,
            "index_warning": any("the change is committed, but the index could not" in line for line in lines),
            "stderr": lines[-6:], "commits": new, "after_command": {k: v for k, v in state.items() if v},
            "retry_rc": retry and retry.returncode, "problems": problems, "notes": notes}


def duplicates(vault: Path, name: str, level: int, texts: int) -> list[str]:
    """Each made-up text of the command in exactly one memory file (none twice after a retry)."""
    if not texts:
        return []
    bodies = [p.read_text(errors="replace") for p in (vault / "memories").glob("*.md")]
    problems = []
    for n in range(texts):
        found = sum(text_of(name, level, n) in body for body in bodies)
        if found != 1:
            problems.append(f"text {n} of the {name} is in {found} memory files (expected 1)")
    return problems


def clean_after(vault: Path, env: dict, base: str) -> list[str]:
    problems = []
    subjects = h.subjects_since(vault, base)
    if "hafiza: record manual edits" in subjects:
        problems.append(f"half a write was committed as the user's edits: {subjects}")
    if not subjects or subjects[-1] != f"hafiza: remember {NEXT}":
        problems.append(f"the next write did not land last: {subjects}")
    status = h.porcelain(vault)
    if status:
        problems.append(f"git status not clean after the next write: {status[:5]}")
    left = h.leftovers(vault)
    problems += [f"{what} left after the next write: {left[what]}" for what in ("journal", "temp_files", "index_lock")
                 if left[what]]
    rc, ids, err = h.search_ids(env, "next write after the disk was full")
    if rc != 0 or NEXT not in ids:
        problems.append(f"search after the next write: exit {rc}, ids {ids[:5]}, {err[-400:]}")
    return problems


# ---- the loop

def levels(step_kb: int, max_kb: int) -> list[int]:
    return sorted({kb * 1024 for kb in range(0, max_kb + 1, step_kb)} | {s for s in ODD_SIZES if s <= max_kb * 1024})


def run(size: str = "8m", step_kb: int = 16, max_kb: int = 256, names: list[str] | None = None,
        embedder: str = "hash") -> dict:
    """Every command at every level; a report, or {"skipped": why} where no tmpfs can be mounted."""
    names = names or list(COMMANDS)
    work = Path(tempfile.mkdtemp(prefix="hafiza-diskfull-"))
    disk = work / "disk"
    why = mount(disk, size)
    if why:
        shutil.rmtree(work, ignore_errors=True)
        reason = f"cannot mount a tmpfs here ({why}); disk-full trials skipped"
        h.log(f"disk_full: {reason}")
        return {"skipped": reason}
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so `finally` unmounts
    results = []
    try:
        env = h.hafiza_env(disk / "vault", work / "home", embedder)
        made = templates(disk, work, env, names)
        sizes = levels(step_kb, max_kb)
        h.log(f"disk_full: a {size} tmpfs, {len(names)} commands x {len(sizes)} free-space levels "
              f"(0 to {max_kb} KB; the vault takes {du(made['remember'] if 'remember' in made else made[names[0]])})")
        for name in names:
            rows = [trial(name, level, disk, work, made[name], env) for level in sizes]
            results += rows
            tally = summarize(rows)[name]
            h.log(f"  {name:<10} landed {tally['landed']} ({tally['index_warning']} with an index warning), "
                  f"refused cleanly {tally['refused cleanly']}, violations {tally['VIOLATION']}")
            for r in rows:
                for problem in r["problems"]:
                    h.log(f"    VIOLATION at {r['free']:,} B free: {problem}")
    finally:
        unmount(disk)
        signal.signal(signal.SIGTERM, previous)
        shutil.rmtree(work, ignore_errors=True)
    return {"size": size, "levels": sizes, "summary": summarize(results), "results": results,
            "commands": {name: shlex.join(["hafiza", *argv_for(name, 0, work)]) if name != "import" else
                         "hafiza import small.jsonl (5 items)" for name in names},
            "setup": {name: [shlex.join(["hafiza", *step]) for step in COMMANDS[name].setup] for name in names},
            "mount": f"mount -t tmpfs -o size={size},mode=0700 tmpfs DIR"}


def summarize(rows: list[dict]) -> dict:
    out = {}
    for r in rows:
        t = out.setdefault(r["command"], {"landed": 0, "index_warning": 0, "refused cleanly": 0, "VIOLATION": 0})
        t[r["outcome"]] += 1
        t["index_warning"] += r["outcome"] == "landed" and r["index_warning"]
    return out


def du(path: Path) -> str:
    total = sum(p.lstat().st_size for p in path.rglob("*") if p.is_file())
    return f"{total / 1024:.0f} KB in {sum(1 for _ in path.rglob('*'))} files"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="8m", help="tmpfs size (default 8m)")
    ap.add_argument("--step-kb", type=int, default=16)
    ap.add_argument("--max-kb", type=int, default=256)
    ap.add_argument("--commands", help=f"comma-separated, of {','.join(COMMANDS)} (default: all)")
    ap.add_argument("--embedder", default="hash")
    args = ap.parse_args(argv)
    names = args.commands.split(",") if args.commands else None
    report = run(args.size, args.step_kb, args.max_kb, names, args.embedder)
    if "skipped" in report:
        return 0
    return 1 if any(t["VIOLATION"] for t in report["summary"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
