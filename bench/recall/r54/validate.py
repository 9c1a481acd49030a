#!/usr/bin/env python3
"""Validate the r54 blind evaluation set (memories.jsonl, pairs.jsonl, prompts.jsonl).

Usage: python3 validate.py [--markdown]
Exit code 1 on any error. Warnings (e.g. paraphrase word overlap, counts outside the
brief's rough targets) are printed but do not fail the run.
"""
import json, os, re, sys, unicodedata
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
SET = "r54"
REPOS = ["search-api", "katalog-ingest", "autocomplete-svc", "kategori-taksonomi", "fiyat-stok-sync", "search-infra"]
TYPES = ["rule", "knowledge", "lesson", "preference", "fact", "identity"]
KINDS = ["keyword", "no-diacritics", "typo", "pasted", "paraphrase", "cross-language", "inflected",
         "short-task", "superseded", "newer-disagrees", "chitchat", "chitchat-subject"]
LANGS = ["tr", "en", "mixed"]
ID_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
SECRET_RES = [
    re.compile(r"AKIA[0-9A-Z]{12,}"),
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY"),
    re.compile(r"\b(ghp|gho|glpat|xox[abpr])[-_][A-Za-z0-9]{10,}"),
    re.compile(r"\bsk-[A-Za-z0-9]{16,}"),
    re.compile(r"(?i)\b(password|passwd|parola|şifre|sifre|secret|token|api[_-]?key)\s*[:=]\s*['\"]?[A-Za-z0-9/+_\-]{6,}"),
    re.compile(r"\b[0-9a-f]{32,}\b"),
    re.compile(r"\b[A-Za-z0-9+/]{40,}={0,2}"),
    re.compile(r"://[^/\s:@]+:[^/\s@]+@"),
]
TR_CHARS = set("çğıöşüÇĞİÖŞÜ")
TR_WORDS = set("ve ile için bir bu da de mi mı yok var olarak sonra artık değil gibi her ama veya ya çünkü "
               "sadece hâlâ yine olur olan oldu yapılır gerekir lazım kullan yapma asla önce ise daha en "
               "tüm hangi neden nasıl kim ne zaman şimdi göre kadar üzerinden içinde altında".split())
EN_WORDS = set("the and is are to of in for with on a an we use our never only not be by from it this that "
               "must should do don't after before when then all any each its their was were has have at as "
               "or so until there".split())
STOP = TR_WORDS | EN_WORDS | set("""i you me my your can could would will how what where which who why whats
    does did just get got there here about into than also some more most very much many like still same
    ben sen biz siz bana beni bunu şunu şu o onu ona bizim benim mu mü musun misin miyim mıyım miyiz neydi
    nedir nerede hangisi olmaz olsa olsun yapabilir edebilir edilir eder yap et var mı acaba peki bi""".split())


def fold(s):
    s = s.replace("İ", "i").replace("I", "ı").lower()
    s = s.replace("ı", "i")
    s = unicodedata.normalize("NFKD", s)
    return "".join(c for c in s if not unicodedata.combining(c))


def words(s):
    return [w for w in re.findall(r"[a-z0-9]+", fold(s)) if len(w) >= 3 and w not in {fold(x) for x in STOP}]


def mem_lang(m):
    text = m["title"] + " " + m["text"]
    toks = re.findall(r"[\wçğıöşüÇĞİÖŞÜ']+", text.lower())
    tr = sum(1 for t in toks if t in TR_WORDS) + sum(2 for t in toks if set(t) & TR_CHARS and not t.startswith(("ç", "ş")) and len(t) > 2) * 0.5
    en = sum(1 for t in toks if t in EN_WORDS)
    if tr >= 2.5 * max(en, 0.5):
        return "tr"
    if en >= 2.5 * max(tr, 0.5):
        return "en"
    return "mixed"


