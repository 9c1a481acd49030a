"""How fast is cold keyword search at 20,000 and 100,000 memories, summing every posting or pruned?

    .venv/bin/python bench/keyword_scale.py --vault 20000=/work/big/v20k --vault 100000=/path/v100k --save
    .venv/bin/python bench/keyword_scale.py --sizes 20000 --queries 40 --process-queries 10   # quick look

Issue 18 item 4: keyword scoring walked every posting of each query word
(0.97 s at 100,000 memories). Two frozen copies of the code run side by
side: *old* is HEAD; *new* is HEAD with this tree's indexer/search.py,
impact.py and topk.py (impact-ordered postings, exact top-k). Both read the
same copy of each vault; new first builds its impact files (timed: what an
index commit would pay).

- scoring, in one process per variant: for each query a fresh View (a fresh
  reader, as a fresh process has) and `Recall.search(mode="keyword")`; the
  time inside `keyword_channel` is split into stored-field reads (the same
  Whoosh call in both) and the rest, the scoring. The two variants' top 50
  (ids and scores, as repr) must be identical for every query.
- whole process, interleaved query by query so all see the same noise:
  `python -c pass`, `hafiza search --mode keyword "<query>"` (HAFIZA_DAEMON=0,
  HAFIZA_EMBEDDER=none), and the cold hook, the command `hafiza install`
  writes (`python -S .../hafiza_hook.py claude-code UserPromptSubmit`) with a
  Claude Code payload (a cwd in a project, a ~250 KB transcript), for
  prompts the cold hook answers with recalled memories (screened first, as
  bench/hook_latency.py does). Two unrecorded rounds first.

Vaults: `--vault SIZE=PATH` copies an existing one (made by `hafiza import`
of tests/gen.py memories); otherwise one is generated and imported. HEAD's
own sync brings the copy's index in step first (rebuilding it if HEAD reads
another format), then the impact files are built for its segments.

Targets: `hafiza search` without a warm process <= 5x `python -c pass` at
100,000, the cold hook <= 3x at 20,000 (both include costs outside scoring:
see the split).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import gen  # noqa: E402
from common import cpu_model, log, measure, median, save, snapshot, summary  # noqa: E402
from vaults import clean_state, payload, projects, transcripts, wait_quiet  # noqa: E402

MINE = ("indexer/search.py", "indexer/impact.py", "indexer/topk.py")
TARGET_SEARCH = 5.0   # x python -c pass, at 100,000
TARGET_HOOK = 3.0     # x python -c pass, at 20,000

# Run inside each variant's process: per query, the time in keyword_channel and in its stored-field reads.
SCORING = r"""
import json, sys, time
from pathlib import Path
from hafiza.indexer import recall as R, search as S
from hafiza.indexer.gate import silence_reason

root, queries = Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text())
rec = R.Recall(root, notice=lambda _: None)
rec.view()  # the one sync, outside the timings
ix = rec.index.opened
spent = {"docs": 0.0}
doc = S.View.doc
def timed_doc(self, docnum):
    t = time.perf_counter()
    try:
        return doc(self, docnum)
    finally:
        spent["docs"] += time.perf_counter() - t
S.View.doc = timed_doc
channel = R.keyword_channel
calls = []
def timed_channel(view, words, **kw):
    spent["docs"] = 0.0
    t = time.perf_counter()
    out = channel(view, words, **kw)
    total = time.perf_counter() - t
    calls.append({"ms": total * 1e3, "docs_ms": spent["docs"] * 1e3,
                  "top": [[d["id"], repr(s)] for d, s, _ in out]})
    return out
R.keyword_channel = timed_channel
out = []
for q in queries:
    rec._view = S.View(ix)  # a fresh reader, as a fresh process opens
    calls.clear()
    t = time.perf_counter()
    rec.search(q, mode="keyword", sync=False)
    whole = (time.perf_counter() - t) * 1e3
    rec._view.close()
    out.append({"query": q, "search_ms": whole, "channel": calls[0] if calls else None,
                "gate": bool(silence_reason(q))})
print(json.dumps(out))
"""

SYNC = r"""
import json, sys
from pathlib import Path
from hafiza.indexer.index import Index
report = Index(Path(sys.argv[1]), notice=lambda text: print(text, file=sys.stderr)).sync(quick=False)
print(json.dumps({"rebuilt": report.rebuilt, "touched": report.touched}))
"""

# Which share of the documents sit in segments that have an impact file (the rest is read from Whoosh).
COVERAGE = r"""
import json, sys
from whoosh import index
from hafiza.indexer import search as S
view = S.View(index.open_dir(sys.argv[1]))
leaves = view.leaves()
print(json.dumps({"segments": len(leaves), "with_file": sum(f is not None for _, _, f in leaves),
                  "docs_covered": sum(s.doc_count_all() for s, _, f in leaves if f is not None),
                  "docs": view.reader.doc_count_all()}))
