"""What does a change cost `hafiza remember` and `hafiza import`? Two revisions, interleaved in one run.

    .venv/bin/python bench/write_cost.py                       # 978d9b4 (before) against HEAD
    .venv/bin/python bench/write_cost.py --old REV --new REV --rounds 15 --save

Every write now scans each file it commits for secrets (in any encoding) and
the commit message, keeps a journal of what it touches, and checks for a
stale git lock; an import also refuses secrets per item. Both revisions run
from frozen copies (bench/common.py's snapshot) in the same rounds, old and
new alternating, so the machine's noise falls on both alike: read the ratio.

- remember: one `hafiza remember` whole process into a vault of `--size`
  memories (tests/gen.py), wall clock and CPU time (user + sys, git included),
  median of `--rounds`;
- import: `hafiza import` of `--import-items` memories into a fresh vault,
  median of `--import-runs`.

Every hafiza process runs with HAFIZA_EMBEDDER=none (keyword only): the
embedder's cost is the same in both revisions and would hide the difference.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import gen  # noqa: E402
from common import Timing, cpu_model, measure, median, save, snapshot  # noqa: E402

GIT_ENV = {"GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.com", "GIT_COMMITTER_NAME": "Bench",
           "GIT_COMMITTER_EMAIL": "bench@example.com", "GIT_CONFIG_NOSYSTEM": "1"}


def hafiza(code: Path, vault: Path, *args: str) -> Timing:
    """One `hafiza ARGS` process run from the snapshot at `code`."""
    env = {**os.environ, **GIT_ENV, "HAFIZA_VAULT": str(vault), "HAFIZA_EMBEDDER": "none", "HAFIZA_DAEMON": "0",
           "PYTHONPATH": str(code), "GIT_CONFIG_GLOBAL": str(vault.parent / "gitconfig")}
    return measure([sys.executable, "-m", "hafiza.cli.main", *args], env)


def medians(runs: list[Timing]) -> dict:
    return {"wall_ms": round(median(t.wall_ms for t in runs), 1), "cpu_ms": round(median(t.cpu_ms for t in runs), 1),
            "runs": len(runs)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", default="978d9b4", help="the revision before (default: before the hardening)")
    ap.add_argument("--new", default="HEAD")
    ap.add_argument("--size", type=int, default=5000, help="memories in the vault `remember` writes into")
    ap.add_argument("--rounds", type=int, default=15, help="`remember` runs per revision")
    ap.add_argument("--import-items", type=int, default=1000)
    ap.add_argument("--import-runs", type=int, default=3)
    ap.add_argument("--save", action="store_true", help="write bench/results/write-cost-YYYY-MM-DD.{json,md}")
    args = ap.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="hafiza-write-cost-"))
    codes = {"old": work / "old", "new": work / "new"}
    shas = {k: snapshot(getattr(args, k), path) for k, path in codes.items()}
    data = work / "memories.jsonl"
    with open(data, "w") as fh:
        gen.write_jsonl(gen.memories(args.size), fh)
    small = work / "small.jsonl"
    with open(small, "w") as fh:
        gen.write_jsonl(gen.memories(args.import_items, seed=3), fh)

    vaults = {}
    for key, code in codes.items():
        vaults[key] = work / f"vault-{key}"
        hafiza(code, vaults[key], "init")
        hafiza(code, vaults[key], "import", str(data))
        print(f"{key} ({shas[key]}): vault of {args.size:,} ready", flush=True)

    remember = {"old": [], "new": []}
    for n in range(args.rounds):
        for key in (("old", "new") if n % 2 == 0 else ("new", "old")):
            remember[key].append(hafiza(codes[key], vaults[key], "remember", f"Round {n}: the staging queue drains at "
                                       f"{n:02d}:30 and pages on-call when it backs up."))
    imports = {"old": [], "new": []}
    for n in range(args.import_runs):
        for key in (("old", "new") if n % 2 == 0 else ("new", "old")):
            fresh = work / f"import-{key}-{n}"
            hafiza(codes[key], fresh, "init")
            imports[key].append(hafiza(codes[key], fresh, "import", str(small)))

    report = {"date": dt.date.today().isoformat(), "machine": {"cores": os.cpu_count(), "cpu": cpu_model(),
              "python": sys.version.split()[0], "load_avg": os.getloadavg()[0]},
              "old": shas["old"], "new": shas["new"], "size": args.size,
              "remember": {k: medians(v) for k, v in remember.items()},
              "import": {k: medians(v) for k, v in imports.items()}, "import_items": args.import_items}
    rows = []
    for what, label in (("remember", f"`hafiza remember` into {args.size:,} memories"),
                        ("import", f"`hafiza import` of {args.import_items:,} memories")):
        old, new = report[what]["old"], report[what]["new"]
        rows.append(f"| {label} | {old['wall_ms']} | {new['wall_ms']} | {new['wall_ms'] / old['wall_ms']:.2f}× | "
                    f"{old['cpu_ms']} | {new['cpu_ms']} | {new['cpu_ms'] / old['cpu_ms']:.2f}× |")
    markdown = "\n".join([
        f"# Write cost of the hardening, {report['date']}", "",
        f"Machine: {os.cpu_count()} cores ({cpu_model()}), Python {sys.version.split()[0]}; load average "
        f"{report['machine']['load_avg']:.2f} at the end. Old {shas['old']}, new {shas['new']}, alternating in "
        f"the same rounds; HAFIZA_EMBEDDER=none.", "",
        "| | old wall ms | new wall ms | ratio | old CPU ms | new CPU ms | ratio |", "|---|---|---|---|---|---|---|",
        *rows, "",
        f"Medians: remember over {args.rounds} runs each, import over {args.import_runs} fresh vaults each. "
        "CPU is user + sys of the process and its children (git). Command: "
        f"`python bench/write_cost.py --old {args.old} --new {args.new} --size {args.size} --rounds {args.rounds}`.",
        ""])
    print(markdown)
    if args.save:
        save("write-cost", report["date"], report, markdown)
    print(json.dumps(report["remember"]), file=sys.stderr)


if __name__ == "__main__":
    main()
