"""Does capture find a user's explicit statements without a model, pass over look-alikes, and file a session fast?

Capture without a model: precision and recall on explicit statements against look-alikes (TR and EN),
and the time to file one ~200-turn conversation into the inbox.

    python bench/capture.py [--save]

- detection: tests/statements_corpus.py, 44 explicit statements and 40 look-alikes (written with the
  patterns), and a held-out 15 + 15 written after them and never used to tune them;
- filing: a conversation of 200 turns (100 by the user: 10 explicit statements, 30 look-alikes, the
  rest steering; 100 replies) filed by `hafiza.skills.capture.file` into a vault of 40 memories, one
  of which a statement restates: the restatement search, one review-branch commit per proposal and
  the use recorded, timed end to end (a fresh vault each run, the index already open, as `hafiza
  inbox file` has it), and with the keyword index opened cold.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "sessions")]

from common import median, save  # noqa: E402
from dialogues import FILLER  # noqa: E402
from statements_corpus import EXPLICIT, HELD_OUT_EXPLICIT, HELD_OUT_LOOKALIKES, LOOKALIKES  # noqa: E402


def detection(explicit, lookalikes) -> dict:
    from hafiza.skills.statements import find

    found = [bool(find(s)) for s, _ in explicit]
    typed = [bool(f) and f[0].type == t for (s, t), f in zip(explicit, (find(s) for s, _ in explicit))]
    false = [s for s in lookalikes if find(s)]
    tp = sum(found)
    return {"explicit": len(explicit), "lookalikes": len(lookalikes), "found": tp, "false_positives": len(false),
            "precision": round(tp / max(1, tp + len(false)), 3), "recall": round(tp / len(explicit), 3),
            "type_right": round(sum(typed) / len(explicit), 3), "missed": [s for (s, _), f in zip(explicit, found) if not f],
            "wrongly_found": false}


def conversation() -> list:
    from hafiza.skills.transcripts import Turn

    users = [s for s, _ in EXPLICIT[:10]] + LOOKALIKES[:30] + [u for u, _ in FILLER] * 5
    users = users[:100]
    turns = []
    for i, text in enumerate(sorted(users, key=lambda t: hash(t) % 97)):
        when = f"2026-11-30T10:{i // 60:02d}:{i % 60:02d}.000Z"
        turns.append(Turn(f"u{i}", "claude-code", "bench-session", "webshop", "user", when, 2 * i, text))
        turns.append(Turn(f"a{i}", "claude-code", "bench-session", "webshop", "assistant", when, 2 * i + 1,
                          "Done; the tests pass and I updated the lockfile."))
    return turns


def vault_with_memories(root: Path):
    from hafiza.vault.store.vault import Vault

    vault = Vault.init(root, actor="bench")
    vault.remember("Never push to main on Fridays.", type="rule")  # restated in the conversation
    for n in range(39):
        vault.remember(f"Service {n} listens on port {9000 + n} and logs to /var/log/svc{n}.", title=f"Service {n}")
    return vault


def filing(runs: int) -> dict:
    from hafiza.indexer.recall import Recall
    from hafiza.skills.capture import file

    turns = conversation()
    warm, cold, report = [], [], None
    for run in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            vault = vault_with_memories(Path(tmp) / "vault")
            started = time.perf_counter()
            recall = Recall(vault.root)
            recall.search("warm up", mode="keyword")
            opened = time.perf_counter()
            report = file(vault, turns, recall=recall, now=dt.datetime(2026, 11, 30, 12, run))
            done = time.perf_counter()
            warm.append(done - opened)
            cold.append(done - started)
    return {"turns": len(turns), "user_turns": len(turns) // 2, "memories": 40, "runs": runs,
            "proposed": len(report.proposed), "used": report.used, "skipped": report.skipped,
            "median_s": round(median(warm), 3), "max_s": round(max(warm), 3),
            "median_with_index_open_s": round(median(cold), 3)}


def run(runs: int) -> dict:
    for key, value in {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
                       "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}.items():
        os.environ.setdefault(key, value)
    return {"date": dt.date.today().isoformat(), "detection": detection(EXPLICIT, LOOKALIKES),
            "held_out": detection(HELD_OUT_EXPLICIT, HELD_OUT_LOOKALIKES), "filing": filing(runs)}


def markdown(r: dict) -> str:
    lines = [f"# Capture without a model, {r['date']}", "", "`python bench/capture.py --save`.", "",
             "| set | explicit | look-alikes | precision | recall | type right |", "|---|---|---|---|---|---|"]
    for name in ("detection", "held_out"):
        d = r[name]
        lines.append(f"| {name.replace('_', '-')} | {d['explicit']} | {d['lookalikes']} | {d['precision']} | "
                     f"{d['recall']} | {d['type_right']} |")
    for name in ("detection", "held_out"):
        for s in r[name]["missed"]:
            lines.append(f"\n- {name}: missed \"{s}\"")
        for s in r[name]["wrongly_found"]:
            lines.append(f"\n- {name}: proposed a look-alike, \"{s}\"")
    f = r["filing"]
    lines += ["", f"Filing one conversation of {f['turns']} turns ({f['user_turns']} by the user) into a vault of "
              f"{f['memories']} memories: {f['proposed']} proposals on a review branch, {len(f['used'])} restatement "
              f"recorded as a use; median {f['median_s']} s, max {f['max_s']} s over {f['runs']} runs "
              f"({f['median_with_index_open_s']} s with the keyword index opened cold)."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--save", action="store_true", help="write bench/results/capture-<date>.{json,md}")
    args = parser.parse_args(argv)
    result = run(args.runs)
    print(markdown(result))
    if args.save:
        save("capture", result["date"], result, markdown(result))


if __name__ == "__main__":
    main()
