"""What do batching, BLAS threads and worker processes buy `hafiza reindex` with the model?

What batching, BLAS threads and worker processes buy `hafiza reindex` with the model (issue 18: ~85
texts/s, 473 s for 20,000 memories of two texts each).

    .venv/bin/python bench/embed_throughput.py [--texts 600] [--rounds 3] [--save]

Each configuration embeds the same memory texts (tests/gen.py, as VectorStore.sync makes them) in
fresh processes that load the model first (load time not counted), rounds interleaved so every
configuration sees the same machine. Reported: texts per second, median over rounds, and the ratio
to today's way (batches of 32, one BLAS thread, one process). Run it on a quiet machine: two
processes or two threads only help when the second core is free.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import gen  # noqa: E402
from common import median, save  # noqa: E402

CONFIGS = [  # (batch, BLAS threads, processes); the first is what reindex does today
    (32, 1, 1), (8, 1, 1), (128, 1, 1), (32, 2, 1), (32, 1, 2), (128, 1, 2),
]
WORKER = """
import json, sys, time
from hafiza.indexer.embed import USEEmbedder
texts, batch = json.load(open(sys.argv[1])), int(sys.argv[2])
model = USEEmbedder(blas_threads=sys.argv[3])
model.embed(["warm up"])
print("ready", flush=True)
sys.stdin.readline()  # every worker starts together
started = time.perf_counter()
for at in range(0, len(texts), batch):
    model.embed(texts[at:at + batch])
print(time.perf_counter() - started, flush=True)
"""


def texts(count: int) -> list[str]:
    from hafiza.indexer.vectors import embedding_texts

    out = []
    for memory in gen.memories(count):
        out.extend(embedding_texts(memory.get("title", ""), memory.get("aliases", ()), memory.get("tags", ()),
                                   memory["text"]))
    return out[:count]


def run(config: tuple[int, int, int], items: list[str], folder: Path) -> float:
    """Texts per second of one configuration, its workers loaded before the clock starts."""
    batch, threads, processes = config
    share = -(-len(items) // processes)
    workers = []
    for n in range(processes):
        part = folder / f"part-{n}.json"
        part.write_text(json.dumps(items[n * share:(n + 1) * share]))
        env = {**os.environ, "OPENBLAS_NUM_THREADS": str(threads)}
        worker = subprocess.Popen([sys.executable, "-c", WORKER, str(part), str(batch), str(threads)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        workers.append(worker)
    for worker in workers:
        assert worker.stdout.readline().strip() == "ready"
    started = time.perf_counter()
    for worker in workers:
        worker.stdin.write("go\n")
        worker.stdin.flush()
    for worker in workers:
        worker.stdout.readline()
        worker.wait()
    return len(items) / (time.perf_counter() - started)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args(argv)
    items = texts(args.texts)
    rates: dict[tuple, list[float]] = {c: [] for c in CONFIGS}
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            for config in CONFIGS:
                rates[config].append(run(config, items, Path(tmp)))
    base = median(rates[CONFIGS[0]])
    rows = [{"batch": b, "blas_threads": t, "processes": p, "texts_per_s": round(median(r), 1),
             "ratio": round(median(r) / base, 2)} for (b, t, p), r in rates.items()]
    report = {"date": dt.date.today().isoformat(), "texts": len(items), "rounds": args.rounds,
              "load_at_start": round(load, 2), "load_at_end": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(),
              "results": rows}
    print(json.dumps(report, indent=1))
    if args.save:
        save("embed-throughput", report["date"], report, markdown(report))


def markdown(r: dict) -> str:
    lines = [f"# Embedding throughput, {r['date']}", "",
             f"`python bench/embed_throughput.py --texts {r['texts']} --rounds {r['rounds']} --save`: USE multilingual, "
             f"{r['texts']} memory texts, model loaded before timing, median of {r['rounds']} interleaved rounds; "
             f"{r['cpus']} CPUs, load average {r['load_at_start']} at the start and {r['load_at_end']} at the end.", "",
             "| batch | BLAS threads | processes | texts/s | vs today (32, 1, 1) |", "|---|---|---|---|---|"]
    lines += [f"| {x['batch']} | {x['blas_threads']} | {x['processes']} | {x['texts_per_s']} | {x['ratio']}× |"
              for x in r["results"]]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