def load(name, errors):
    rows = []
    path = os.path.join(HERE, name)
    if not os.path.exists(path):
        errors.append(f"{name}: missing")
        return rows
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                errors.append(f"{name}:{n}: empty line")
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                errors.append(f"{name}:{n}: bad JSON: {e}")
                continue
            if not isinstance(obj, dict):
                errors.append(f"{name}:{n}: not an object")
                continue
            rows.append(obj)
    return rows


def check_secret(where, s, errors):
    for rx in SECRET_RES:
        if rx.search(s):
            errors.append(f"{where}: secret-looking string matched {rx.pattern!r}")


def is_str_list(x, lo=0, hi=99):
    return isinstance(x, list) and lo <= len(x) <= hi and all(isinstance(i, str) and i for i in x)


def table(title, rows_keys, cols, cell, md):
    out = []
    header = [title] + cols + ["total"]
    body = []
    for r in rows_keys:
        vals = [cell(r, c) for c in cols]
        body.append([r] + [str(v) for v in vals] + [str(sum(vals))])
    tot = [sum(cell(r, c) for r in rows_keys) for c in cols]
    body.append(["total"] + [str(v) for v in tot] + [str(sum(tot))])
    if md:
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|")
        for b in body:
            out.append("| " + " | ".join(b) + " |")
    else:
        w = [max(len(str(x[i])) for x in [header] + body) for i in range(len(header))]
        for b in [header] + body:
            out.append("  ".join(str(v).ljust(w[i]) if i == 0 else str(v).rjust(w[i]) for i, v in enumerate(b)))
    return "\n".join(out)


