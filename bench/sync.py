"""How long does sync take across machines, and does every edit arrive?

Sync across machines (issue 15): M machines x E edits each, merged through one bare remote.

    .venv/bin/python bench/sync.py --machines 10 --edits 100 --save

A vault of --memories memories is made on machine 0 and pushed to a bare repository; every other machine
starts from it (`init --from`, in-process). Each machine then makes E edits through the library, as agents
would: a quarter new memories, a quarter body edits (a line added to a shared memory, so machines collide),
a quarter tags, a quarter uses (folded by sync). Then every machine syncs in turn, twice (the second round
brings the first machines what the later ones pushed). Reported: each sync's time and its merge's size, a
sync with nothing to do as a whole `hafiza sync` process (median of 7, with `python -c pass` beside it), and
the checks: every machine holds the same tree, every memory made anywhere is there, every line written is
somewhere, and the use counts are the sum of the uses recorded everywhere.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import median, save  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--machines", type=int, default=10)
    parser.add_argument("--edits", type=int, default=100)
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("HAFIZA_EMBEDDER", "none")
    for key, value in {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost",
                       "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost"}.items():
        os.environ.setdefault(key, value)
    with tempfile.TemporaryDirectory(prefix="hafiza-sync-bench-") as tmp:
        report = run(Path(tmp), args)
    lines = markdown(report)
    print(lines)
    if args.save:
        save("sync", dt.date.today().isoformat(), report, lines)


def run(tmp: Path, args) -> dict:
    from hafiza.vault.store.vault import Vault
    from hafiza.vault.sync.machines import clone, conflicted, set_remote, sync

    rng = random.Random(args.seed)
    remote = tmp / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    first = Vault.init(tmp / "m0")
    first.import_many([{"id": f"shared-{n}", "text": f"shared memory {n}\nsecond line\nthird line"}
                       for n in range(args.memories)], source="bench")
    set_remote(first, str(remote))
    sync(first)
    machines = [first]
    for n in range(1, args.machines):
        clone(str(remote), tmp / f"m{n}")
        machines.append(Vault.init(tmp / f"m{n}", actor=f"bench-m{n}"))
    made, lines, uses = set(), [], 0
    started = time.perf_counter()
    for n, vault in enumerate(machines):
        for e in range(args.edits):
            kind = e % 4
            target = f"shared-{rng.randrange(args.memories)}"
            if kind == 0:
                made.add(vault.remember(f"note {e} made on machine {n}", id=f"m{n}-e{e}").id)
            elif kind == 1:
                line = f"line {e} added on machine {n}"
                vault.update(target, vault.get(target).body + "\n" + line)
                lines.append(line)
            elif kind == 2:
                memory = vault.get(target)
                vault.rewrite(target, _dump(memory.evolve(tags=[*memory.tags, f"m{n}"])))
            else:
                vault.record_use([target])
                uses += 1
    editing = time.perf_counter() - started
    rounds = []
    for round_no in (1, 2):
        for n, vault in enumerate(machines):
            t = time.perf_counter()
            found = sync(vault)
            rounds.append({"round": round_no, "machine": n, "seconds": round(time.perf_counter() - t, 3),
                           "in": sum(map(len, found.came_in.values())), "out": sum(map(len, found.went_out.values())),
                           "notes": len(found.notes)})
    trees = {subprocess.run(["git", "-C", str(v.root), "rev-parse", "HEAD^{tree}"], capture_output=True,
                            text=True).stdout for v in machines}
    memories, errors = machines[0].load_all()
    text = "\n".join(p.read_text() for p in machines[0].memories_dir.glob("*.md"))
    idle = _idle(machines[0].root)
    return {
        "machines": args.machines, "edits_per_machine": args.edits, "memories_at_start": args.memories,
        "editing_seconds": round(editing, 1), "syncs": rounds,
        "sync_seconds_median": round(median(r["seconds"] for r in rounds), 3),
        "sync_seconds_max": max(r["seconds"] for r in rounds),
        "noop_sync_process_ms": idle["sync"], "python_pass_ms": idle["pass"],
        "same_tree_everywhere": len(trees) == 1, "unparsable": len(errors),
        "memories_made_present": len(made & {m.id for m in memories}), "memories_made": len(made),
        "lines_present": sum(line in text for line in lines), "lines_written": len(lines),
        "uses_recorded": uses, "uses_in_files": sum(m.used for m in memories),
        "memories_holding_two_texts": len(conflicted(machines[0])),
    }


def _dump(memory) -> str:
    from hafiza.vault.format import model

    return model.dump(memory)


def _idle(root: Path, runs: int = 7) -> dict:
    """A `hafiza sync` with nothing to do, as a whole process, beside `python -c pass` (ms, medians)."""
    times = {"sync": [], "pass": []}
    for _ in range(runs):
        for name, argv in (("pass", [sys.executable, "-c", "pass"]),
                           ("sync", [sys.executable, "-m", "hafiza.cli.main", "--vault", str(root), "sync"])):
            t = time.perf_counter()
            subprocess.run(argv, check=True, capture_output=True)
            times[name].append((time.perf_counter() - t) * 1000)
    return {k: round(median(v)) for k, v in times.items()}


def markdown(r: dict) -> str:
    first = [s for s in r["syncs"] if s["round"] == 1]
    return "\n".join([
        f"# Sync across machines, {dt.date.today()}", "",
        f"`python bench/sync.py --machines {r['machines']} --edits {r['edits_per_machine']} --save`: "
        f"{r['machines']} machines, {r['edits_per_machine']} edits each (new memories, lines added to shared "
        f"memories, tags, uses) on a vault of {r['memories_at_start']} memories, one bare remote, every merge "
        "by the same rules. Keyword-only (HAFIZA_EMBEDDER=none); a shared 2-core machine.", "",
        f"- editing ({r['machines'] * r['edits_per_machine']} library writes): {r['editing_seconds']} s",
        f"- a sync (fetch, merge, push; median of {len(r['syncs'])}): {r['sync_seconds_median']} s, "
        f"the slowest {r['sync_seconds_max']} s",
        f"- a `hafiza sync` process with nothing to do: {r['noop_sync_process_ms']} ms "
        f"(`python -c pass`: {r['python_pass_ms']} ms); the remote is a local bare repository, so no network time",
        f"- same tree on every machine: {r['same_tree_everywhere']}; unparsable files: {r['unparsable']}",
        f"- memories made anywhere and present: {r['memories_made_present']} of {r['memories_made']}",
        f"- lines written anywhere and present: {r['lines_present']} of {r['lines_written']}",
        f"- uses recorded {r['uses_recorded']}, in the files {r['uses_in_files']}",
        f"- memories holding two texts for a person to pick: {r['memories_holding_two_texts']}", "",
        "| machine | first round: s | came in | went out | notes |", "|---|---|---|---|---|",
        *[f"| {s['machine']} | {s['seconds']} | {s['in']} | {s['out']} | {s['notes']} |" for s in first], ""])


if __name__ == "__main__":
    main()
