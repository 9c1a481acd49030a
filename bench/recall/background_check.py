#!/usr/bin/env python3
"""Which background sentences (indexer/data/background.txt) repeat or paraphrase a set prompt? (stdlib only)

    python3 bench/recall/background_check.py                  # prompts.jsonl and heldout.jsonl
    python3 bench/recall/background_check.py --nearest 3      # also each line's 3 nearest prompts

The background is the meaning channel's null model: a prompt must be closer to a
memory than to any background sentence. A background sentence that is a set
prompt, or nearly, makes that prompt's silence certain and says nothing about
prompts nobody wrote down. Both sides are normalised (Turkish-aware lower case,
diacritics folded, punctuation dropped) and compared word by word. A pair is
flagged when the word sequences are equal, or equal but for one word, or hold
the same words in another order, or when one holds all of the other's words
(two or more), or when they share at least half of their words (Jaccard on
5-letter prefixes, so "açıklar mısın" meets "aciklar misin"). The flags are a
list to read, not a verdict: bench/recall/README.md says which lines were
rewritten and why. fresh.jsonl is never read here (it is used once, see FRESH.md).
Exit 1 when any pair is flagged.
"""
import argparse
import json
import re
import sys
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
BACKGROUND = HERE.parent.parent / "indexer" / "data" / "background.txt"
CHITCHAT = BACKGROUND.with_name("chitchat.txt")  # the blind chit-chat added in issue 34
SETS = ("prompts.jsonl", "heldout.jsonl")


def words(text: str) -> list[str]:
    text = text.replace("İ", "i").replace("I", "ı").lower().replace("ı", "i")
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return re.findall(r"[a-z0-9]+", text)


def stems(ws: list[str]) -> set[str]:
    return {w[:5] for w in ws}


def one_word_apart(a: list[str], b: list[str]) -> bool:
    """Equal but for one word substituted, inserted or deleted."""
    if abs(len(a) - len(b)) > 1 or min(len(a), len(b)) < 2:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b)) == 1
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


def compare(line: str, query: str) -> tuple[list[str], float]:
    a, b = words(line), words(query)
    sa, sb = stems(a), stems(b)
    jaccard = len(sa & sb) / len(sa | sb) if sa | sb else 0.0
    why = []
    if a == b:
        why.append("same words")
    elif one_word_apart(a, b):
        why.append("one word changed")
    elif sorted(a) == sorted(b):
        why.append("same words, other order")
    elif min(len(sa), len(sb)) >= 2 and (sa <= sb or sb <= sa):
        why.append("one holds all of the other's words")
    if not why and jaccard >= 0.5:
        why.append(f"shares {jaccard:.2f} of its words")
    return why, jaccard


def load_sets(names) -> list[dict]:
    out = []
    for name in names:
        path = HERE / name
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append({**json.loads(line), "set": name})
    return out


def background() -> list[tuple[int, str]]:
    lines = BACKGROUND.read_text(encoding="utf-8").splitlines() + CHITCHAT.read_text(encoding="utf-8").splitlines()
    return [(n, s.strip()) for n, s in enumerate(lines, 1) if s.strip() and not s.startswith("#")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nearest", type=int, default=0, help="also list each line's N nearest prompts")
    ap.add_argument("--set", action="append", help="prompt files in bench/recall/ (default: %s)" % ", ".join(SETS))
    args = ap.parse_args()
    names = args.set or list(SETS)
    if any("fresh" in n for n in names):
        sys.exit("fresh.jsonl is used once, by bench/recall.py (FRESH.md); it is not a design input")
    prompts = load_sets(names)
    flagged = 0
    for n, line in background():
        scored = [(compare(line, p["query"]), p) for p in prompts]
        hits = [(why, j, p) for (why, j), p in scored if why]
        for why, j, p in hits:
            flagged += 1
            print(f"line {n}: {line!r}\n    {p['id']} ({p['set']}, {p['kind']}): {p['query']!r}: {', '.join(why)}")
        if args.nearest:
            near = sorted(scored, key=lambda item: -item[0][1])[: args.nearest]
            print(f"line {n}: {line!r} nearest: " + "; ".join(f"{p['id']} {j:.2f} {p['query']!r}" for (_, j), p in near))
    print(f"{len(background())} background sentences, {len(prompts)} prompts ({', '.join(names)}): {flagged} flagged pairs")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
