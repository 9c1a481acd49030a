"""How long do import, reindex and search take on generated vaults of 1,000 and 5,000 memories?

    .venv/bin/python bench/search_bench.py                  # print the table
    .venv/bin/python bench/search_bench.py --save           # and write bench/results/search-YYYY-MM-DD.{json,md}
    .venv/bin/python bench/search_bench.py --sizes 500 --runs 1 --cli-runs 10   # quick look

For each size, in a temporary folder:

- import: `hafiza init` then `hafiza import memories.jsonl`, whole process
  (including the index build import does), median of `--runs` fresh vaults;
- reindex: `hafiza reindex`, median of `--runs`;
- in-process search: `Recall(root).search(q, mode="keyword", all_scopes=True)`
  over ~200 TR/EN queries after a warm-up pass; median and p95. Also the same
  with `sync=False` (index already open), which is the query alone without the
  per-call manifest check and reopen;
- whole process: `hafiza search --all-scopes "<query>"` run `--cli-runs`
  times, interleaved with a bare `python -c pass` and
  `python -c "import whoosh.index"`, so all three see the same machine noise.

Every hafiza subprocess runs with HAFIZA_EMBEDDER=none (keyword only) unless
`--embedder` says otherwise. `hafiza search --mode keyword` is timed too: it
skips the embedder lookup (and its numpy import) that plain `search` does.
Subprocesses get a bytecode cache in the work folder (PYTHONPYCACHEPREFIX,
with PYTHONDONTWRITEBYTECODE removed), so they start the way an installed
hafiza does, without writing __pycache__ into the source tree; `--bytecode env`
keeps the environment as it is. Memories and queries come from tests/gen.py.
Targets (issue 2): `hafiza search` whole process <= 150 ms median at 5,000
memories; reindex of 5,000 <= 10 s.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import datetime as dt
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import gen  # noqa: E402
from common import Timing, clock, machine, measure, save, summary  # noqa: E402

TARGET_SEARCH_MS = 150.0
TARGET_REINDEX_S = 10.0


# --------------------------------------------------------------------------- helpers


class Runner:
    def __init__(self, hafiza: str, env: dict, cwd: Path):
        self.hafiza, self.env, self.cwd = hafiza, env, cwd

    def timed(self, argv: list[str]) -> Timing:
        return measure(argv, self.env, self.cwd)

    def hz(self, vault: Path, *args: str) -> Timing:
        return self.timed([self.hafiza, "--vault", str(vault), *args])


def count_memories(vault: Path) -> int:
    return sum(1 for p in (vault / "memories").glob("*.md"))


# --------------------------------------------------------------------------- the measurements

def bench_import(run: Runner, work: Path, source: Path, n: int, runs: int) -> tuple[list[float], list[float], Path]:
    times, cpu, vault = [], [], None
    for r in range(runs):
        if vault is not None:
            shutil.rmtree(vault)
        vault = work / f"vault-{n}-{r}"
        run.hz(vault, "init")
        took = run.hz(vault, "import", str(source))
        got = count_memories(vault)
        if got != n:
            raise SystemExit(f"import of {n} left {got} memory files\n{took.out[-500:]}")
        times.append(took.wall_ms / 1000)
        cpu.append(took.cpu_ms / 1000)
    return times, cpu, vault


def bench_reindex(run: Runner, vault: Path, runs: int) -> tuple[list[float], list[float]]:
    times, cpu = [], []
    for _ in range(runs):
        took = run.hz(vault, "reindex")
        times.append(took.wall_ms / 1000)
        cpu.append(took.cpu_ms / 1000)
    return times, cpu


def bench_in_process(vault: Path, queries: list[str]) -> dict:
    from hafiza.indexer.recall import Recall

    recall = Recall(vault, notice=lambda text: print(f"  notice: {text}", file=sys.stderr))
    hits = [len(recall.search(q, mode="keyword", all_scopes=True)) for q in queries]  # warm-up pass
    timings = {}
    for label, sync in (("sync", True), ("nosync", False)):
        ms = [clock(recall.search, q, mode="keyword", all_scopes=True, sync=sync)[0] for q in queries]
        timings[label] = summary(ms, 2)
    timings["queries_with_hits"] = sum(1 for h in hits if h)
    return timings


def bench_whole_process(run: Runner, vault: Path, queries: list[str], runs: int) -> dict:
    py = sys.executable
    commands = {
        "python_pass": lambda i: [py, "-c", "pass"],
        "import_whoosh": lambda i: [py, "-c", "import whoosh.index"],
        "hafiza_search": lambda i: [run.hafiza, "--vault", str(vault), "search", "--all-scopes", queries[i % len(queries)]],
        "hafiza_search_keyword": lambda i: [run.hafiza, "--vault", str(vault), "search", "--mode", "keyword",
                                            "--all-scopes", queries[i % len(queries)]],
    }
    times = {k: [] for k in commands}
    cpu = {k: [] for k in commands}
    rebuilt = False
    for i in range(-3, runs):  # three warm-up rounds, not counted
        for key, argv in commands.items():
            took = run.timed(argv(max(i, 0)))
            rebuilt |= "rebuild" in took.err
            if i >= 0:
                times[key].append(took.wall_ms)
                cpu[key].append(took.cpu_ms)
    out = {k: summary(v, 2) for k, v in times.items()}
    out["cpu_ms"] = {k: summary(v, 1) for k, v in cpu.items()}  # user + sys: less sensitive to other load
    out["ratio_search_to_python"] = round(out["hafiza_search"]["p50"] / out["python_pass"]["p50"], 2)
    out["ratio_search_to_whoosh_import"] = round(out["hafiza_search"]["p50"] / out["import_whoosh"]["p50"], 2)
    out["index_rebuilt_during_search"] = rebuilt
    return out


# --------------------------------------------------------------------------- reporting


def table(results: list[dict]) -> str:
    head = ["memories", "import s", "reindex s", "in-proc search ms med / p95", "query only (sync=False) ms",
            "`hafiza search` ms med / p95", "`search --mode keyword` ms med / p95", "`python -c pass` ms",
            "`import whoosh.index` ms", "search ÷ python"]
    rows = []
    for r in results:
        ip, wp = r["in_process_ms"], r["whole_process_ms"]
        rows.append([f"{r['n']:,}", f"{r['import_s']['p50']:.2f}", f"{r['reindex_s']['p50']:.2f}",
                     f"{ip['sync']['p50']:.1f} / {ip['sync']['p95']:.1f}",
                     f"{ip['nosync']['p50']:.1f} / {ip['nosync']['p95']:.1f}",
                     f"{wp['hafiza_search']['p50']:.1f} / {wp['hafiza_search']['p95']:.1f}",
                     f"{wp['hafiza_search_keyword']['p50']:.1f} / {wp['hafiza_search_keyword']['p95']:.1f}",
                     f"{wp['python_pass']['p50']:.1f}", f"{wp['import_whoosh']['p50']:.1f}",
                     f"{wp['ratio_search_to_python']:.1f}×"])
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def verdicts(results: list[dict]) -> list[str]:
    out = []
    for r in results:
        if r["n"] != 5000:
            continue
        s, x = r["whole_process_ms"]["hafiza_search"]["p50"], r["reindex_s"]["p50"]
        out.append(f"`hafiza search` at 5,000: {s:.0f} ms median (target ≤ {TARGET_SEARCH_MS:.0f} ms): "
                   f"{'PASS' if s <= TARGET_SEARCH_MS else 'FAIL'}")
        out.append(f"reindex of 5,000: {x:.2f} s median (target ≤ {TARGET_REINDEX_S:.0f} s): "
                   f"{'PASS' if x <= TARGET_REINDEX_S else 'FAIL'}")
    return out


def markdown(report: dict) -> str:
    m, c = report["machine"], report["config"]
    lines = [
        f"# Search benchmark, {report['date']}",
        "",
        f"Machine: {m['nproc']} cores ({m['cpu'] or 'unknown CPU'}), Python {m['python']}, "
        f"whoosh3 {m['whoosh3']}, {m['platform']}; hafiza at {m['commit']}. "
        f"Load average (1 min) {report['load_before']} before, {m['loadavg_1m']} after: "
        f"other work on the machine inflates every figure.",
        "",
        table(report["results"]),
        "",
        *[f"- {v}" for v in verdicts(report["results"])],
        "",
        "CPU time (user + sys, including child processes such as git) of the same processes, medians, "
        "which other load on the machine inflates less than wall clock:",
        "",
        "| memories | import s | reindex s | `hafiza search` ms | `search --mode keyword` ms | `python -c pass` ms "
        "| `import whoosh.index` ms |",
        "|---|---|---|---|---|---|---|",
        *[f"| {r['n']:,} | {r['import_cpu_s']['p50']:.2f} | {r['reindex_cpu_s']['p50']:.2f} | " + " | ".join(
          f"{r['whole_process_ms']['cpu_ms'][k]['p50']:.0f}" for k in
          ("hafiza_search", "hafiza_search_keyword", "python_pass", "import_whoosh")) + " |"
          for r in report["results"]],
        "",
        f"Import: whole `hafiza import` process including the index build, median of {c['runs']} fresh vaults. "
        f"Reindex: `hafiza reindex`, median of {c['runs']}. In-process: `Recall(root).search(q, mode=\"keyword\", "
        f"all_scopes=True)` over {c['queries']} generated TR/EN queries after a warm-up pass (it syncs against "
        f"the files on every call; `sync=False` is the query alone). Whole process: `hafiza search --all-scopes` "
        f"wall clock over {c['cli_runs']} runs, interleaved with the two Python baselines and "
        f"`search --mode keyword`; HAFIZA_EMBEDDER={c['embedder']}, bytecode {c['bytecode']}. Memories and queries: tests/gen.py, seed {c['seed']}.",
        "",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------- main

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,5000", help="comma-separated vault sizes (default 1000,5000)")
    ap.add_argument("--runs", type=int, default=3, help="import and reindex runs per size (median)")
    ap.add_argument("--queries", type=int, default=200, help="in-process queries")
    ap.add_argument("--cli-runs", type=int, default=30, help="whole-process `hafiza search` runs (>= 30 for the record)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--embedder", default="none", help="HAFIZA_EMBEDDER for every hafiza process (default none)")
    ap.add_argument("--bytecode", choices=["cache", "env"], default="cache",
                    help="cache: subprocesses use a bytecode cache in the work folder; env: as the environment says")
    ap.add_argument("--hafiza", default=str(Path(sys.executable).parent / "hafiza"), help="the hafiza console script")
    ap.add_argument("--workdir", help="where to build vaults (default: a new temporary folder)")
    ap.add_argument("--keep", action="store_true", help="keep the vaults and print where they are")
    ap.add_argument("--save", action="store_true", help="write bench/results/search-YYYY-MM-DD.json and .md")
    args = ap.parse_args(argv)
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]

    work = Path(args.workdir or tempfile.mkdtemp(prefix="hafiza-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAFIZA_")}
    env["HAFIZA_EMBEDDER"] = args.embedder
    if args.bytecode == "cache":
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    load_before = round(os.getloadavg()[0], 2)
    os.environ["HAFIZA_EMBEDDER"] = args.embedder  # the in-process Recall too
    run = Runner(args.hafiza, env, work)  # cwd outside any git repo
    queries = gen.queries(args.queries, seed=args.seed + 1)

    results = []
    try:
        for n in sizes:
            print(f"== {n:,} memories (in {work})", file=sys.stderr)
            source = work / f"memories-{n}.jsonl"
            with open(source, "w", encoding="utf-8") as fh:
                gen.write_jsonl(gen.memories(n, seed=args.seed), fh)
            imp, imp_cpu, vault = bench_import(run, work, source, n, args.runs)
            print(f"  import   {[round(t, 2) for t in imp]} s", file=sys.stderr)
            rei, rei_cpu = bench_reindex(run, vault, args.runs)
            print(f"  reindex  {[round(t, 2) for t in rei]} s", file=sys.stderr)
            inproc = bench_in_process(vault, queries)
            print(f"  in-proc  {inproc['sync']['p50']} ms median", file=sys.stderr)
            whole = bench_whole_process(run, vault, queries, args.cli_runs)
            print(f"  process  {whole['hafiza_search']['p50']} ms median", file=sys.stderr)
            results.append({"n": n, "import_s": summary(imp), "reindex_s": summary(rei),
                            "import_cpu_s": summary(imp_cpu), "reindex_cpu_s": summary(rei_cpu),
                            "in_process_ms": inproc, "whole_process_ms": whole, "vault": str(vault)})
    finally:
        if args.keep:
            print(f"vaults kept in {work}", file=sys.stderr)
        elif not args.workdir:
            shutil.rmtree(work, ignore_errors=True)

    today = dt.date.today().isoformat()
    report = {"date": today, "machine": machine(whoosh3=importlib.metadata.version("whoosh3")), "load_before": load_before,
              "config": {"sizes": sizes, "runs": args.runs, "queries": len(queries), "cli_runs": args.cli_runs,
                         "seed": args.seed, "embedder": args.embedder, "bytecode": args.bytecode},
              "targets": {"hafiza_search_median_ms_at_5000": TARGET_SEARCH_MS, "reindex_s_at_5000": TARGET_REINDEX_S},
              "results": results, "verdicts": verdicts(results)}
    if not args.keep:
        for r in results:
            r.pop("vault")
    print()
    print(table(results))
    print()
    for v in report["verdicts"]:
        print(v)
    if args.save:

        save("search", today, report, markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