"""

# Which (prompt, cwd, transcript) triples the cold hook answers with recalled memories (bench/hook_latency.py).
SCREEN = r"""
import json, sys
from pathlib import Path
from hafiza.hooks.entry import recent_turns
from hafiza.hooks.service import cold
from hafiza.indexer.config import Settings
from hafiza.indexer.gate import silence_reason
from hafiza.vault.format.paths import project_of
vault, triples = Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text())
out = []
for prompt, cwd, script in triples:
    if silence_reason(prompt):
        out.append(False)
        continue
    request = {"op": "recall", "query": prompt, "project": project_of(Path(cwd)), "exclude": [],
               "context": recent_turns(script, prompt)}
    out.append(bool(cold(vault, request, Settings())["hits"]))
print(json.dumps(out))
"""

BUILD = r"""
import json, sys, time
from pathlib import Path
from whoosh import index
from hafiza.indexer import cold, impact
ix = index.open_dir(sys.argv[1])
t = time.perf_counter()
written = cold.build(ix)
took = time.perf_counter() - t
size = sum(p.stat().st_size for p in impact.folder(ix).glob("*.imp"))
print(json.dumps({"seconds": took, "bytes": size, "segments": written}))
"""


def codes(work: Path) -> dict[str, Path]:
    """old: HEAD; new: HEAD with this tree's versions of MINE (nothing else of the tree, which others edit)."""
    old, new = work / "old", work / "new"
    snapshot("HEAD", old)
    snapshot("HEAD", new)
    for rel in MINE:
        shutil.copy2(HERE.parent / rel, new / rel)
    return {"old": old, "new": new}


def environ(work: Path, code: Path, vault: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAFIZA_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(PYTHONPATH=str(code), PYTHONPYCACHEPREFIX=str(work / "pycache"), HAFIZA_VAULT=str(vault),
               HAFIZA_DAEMON="0", HAFIZA_EMBEDDER="none")
    return env


def vault_for(size: int, given: str | None, work: Path, env: dict) -> Path:
    dest = work / f"v{size}"
    if given:
        log(f"copying {given} -> {dest}")
        shutil.copytree(given, dest, symlinks=True, ignore=shutil.ignore_patterns("run", "impact"))
    else:
        source = work / f"m{size}.jsonl"
        source.write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in gen.memories(size)))
        log(f"importing {size} memories (takes minutes)")
        for args in (["init"], ["import", str(source)]):
            subprocess.run([sys.executable, "-m", "hafiza.cli.main", *args], env={**env, "HAFIZA_VAULT": str(dest)},
                           check=True, capture_output=True)
    clean_state(dest)
    return dest


def run_json(script: str, args: list[str], env: dict) -> object:
    proc = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-3000:])
    return json.loads(proc.stdout)


def scoring(work: Path, envs: dict, vault: Path, queries: list[str]) -> dict:
    qfile = work / "queries.json"
    qfile.write_text(json.dumps(queries, ensure_ascii=False))
    runs = {name: run_json(SCORING, [str(vault), str(qfile)], env) for name, env in envs.items()}
    out = {"identical": 0, "compared": 0, "differ": []}
    for a, b in zip(runs["old"], runs["new"]):
        if a["channel"] is None and b["channel"] is None:
            continue
        out["compared"] += 1
        if (a["channel"] or {}).get("top") == (b["channel"] or {}).get("top"):
            out["identical"] += 1
        else:
            out["differ"].append(a["query"])
    for name, rows in runs.items():
        searched = [r for r in rows if r["channel"]]
        score = [r["channel"]["ms"] - r["channel"]["docs_ms"] for r in searched]
        out[name] = {"scoring_ms": summary(score, 2),
                     "stored_fields_ms": summary([r["channel"]["docs_ms"] for r in searched], 2),
                     "search_in_process_ms": summary([r["search_ms"] for r in searched], 2),
                     "queries": len(searched)}
    out["hook_prompts"] = [r["query"] for r in runs["new"] if not r["gate"] and r["channel"]]
    return out


