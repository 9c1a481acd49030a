#!/usr/bin/env python3
"""Is the hafiza recall set well formed? Prints its counts (stdlib only).

    python3 bench/recall/validate.py            # checks + counts, exit 1 on error
    python3 bench/recall/validate.py --markdown # also print the README count tables
    python3 bench/recall/validate.py --strict   # also warn on shared 5-letter stems
"""
import collections
import datetime
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TYPES = {"identity", "rule", "preference", "lesson", "knowledge", "fact"}
KIND_MIN = {"keyword": 25, "no-diacritics": 15, "typo": 8, "pasted": 10,
            "paraphrase": 20, "cross-language": 20, "superseded": 10, "chitchat": 45}
LANGS = {"tr", "en", "mixed"}
ID_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
SECRET_RE = re.compile(
    r"(AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9]{20,}|xox[abprs]-|"
    r"-----BEGIN [A-Z ]*PRIVATE KEY|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}|"
    r"(password|passwd|şifre|parola|token|secret)\s*[:=]\s*\S{6,})", re.I)

STOP_EN = set("""a about above after again against all also am an and any are as at be because been
before being below between both but by can could did do does doing down during each few for from
further had has have having he her here hers herself him himself his how i if in into is it its
itself just me more most my myself no nor not now of off on once only or other our ours ourselves
out over own same she should so some such than that the their theirs them themselves then there
these they this those through to too under until up very was we were what when where which while
who whom why will with would you your yours yourself yourselves again ever still even really
maybe something anything thing things need needs want wants know like get got make made use used
using does done going gonna please thanks okay yeah right last first next back time way""".split())
STOP_TR = set("""acaba ama ancak artık aslında az bana bazen bazı belki ben beni benim bile bir biraz
birçok biri birkaç biz bize bizi bizim bu buna bunda bundan bunu bunun burada çok çünkü da daha
dahi de defa değil diye diğer en gibi göre hala hangi hangisi hani hem henüz hep hepsi her herhangi
herkes hiç için ile ise işte kadar kendi kez ki kim kime kimi kimin mı mi mu mü nasıl ne neden nerde
nerede nereye niye niçin o olan olarak oldu olduğu olur olsa on ona ondan onlar onu onun orada öyle
sadece sanki şey şimdi siz sonra şu şuna şunu tüm ve veya ya yani yok var yine zaten önce yeni
lazım gerek mıydı miydi muydu müydü neydi kaç kaçta değil mı mi olmalı olabilir nedir""".split())
STOP = STOP_EN | STOP_TR
FOLD = str.maketrans("çğıöşüâîû", "cgiosuaiu")


def lower(s):
    return s.replace("İ", "i").lower()


def tokens(s):
    return [t for t in re.findall(r"\w+", lower(s)) if len(t) >= 4 and t not in STOP and not t.isdigit()]


def mem_text(m):
    return " ".join([m["title"], m["text"], " ".join(m.get("tags", [])), " ".join(m.get("aliases", []))])


