#!/usr/bin/env python3
"""Writes memories.jsonl, pairs.jsonl and prompts.jsonl from the hand-written
sources build_memories.py and build_prompts.py (set r51)."""
import json, random
from build_memories import MEMS, PAIRS
from build_prompts import P

with open("memories.jsonl", "w", encoding="utf-8") as f:
    for (mid, typ, scope, created, tags, title, text, _lang, extra) in MEMS:
        o = {"id": mid, "title": title, "text": text, "type": typ, "tags": tags,
             "scope": scope, "created": created}
        if "aliases" in extra:
            o["aliases"] = extra["aliases"]
        if "supersedes" in extra:
            o["supersedes"] = extra["supersedes"]
        f.write(json.dumps(o, ensure_ascii=False) + "\n")

with open("pairs.jsonl", "w", encoding="utf-8") as f:
    for (older, newer, repl, note) in PAIRS:
        f.write(json.dumps({"older": older, "newer": newer, "newer_replaces": repl,
                            "note": note}, ensure_ascii=False) + "\n")

rows = list(P)
random.Random(51).shuffle(rows)
with open("prompts.jsonl", "w", encoding="utf-8") as f:
    for n, (kind, lang, project, query, expect, stale, history) in enumerate(rows, 1):
        o = {"id": "r51-p%03d" % n, "query": query, "kind": kind, "lang": lang,
             "expect": expect}
        if stale:
            o["stale"] = stale
        if history:
            o["history"] = history
        if project:
            o["project"] = project
        f.write(json.dumps(o, ensure_ascii=False) + "\n")
print("memories", len(MEMS), "pairs", len(PAIRS), "prompts", len(rows))