def screen(work: Path, env: dict, vault: Path, pool: list[str], want: int) -> list[tuple]:
    """(prompt, cwd, transcript) triples that pass the gate and recall something on the cold path."""
    cwds, scripts = projects(work), transcripts(work)
    triples = [(p, str(cwds[i % len(cwds)]), str(scripts[i % len(scripts)])) for i, p in enumerate(pool)]
    tfile = work / "triples.json"
    tfile.write_text(json.dumps(triples, ensure_ascii=False))
    return [t for t, ok in zip(triples, run_json(SCREEN, [str(vault), str(tfile)], env)) if ok][:want]


def processes(work: Path, envs: dict, vault: Path, queries: list[str], prompts: list[tuple], warmup: int = 2) -> dict:
    hafiza = str(Path(sys.executable).with_name("hafiza"))
    names = ("python_pass", "search_old", "search_new", "hook_old", "hook_new")
    times: dict[str, list[float]] = {n: [] for n in names}
    recalled = dict.fromkeys(names, 0)  # hooks that printed recalled memories: each one really searched
    rounds = max(len(queries), len(prompts))
    for i in range(-warmup, rounds):
        q, (p, cwd, script) = queries[i % len(queries)], prompts[i % len(prompts)]
        cwd, script = Path(cwd), Path(script)
        runs = {"python_pass": ([sys.executable, "-c", "pass"], envs["old"], None)}
        for name in ("old", "new"):
            runs[f"search_{name}"] = ([hafiza, "search", "--mode", "keyword", q], envs[name], None)
            hook = [sys.executable, "-S", str(work / name / "hooks" / "hafiza_hook.py"), "claude-code",
                    "UserPromptSubmit"]
            runs[f"hook_{name}"] = (hook, envs[name], payload(p, cwd, script))
        for name, (argv, env, stdin) in runs.items():
            if name.startswith("search") and i >= len(queries) or name.startswith("hook") and i >= len(prompts):
                continue
            wall, _, out, _ = measure(argv, env, cwd, input=stdin)
            if i >= 0:
                times[name].append(wall)
                recalled[name] += name.startswith("hook") and "<hafiza-recall>" in out
        if i >= 0 and i % 10 == 0:
            log(f"  round {i}/{rounds}: " + ", ".join(f"{n} {median(v):.2f}" for n, v in times.items() if v))
    base = median(times["python_pass"])
    return {n: {**summary(v, 2), "ratio": round(median(v) / base, 2),
                **({"recalled": recalled[n]} if n.startswith("hook") else {})} for n, v in times.items()}


def bench_size(size: int, given: str | None, work: Path, code: dict, queries: list[str], process_queries: int,
               max_load: float | None, quiet_wait: float) -> dict:
    vault = vault_for(size, given, work, environ(work, code["old"], work / "none"))
    envs = {name: environ(work, path, vault) for name, path in code.items()}
    # The copy's index brought in step with the files by HEAD's own sync (rebuilt if HEAD reads another
    # format), before the impact files are built for its segments.
    synced = run_json(SYNC, [str(vault)], envs["old"])
    log(f"{size}: synced with HEAD's code: {synced}")
    index_dir = str(vault / ".hafiza" / "index")
    built = run_json(BUILD, [index_dir], envs["new"])
    log(f"{size}: impact files built in {built['seconds']:.1f} s ({built['bytes'] / 1e6:.1f} MB)")
    result = {"size": size, "sync": synced, "impact_build": built, "coverage_before": run_json(COVERAGE, [index_dir],
                                                                                                envs["new"]),
              "load_before": wait_quiet(max_load, quiet_wait)}
    result["scoring"] = scoring(work, envs, vault, queries)
    s = result["scoring"]
    log(f"{size}: scoring p50 old {s['old']['scoring_ms']['p50']} ms, new {s['new']['scoring_ms']['p50']} ms; "
        f"identical {s['identical']}/{s['compared']}")
    prompts = screen(work, envs["new"], vault, s.pop("hook_prompts"), process_queries)
    result["process_ms"] = processes(work, envs, vault, queries[:process_queries], prompts)
    result["coverage_after"] = run_json(COVERAGE, [index_dir], envs["new"])  # writes in the run may add segments
    result["load_after"] = round(os.getloadavg()[0], 2)
    return result


