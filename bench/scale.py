"""How does each everyday operation's cost grow with the vault, as a ratio to `python -c pass`?

Large vaults (issue 18): what each everyday operation costs as the vault grows, as ratios to
`python -c pass` measured in the same run (the machine is shared; trust the ratios over the times).

    .venv/bin/python bench/scale.py --sizes 5000 20000 50000 100000 --runs 7 --workdir /work/big/scale --save

Per size, a keyword-only vault is built as a user builds one (`hafiza init`, then one `hafiza import`
of tests/gen.py memories: its time, peak memory and commit count are reported), kept in --workdir and
reused by the next run. Then, interleaved round by round with `python -c pass`:

- `hafiza remember` and `hafiza forget` (keyword only: HAFIZA_EMBEDDER=none);
- `hafiza search --mode keyword` with no warm process, right after the writes (it ranks them in memory),
  and again once they are indexed (by an untimed `hafiza list`);
- the installed hook command (Claude Code UserPromptSubmit, a real payload with a 250 KB transcript)
  with no warm process (HAFIZA_DAEMON=0), and with a keyword-only warm process running;
- the warm process's peak memory (VmHWM) after the rounds, and its CPU share over 20 idle seconds;
- 20 hooks started at once with no warm process (spawning allowed): how many injected a recall.

Prompts are tests/gen.py queries screened to recall something at that size. Targets (issue 18):
remember and forget <= 5x at every size; search without a warm process <= 5x at 100k; hook cold
<= 3x at 20k; idle CPU <= 1%; 20 cold hooks at once: >= 19/20 injected at 20k.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import BASE, Samples, base_case, gen, interleaved, log, publish, run, snapshot, timed, use_code  # noqa: E402
from vaults import (HAFIZA, Env, daemons, hook_command, idle_cpu, keyword_vault, payload, peak_mb, projects,  # noqa: E402
                    screen, settled, stop_all, transcripts, warm_pid)

TARGETS = {"remember": 5, "forget": 5}


def burst(hook: list[str], env: dict, prompts: list[tuple], count: int = 20) -> dict:
    """`count` hooks at once, no warm process yet (spawning allowed): how many injected a recall."""
    outs = [""] * count
    procs = [subprocess.Popen(hook, env=env, cwd=prompts[k % len(prompts)][1], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) for k in range(count)]
    started = time.perf_counter()

    def finish(k: int) -> None:
        prompt, cwd, script = prompts[k % len(prompts)]
        outs[k] = procs[k].communicate(payload(prompt, cwd, script))[0]

    threads = [threading.Thread(target=finish, args=(k,)) for k in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"hooks": count, "injected": sum("<hafiza-recall>" in o for o in outs),
            "all_returned_ms": round((time.perf_counter() - started) * 1000)}


def measure(work: Path, size: int, runs: int, envs: Env) -> dict:
    base = envs(HAFIZA_EMBEDDER="none")
    vault, built = keyword_vault(work, size, base)
    env = {**base, "HAFIZA_VAULT": str(vault)}
    run([*HAFIZA, "daemon", "stop"], env)
    run([*HAFIZA, "search", "--mode", "keyword", "warm up"], env)  # the index in step before timing
    # As doctor or a warm process's first full sync leaves an index made by an earlier version: with the
    # keyword pruning files of its segments (indexer/impact.py).
    run([sys.executable, "-c", "import sys; from hafiza.indexer.index import Index; Index(sys.argv[1]).sync()",
         str(vault)], env)
    cwds, scripts = projects(work), transcripts(work)
    prompts = screen(vault, gen.queries(400, seed=size % 97), cwds, scripts, runs + 3)
    forgettable = [d["id"] for d in json.loads(run([*HAFIZA, "list", "--json"], env).stdout)[: runs + 3]]
    hook = hook_command(sys.executable)
    cold_env = {**env, "HAFIZA_DAEMON": "0"}
    stamp = int(time.time())
    base = base_case(sys.executable, env)
    cold, warm = Samples(), Samples()
    for n in range(runs + 1):  # round 0 warms the page cache and is not recorded
        prompt, cwd, script = prompts[n % len(prompts)]
        search = [*HAFIZA, "search", "--mode", "keyword", prompt]
        interleaved({BASE: base,
                     "remember": lambda n: timed([*HAFIZA, "remember", f"scale note {stamp} {n} about the {size} vault"], env),
                     "forget": lambda n: timed([*HAFIZA, "forget", forgettable[n]], env)}, cold, n, keep=n > 0)
        # Right after the writes, a search ranks them in memory without indexing them (indexer/pending.py) ...
        interleaved({"search (cold)": lambda n: timed(search, env)}, cold, n, keep=n > 0)
        run([*HAFIZA, "list"], env)  # ... and `list` indexes them
        interleaved({BASE: base, "search (cold, in step)": lambda n: timed(search, env),
                     "hook (cold)": lambda n: timed(hook, cold_env, cwd, payload(prompt, cwd, script))}, cold, n,
                    keep=n > 0)
    pid = warm_pid(vault, env)
    for n in range(runs + 1):
        prompt, cwd, script = prompts[n % len(prompts)]
        interleaved({BASE: base, "hook (warm)": lambda n: timed(hook, env, cwd, payload(prompt, cwd, script))}, warm, n,
                    keep=n > 0)
    full_sync_s = settled(env)  # its one comparison of every file, after it starts, is not idling
    rss, idle = peak_mb(pid), idle_cpu(pid, 20.0)
    stop_all(vault, env)
    bursts = burst(hook, env, prompts)
    time.sleep(3)
    left = daemons(vault)  # one at most may be up: the burst's hooks started it
    stop_all(vault, env)
    base_ms, warm_base = cold.median(BASE), warm.median(BASE)
    medians = {k: cold.median(k) for k in cold.times if k != BASE} | {"hook (warm)": warm.median("hook (warm)")}
    ratios = {k: round(cold.ratio(k), 1) for k in cold.times if k != BASE} | {"hook (warm)": round(warm.ratio("hook (warm)"), 1)}
    return {"memories": size, "runs": runs, "python_pass_ms": round(base_ms, 1),
            "python_pass_ms_warm_rounds": round(warm_base, 1),
            "median_ms": {k: round(v, 1) for k, v in medians.items()}, "ratio": ratios,
            "warm_peak_mb": rss, "warm_idle_cpu_percent": idle, "warm_first_full_sync_s": full_sync_s,
            "burst": bursts, "warm_processes_after_burst": len(left),
            **built}


def markdown(report: dict) -> str:
    rows = report["results"]
    cols = ["remember", "forget", "search (cold)", "search (cold, in step)", "hook (cold)", "hook (warm)"]
    out = [f"# Large vaults, {report['date']}", "",
           f"`python bench/scale.py --sizes {' '.join(str(r['memories']) for r in rows)} --runs {report['runs']}"
           f" --save` at {report['commit']}: keyword only (HAFIZA_EMBEDDER=none), medians of whole processes, interleaved with "
           "`python -c pass` (the ratio's base). Load average at the start: "
           f"{report['load_at_start']:.1f}. Import figures are from when each vault was built. `search (cold)` "
           "follows each round's `remember` and `forget`, so it includes reading those two files and ranking them in "
           "memory; `search (cold, in step)` is the same search again once an untimed `hafiza list` has indexed "
           "them, and `hook (cold)` comes after it: both find the index in step.", "",
           "| memories | `python -c pass` | " + " | ".join(f"`{c}`" for c in cols) + " |",
           "|---|---|" + "---|" * len(cols)]
    for r in rows:
        cells = [f"{r['median_ms'][c]:,.0f} ms ({r['ratio'][c]}×)" for c in cols]
        out.append(f"| {r['memories']:,} | {r['python_pass_ms']:.0f} ms | " + " | ".join(cells) + " |")
    out += ["", "| memories | import: time, peak memory, commits | warm process peak | warm process idle CPU | "
            "20 cold hooks at once: injected | warm processes after it |", "|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['memories']:,} | {r['import_s']:,} s, {r['import_peak_mb']} MB, "
                   f"{r['commits_after_import'] - 1} | {r['warm_peak_mb']} MB | {r['warm_idle_cpu_percent']}% | "
                   f"{r['burst']['injected']}/{r['burst']['hooks']} in {r['burst']['all_returned_ms']:,} ms | "
                   f"{r['warm_processes_after_burst']} |")
    return "\n".join(out) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5000, 20000])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/hafiza-scale"))
    parser.add_argument("--save", action="store_true")
    parser.add_argument("--build-only", action="store_true", help="Only build (and keep) the vaults.")
    parser.add_argument("--commit", default="HEAD",
                        help="Measure the code of this commit, frozen (default HEAD; `worktree`: the files as they are).")
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    code = None
    if args.commit != "worktree":  # other work lands in the tree meanwhile: every process imports a frozen copy
        code = snapshot(args.commit, args.workdir / "code")
        use_code(args.workdir / "code")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # modules compiled once, as installed (see use_code)
    envs = Env(args.workdir, "cache")
    if args.build_only:
        for size in args.sizes:
            log(json.dumps({"memories": size, **keyword_vault(args.workdir, size, envs(HAFIZA_EMBEDDER="none"))[1]}))
        return
    report = {"date": dt.date.today().isoformat(), "runs": args.runs, "load_at_start": os.getloadavg()[0],
              "commit": code or "worktree", "results": []}
    for size in args.sizes:
        log(f"{size:,} memories ...")
        report["results"].append(measure(args.workdir, size, args.runs, envs))
        log(json.dumps(report["results"][-1]))
    publish("scale", report, markdown(report), args.save)


if __name__ == "__main__":
    main()