def load(name):
    rows = []
    with open(HERE / name, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                rows.append((n, json.loads(line)))
    return rows


def check_aliases(by_id, prompts, errors):
    """aliases.jsonl (written blind to the prompts, see README): its form, and how many paraphrase
    prompts now share a word with their memory's aliases (reported, not an error: that is what
    aliases are for)."""
    if not (HERE / "aliases.jsonl").exists():
        return None
    rows = [row for _, row in load("aliases.jsonl")]
    agent = {}
    for row in rows:
        mid, phrases = row.get("id"), row.get("aliases")
        if mid not in by_id:
            errors.append(f"aliases.jsonl: unknown memory id {mid}")
        elif mid in agent:
            errors.append(f"aliases.jsonl: {mid} twice")
        elif not (isinstance(phrases, list) and 3 <= len(phrases) <= 8
                  and all(isinstance(a, str) and a.strip() for a in phrases)):
            errors.append(f"aliases.jsonl: {mid}: expected 3-8 phrases")
        elif SECRET_RE.search(" ".join(phrases)):
            errors.append(f"aliases.jsonl: {mid}: looks like it contains a secret")
        else:
            agent[mid] = phrases
    shared, paraphrases = [], [p for p in prompts if p["kind"] == "paraphrase"]
    for p in paraphrases:
        q = set(tokens(p["query"]))
        for mid in p["expect"]:
            common = sorted(q & set(tokens(" ".join(agent.get(mid, [])))))
            if common:
                shared.append((p["id"], mid, common))
    return {"memories": len(agent), "phrases": sum(map(len, agent.values())), "shared": shared,
            "paraphrases": len(paraphrases)}


def main():
    strict = "--strict" in sys.argv
    errors, warnings = [], []
    mems = load("memories.jsonl")
    prompts = load("prompts.jsonl")
    by_id = {}
    for n, m in mems:
        for key in ("id", "title", "text", "type", "tags", "scope", "created"):
            if key not in m:
                errors.append(f"memories.jsonl:{n}: missing {key}")
        if not ID_RE.match(m["id"]):
            errors.append(f"memories.jsonl:{n}: id not kebab-case ascii: {m['id']}")
        if m["id"] in by_id:
            errors.append(f"memories.jsonl:{n}: duplicate id {m['id']}")
        by_id[m["id"]] = m
        if m["type"] not in TYPES:
            errors.append(f"{m['id']}: bad type {m['type']}")
        if m["scope"] != "global":
            errors.append(f"{m['id']}: scope is not global")
        d = datetime.date.fromisoformat(m["created"])
        if not (datetime.date(2025, 1, 1) <= d <= datetime.date(2026, 11, 30)):
            errors.append(f"{m['id']}: created {d} out of range")
        if SECRET_RE.search(json.dumps(m, ensure_ascii=False)):
            errors.append(f"{m['id']}: looks like it contains a secret")
    superseded_pairs = []
    for mid, m in by_id.items():
        for old in m.get("supersedes", []):
            if old not in by_id:
                errors.append(f"{mid}: supersedes unknown id {old}")
            else:
                superseded_pairs.append((old, mid))
                if by_id[old]["created"] >= m["created"]:
                    errors.append(f"{mid}: not newer than {old}")
    if len(superseded_pairs) < 8:
        errors.append(f"only {len(superseded_pairs)} superseded pairs (need 8)")

    pids = set()
    kind_lang = collections.Counter()
    kinds = collections.Counter()
    cross_sharing = []
    for n, p in prompts:
        pid = p["id"]
        if pid in pids:
            errors.append(f"duplicate prompt id {pid}")
        pids.add(pid)
        if p["kind"] not in KIND_MIN:
            errors.append(f"{pid}: unknown kind {p['kind']}")
        if p["lang"] not in LANGS:
            errors.append(f"{pid}: unknown lang {p['lang']}")
        kinds[p["kind"]] += 1
        kind_lang[(p["kind"], p["lang"])] += 1
        for mid in p["expect"] + p.get("stale", []):
            if mid not in by_id:
                errors.append(f"{pid}: unknown memory id {mid}")
        if p["kind"] == "chitchat":
            if p["expect"]:
                errors.append(f"{pid}: chitchat must expect nothing")
        elif not p["expect"]:
            errors.append(f"{pid}: expect is empty")
        if p["kind"] == "superseded":
            if not p.get("stale"):
                errors.append(f"{pid}: superseded prompt without stale")
            for old in p.get("stale", []):
                if (old, p["expect"][0]) not in superseded_pairs:
                    errors.append(f"{pid}: {p['expect'][0]} does not supersede {old}")
        elif "stale" in p:
            errors.append(f"{pid}: stale only belongs to superseded prompts")
        if p["kind"] in ("paraphrase", "cross-language") and all(x in by_id for x in p["expect"]):
            q = set(tokens(p["query"]))
            for mid in p["expect"]:
                mt = set(tokens(mem_text(by_id[mid])))
                shared = sorted(q & mt)
                if p["kind"] == "paraphrase":
                    if shared:
                        errors.append(f"{pid} paraphrase shares {shared} with {mid}")
                    if strict:
                        qs = {t.translate(FOLD)[:5] for t in q if len(t) >= 5}
                        ms = {t.translate(FOLD)[:5] for t in mt if len(t) >= 5}
                        if qs & ms:
                            warnings.append(f"{pid} paraphrase shares stems {sorted(qs & ms)} with {mid}")
                elif shared:
                    cross_sharing.append((pid, mid, shared))
    for kind, need in KIND_MIN.items():
        if kinds[kind] < need:
            errors.append(f"kind {kind}: {kinds[kind]} < {need}")
    n_cross = kinds["cross-language"]
    sharing_ids = {c[0] for c in cross_sharing}
    if len(sharing_ids) * 2 > n_cross:
        errors.append(f"cross-language: {len(sharing_ids)}/{n_cross} share a term with the memory (max half)")

    heldout = load("heldout.jsonl") if (HERE / "heldout.jsonl").exists() else []
    agent = check_aliases(by_id, [p for _, p in prompts + heldout], errors)

    # ---- report ----
    mtype = collections.Counter(m["type"] for m in by_id.values())
    print(f"memories: {len(by_id)}  superseded pairs: {len(superseded_pairs)}  "
          f"with aliases: {sum(1 for m in by_id.values() if m.get('aliases'))}")
    print("  by type:", dict(sorted(mtype.items())))
    print(f"prompts: {len(pids)}")
    order = list(KIND_MIN)
    langs = ["tr", "en", "mixed"]
    rows = [["kind", "min", *langs, "total"]]
    for kind in order:
        rows.append([kind, str(KIND_MIN[kind]), *[str(kind_lang[(kind, l)]) for l in langs], str(kinds[kind])])
    rows.append(["total", "", *[str(sum(kind_lang[(k, l)] for k in order)) for l in langs], str(len(pids))])
    for r in rows:
        print("  " + "  ".join(c.ljust(15) if i == 0 else c.rjust(6) for i, c in enumerate(r)))
    print(f"cross-language prompts sharing a term with their memory: {len(sharing_ids)}/{n_cross}")
    for pid, mid, shared in cross_sharing:
        print(f"  {pid} -> {mid}: {shared}")
    if "--markdown" in sys.argv:
        print()
        print("| " + " | ".join(rows[0]) + " |")
        print("|" + "---|" * len(rows[0]))
        for r in rows[1:]:
            print("| " + " | ".join(r) + " |")
        print()
        print("| type | count |\n|---|---|")
        for t, c in sorted(mtype.items()):
            print(f"| {t} | {c} |")
    if agent:
        print(f"aliases.jsonl: {agent['memories']} memories, {agent['phrases']} phrases; paraphrase prompts "
              f"sharing a content word with their memory's agent-written aliases: {len(agent['shared'])}/"
              f"{agent['paraphrases']}")
        for pid, mid, shared in agent["shared"]:
            print(f"  {pid} -> {mid}: {shared}")
    for w in warnings:
        print("WARN", w)
    for e in errors:
        print("ERROR", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