def table(results: list[dict]) -> str:
    rows = ["| memories | what | old (exhaustive) | new (pruned) | new / `python -c pass` |",
            "| ---: | --- | ---: | ---: | ---: |"]
    for r in results:
        s, p, n = r["scoring"], r["process_ms"], r["size"]
        rows.append(f"| {n:,} | scoring in `keyword_channel`, p50 (p95) ms | {s['old']['scoring_ms']['p50']} "
                    f"({s['old']['scoring_ms']['p95']}) | {s['new']['scoring_ms']['p50']} "
                    f"({s['new']['scoring_ms']['p95']}) | |")
        rows.append(f"| {n:,} | stored fields of the top 50 (Whoosh, same code), p50 ms | "
                    f"{s['old']['stored_fields_ms']['p50']} | {s['new']['stored_fields_ms']['p50']} | |")
        rows.append(f"| {n:,} | `Recall.search` in process, fresh reader, p50 ms | "
                    f"{s['old']['search_in_process_ms']['p50']} | {s['new']['search_in_process_ms']['p50']} | |")
        rows.append(f"| {n:,} | `python -c pass`, p50 ms | {p['python_pass']['p50']} | | 1.0 |")
        rows.append(f"| {n:,} | `hafiza search --mode keyword`, whole process, p50 ms | {p['search_old']['p50']} | "
                    f"{p['search_new']['p50']} | {p['search_new']['ratio']} (old {p['search_old']['ratio']}) |")
        rows.append(f"| {n:,} | cold hook, whole process, p50 ms ({p['hook_new']['recalled']} of {p['hook_new']['n']} "
                    f"recalled something) | {p['hook_old']['p50']} | {p['hook_new']['p50']} | "
                    f"{p['hook_new']['ratio']} (old {p['hook_old']['ratio']}) |")
    return "\n".join(rows)


def markdown(report: dict) -> str:
    lines = [f"# Keyword scoring at scale, {report['date']}", "",
             "Issue 18 item 4: bounded, exact keyword scoring (impact-ordered postings per Whoosh segment, "
             "score-at-a-time reading with a safe stop, exact rescoring of the few documents that may still "
             "reach the top). Made by `bench/keyword_scale.py`; old = HEAD "
             f"{report['head']}, new = HEAD with this tree's {', '.join(MINE)}.", "",
             table(report["results"]), ""]
    for r in report["results"]:
        s, b, c, a = r["scoring"], r["impact_build"], r["coverage_before"], r["coverage_after"]
        lines.append(f"- {r['size']:,}: top 50 identical (ids and scores, repr) for {s['identical']} of "
                     f"{s['compared']} queries; impact files built in {b['seconds']:.1f} s, {b['bytes'] / 1e6:.1f} MB, "
                     f"covering {c['docs_covered']:,} of {c['docs']:,} documents ({a['docs_covered']:,} of "
                     f"{a['docs']:,} after the whole-process runs); load average {r['load_before']} before, "
                     f"{r['load_after']} after.")
    lines += ["", f"Queries: `tests/gen.py` queries (seed 2), {report['queries']} for scoring, "
              f"{report['process_queries']} for the whole-process runs (hook prompts: those the cold hook answers with memories). "
              f"Machine: {report['machine']}.", "",
              "Whole-process times include what the pruning does not touch: imports, the index's catch-up with "
              "the files, opening the Whoosh reader (its first use copies whole column files out of the memory "
              "map) and reading stored fields. The scoring rows are this change's part.", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[20000, 100000])
    ap.add_argument("--vault", action="append", default=[], metavar="SIZE=PATH", help="an imported vault to copy")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--process-queries", type=int, default=60)
    ap.add_argument("--max-load", type=float, help="wait for the 1-minute load average to drop below this first")
    ap.add_argument("--quiet-wait", type=float, default=600, help="wait at most this many seconds for it")
    ap.add_argument("--workdir", help="keep the copies here (default: a temporary folder, removed)")
    ap.add_argument("--save", action="store_true")
    args = ap.parse_args(argv)
    given = dict(v.split("=", 1) for v in args.vault)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="keyword-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        code = codes(work)
        queries = gen.queries(args.queries)
        results = [bench_size(n, given.get(str(n)), work, code, queries, args.process_queries, args.max_load,
                              args.quiet_wait) for n in args.sizes]
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    head = subprocess.run(["git", "-C", str(HERE.parent), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    report = {"date": dt.date.today().isoformat(), "head": head, "queries": args.queries,
              "process_queries": args.process_queries, "machine": f"{os.cpu_count()} cores, {cpu_model()}",
              "results": results}
    print(table(results))
    if args.save:
        save("keyword-scale", report["date"], report, markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