def main():
    md = "--markdown" in sys.argv
    errors, warnings = [], []
    mems = load("memories.jsonl", errors)
    pairs = load("pairs.jsonl", errors)
    prompts = load("prompts.jsonl", errors)

    # ---- memories
    mem_by_id = {}
    alias_count = 0
    for i, m in enumerate(mems, 1):
        w = f"memories.jsonl:{i}"
        allowed = {"id", "title", "text", "type", "tags", "scope", "created", "aliases", "supersedes"}
        for k in ("id", "title", "text", "type", "tags", "scope", "created"):
            if k not in m:
                errors.append(f"{w}: missing field {k}")
        for k in m:
            if k not in allowed:
                errors.append(f"{w}: unknown field {k}")
        mid = m.get("id")
        if not isinstance(mid, str) or not ID_RE.match(mid or ""):
            errors.append(f"{w}: bad id {mid!r}")
            continue
        if mid in mem_by_id:
            errors.append(f"{w}: duplicate id {mid}")
        mem_by_id[mid] = m
        for k in ("title", "text"):
            if not isinstance(m.get(k), str) or not m.get(k).strip():
                errors.append(f"{w}: {k} must be a non-empty string")
        if m.get("type") not in TYPES:
            errors.append(f"{w}: bad type {m.get('type')!r}")
        if not is_str_list(m.get("tags"), 2, 4):
            errors.append(f"{w}: tags must be 2-4 strings")
        sc = m.get("scope")
        if not (sc == "global" or (isinstance(sc, str) and sc.startswith("project:") and sc[8:] in REPOS)):
            errors.append(f"{w}: bad scope {sc!r}")
        cr = m.get("created")
        if not isinstance(cr, str) or not DATE_RE.match(cr) or not ("2025-01-06" <= cr <= "2026-11-30"):
            errors.append(f"{w}: bad created {cr!r}")
        if "aliases" in m:
            alias_count += 1
            if not is_str_list(m["aliases"], 1):
                errors.append(f"{w}: aliases must be a non-empty list of strings")
        if "supersedes" in m and not isinstance(m["supersedes"], str):
            errors.append(f"{w}: supersedes must be a string id")
        n_sent = len([s for s in re.split(r"(?<=[.!?])\s+(?=[A-ZÇĞİÖŞÜ`'\"(])", (m.get("text") or "").strip()) if s])
        if n_sent > 5:
            warnings.append(f"{w} {mid}: text has ~{n_sent} sentences (target 1-4)")
        check_secret(f"{w} {mid}", json.dumps(m, ensure_ascii=False), errors)
    if alias_count > 6:
        errors.append(f"memories: {alias_count} memories have aliases (max 6)")
    sup_links = []
    for mid, m in mem_by_id.items():
        s = m.get("supersedes")
        if s is None:
            continue
        if s not in mem_by_id:
            errors.append(f"memory {mid}: supersedes unknown id {s}")
        elif s == mid:
            errors.append(f"memory {mid}: supersedes itself")
        else:
            sup_links.append((s, mid))
            if mem_by_id[s]["created"] > m["created"]:
                errors.append(f"memory {mid}: supersedes a newer memory {s}")

    # ---- pairs
    sup_set = {frozenset(x) for x in sup_links}
    for i, p in enumerate(pairs, 1):
        w = f"pairs.jsonl:{i}"
        for k, t in (("older", str), ("newer", str), ("newer_replaces", bool), ("note", str)):
            if not isinstance(p.get(k), t):
                errors.append(f"{w}: field {k} missing or wrong type")
        o, n = p.get("older"), p.get("newer")
        for x in (o, n):
            if x not in mem_by_id:
                errors.append(f"{w}: unknown id {x}")
        if o in mem_by_id and n in mem_by_id:
            if mem_by_id[o]["created"] >= mem_by_id[n]["created"]:
                errors.append(f"{w}: older is not older than newer")
            if frozenset((o, n)) in sup_set:
                errors.append(f"{w}: pair {o}/{n} also has a supersedes link")

    # ---- prompts
    seen = set()
    for i, p in enumerate(prompts, 1):
        w = f"prompts.jsonl:{i}"
        allowed = {"id", "query", "kind", "lang", "expect", "stale", "history", "project"}
        for k in p:
            if k not in allowed:
                errors.append(f"{w}: unknown field {k}")
        pid = p.get("id")
        if not isinstance(pid, str) or not re.match(rf"^{SET}-p\d{{3}}$", pid):
            errors.append(f"{w}: bad id {pid!r}")
        elif pid in seen:
            errors.append(f"{w}: duplicate id {pid}")
        seen.add(pid)
        if not isinstance(p.get("query"), str) or not p["query"].strip():
            errors.append(f"{w}: query must be a non-empty string")
        kind, lang = p.get("kind"), p.get("lang")
        if kind not in KINDS:
            errors.append(f"{w}: bad kind {kind!r}")
        if lang not in LANGS:
            errors.append(f"{w}: bad lang {lang!r}")
        exp = p.get("expect")
        if not is_str_list(exp, 0):
            errors.append(f"{w}: expect must be a list of ids")
            exp = []
        if kind == "chitchat" and exp:
            errors.append(f"{w}: chitchat must have empty expect")
        if kind != "chitchat" and not exp:
            errors.append(f"{w}: only chitchat may have empty expect")
        if len(set(exp)) != len(exp):
            errors.append(f"{w}: duplicate ids in expect")
        proj = p.get("project")
        if proj is not None and proj not in REPOS:
            errors.append(f"{w}: unknown project {proj!r}")
        for e in exp:
            if e not in mem_by_id:
                errors.append(f"{w}: expect id {e} unknown")
                continue
            sc = mem_by_id[e]["scope"]
            if sc != "global" and sc != f"project:{proj}":
                errors.append(f"{w}: expect {e} has scope {sc} but prompt project is {proj}")
        if "stale" in p:
            if not is_str_list(p["stale"], 1):
                errors.append(f"{w}: stale must be a non-empty list of ids")
            else:
                for s in p["stale"]:
                    if s not in mem_by_id:
                        errors.append(f"{w}: stale id {s} unknown")
                    if s in exp:
                        errors.append(f"{w}: {s} is both expected and stale")
        if "history" in p and not is_str_list(p["history"], 1, 3):
            errors.append(f"{w}: history must be 1-3 strings")
        if kind == "superseded":
            ok = any((s, e) in sup_links for e in exp for s in p.get("stale", []))
            if not ok:
                errors.append(f"{w}: superseded prompt needs an expect/stale supersedes pair")
        if kind == "newer-disagrees":
            ids = set(exp) | set(p.get("stale", []))
            if not any({q["older"], q["newer"]} & ids for q in pairs):
                errors.append(f"{w}: newer-disagrees prompt touches no pairs.jsonl subject")
        if kind == "no-diacritics" and set(p.get("query", "")) & TR_CHARS:
            errors.append(f"{w}: no-diacritics prompt contains Turkish diacritics")
        if kind == "paraphrase" and exp:
            mw = set()
            for e in exp:
                if e in mem_by_id:
                    m = mem_by_id[e]
                    mw |= set(words(m["title"] + " " + m["text"] + " " + " ".join(m["tags"])))
            hits = []
            for q in set(words(p["query"])):
                for x in mw:
                    if q == x or (len(q) >= 5 and len(x) >= 5 and q[:5] == x[:5]):
                        hits.append(f"{q}~{x}")
            if hits:
                warnings.append(f"{w} {pid}: paraphrase shares words with expected memory: {', '.join(sorted(hits))}")
        check_secret(f"{w} {pid}", json.dumps(p, ensure_ascii=False), errors)

    # ---- rough targets (warnings only)
    def rng(label, val, lo, hi):
        if not (lo <= val <= hi):
            warnings.append(f"{label} = {val}, target {lo}-{hi}")
    rng("memories", len(mems), 175, 185)
    rng("prompts", len(prompts), 270, 285)
    rng("supersedes links", len(sup_links), 10, 16)
    rng("pairs", len(pairs), 12, 18)
    if prompts:
        rng("% prompts with project", round(100 * sum(1 for p in prompts if p.get("project")) / len(prompts)), 70, 82)
        rng("% prompts with history", round(100 * sum(1 for p in prompts if p.get("history")) / len(prompts)), 30, 40)

    # ---- tables
    scopes = ["global"] + [f"project:{r}" for r in REPOS]
    sc_ty = Counter((m.get("scope"), m.get("type")) for m in mems)
    mlang = Counter(mem_lang(m) for m in mems)
    kl = Counter((p.get("kind"), p.get("lang")) for p in prompts)
    pp = Counter(p.get("project") or "(none)" for p in prompts)
    ph = Counter((p.get("project") or "(none)", "with history" if p.get("history") else "no history") for p in prompts)
    out = []
    h = "### " if md else "== "
    out.append(f"{h}Memories by scope x type")
    out.append(table("scope", scopes, TYPES, lambda r, c: sc_ty[(r, c)], md))
    out.append(f"\n{h}Memories by language (heuristic)")
    out.append(table("language", LANGS, ["memories"], lambda r, c: mlang[r], md))
    out.append(f"\n{h}Prompts by kind x lang")
    out.append(table("kind", KINDS, LANGS, lambda r, c: kl[(r, c)], md))
    out.append(f"\n{h}Prompts by project")
    out.append(table("project", REPOS + ["(none)"], ["with history", "no history"], lambda r, c: ph[(r, c)], md))
    out.append(f"\n{h}Other counts")
    other = [("supersedes links", len(sup_links)), ("pairs (replaces)", sum(1 for p in pairs if p.get("newer_replaces") is True)),
             ("pairs (exception)", sum(1 for p in pairs if p.get("newer_replaces") is False)),
             ("memories with aliases", alias_count),
             ("prompts with stale", sum(1 for p in prompts if p.get("stale")))]
    if md:
        out.append("| count | value |\n|---|---:|")
        out += [f"| {a} | {b} |" for a, b in other]
    else:
        out += [f"{a}: {b}" for a, b in other]
    print("\n".join(out))
    for x in warnings:
        print("WARNING:", x, file=sys.stderr)
    for x in errors:
        print("ERROR:", x, file=sys.stderr)
    print(f"\n{len(errors)} error(s), {len(warnings)} warning(s)", file=sys.stderr)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
