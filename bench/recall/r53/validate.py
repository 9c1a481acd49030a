#!/usr/bin/env python3
"""Validate the r53 blind evaluation set (memories.jsonl, pairs.jsonl, prompts.jsonl).

Usage: python3 validate.py [--markdown]
Exit code 1 on any error. Standard library only.
"""
import json
import os
import re
import sys
from collections import Counter, defaultdict
from datetime import date

HERE = os.path.dirname(os.path.abspath(__file__))
SET = "r53"
REPOS = ["pacs-viewer", "ris-core", "rapor-dikte", "worklist-gateway", "hasta-portali", "hbys-enabiz-koprusu"]
TYPES = ["rule", "knowledge", "lesson", "preference", "fact", "identity"]
KINDS = ["keyword", "no-diacritics", "typo", "pasted", "paraphrase", "cross-language", "inflected",
         "short-task", "superseded", "newer-disagrees", "chitchat", "chitchat-subject"]
LANGS = ["tr", "en", "mixed"]
DATE_MIN, DATE_MAX = date(2025, 1, 6), date(2026, 11, 30)
ID_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
PID_RE = re.compile(r"^%s-p\d{3}$" % SET)

SECRET_PATTERNS = [
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"), "private key block"),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), "AWS access key id"),
    (re.compile(r"\b(ghp|gho|ghs|github_pat|glpat|xox[abpr])[-_][A-Za-z0-9_\-]{10,}"), "platform token"),
    (re.compile(r"\bhvs\.[A-Za-z0-9_\-]{20,}"), "Vault token"),
    (re.compile(r"(?i)\b(password|passwd|parola|şifre|secret|token|api[_-]?key|client[_-]?secret)\s*[:=]\s*['\"]?[^\s'\"`<>]{6,}"), "credential assignment"),
    (re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://[^\s/:@]+:[^\s/@]+@"), "credentials in URL"),
    (re.compile(r"\beyJ[A-Za-z0-9_\-]{15,}\.[A-Za-z0-9_\-]{10,}"), "JWT"),
    (re.compile(r"\b[A-Fa-f0-9]{32,}\b"), "long hex string"),
    (re.compile(r"\b(?=[A-Za-z0-9+/]*\d)(?=[A-Za-z0-9+/]*[A-Z])(?=[A-Za-z0-9+/]*[a-z])[A-Za-z0-9+/]{32,}={0,2}"), "long base64-like string"),
]

TR_WORDS = set("""ve ile bir bu şu da de mi mı mu mü ne için ama çok daha gibi var yok olan olarak sonra önce her hangi nasıl
neden kim nerede değil sadece artık hiç önce içinde altında üzerinden tarafından ise ya veya eğer için kadar ayrıca yeni
olmalı gerekiyor gerekli yapılır kullanılır edilir yapılmaz tek""".split())
EN_WORDS = set("""the a an and or of to in on for is are was be it this that with from by at as not no do does we our you
your only use uses used must never always after before when if into than then they them all every other run runs""".split())


def detect_lang(text):
    toks = re.findall(r"[a-zçğıöşüâîû]+", text.lower())
    tr = sum(1 for t in toks if t in TR_WORDS or re.search(r"[çğışöü]", t))
    en = sum(1 for t in toks if t in EN_WORDS)
    if tr + en == 0:
        return "en"
    r = tr / (tr + en)
    if r >= 0.75:
        return "tr"
    if r <= 0.25:
        return "en"
    return "mixed"


def load(name, errors):
    rows = []
    path = os.path.join(HERE, name)
    if not os.path.exists(path):
        errors.append("%s: missing" % name)
        return rows
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                errors.append("%s:%d: empty line" % (name, n))
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                errors.append("%s:%d: bad JSON (%s)" % (name, n, e))
                continue
            if not isinstance(obj, dict):
                errors.append("%s:%d: not an object" % (name, n))
                continue
            obj["_line"] = n
            rows.append(obj)
    return rows


def scan_secrets(where, s, errors):
    for rx, label in SECRET_PATTERNS:
        m = rx.search(s)
        if m:
            errors.append("%s: secret-looking string (%s): %r" % (where, label, m.group(0)[:40]))


def is_str_list(v, lo, hi):
    return isinstance(v, list) and lo <= len(v) <= hi and all(isinstance(x, str) and x.strip() for x in v)


def table(title, rows, cols, data, markdown):
    out = []
    if markdown:
        out.append("**%s**\n" % title)
        out.append("| | " + " | ".join(cols) + " | total |")
        out.append("|---" * (len(cols) + 2) + "|")
        for r in rows:
            vals = [data.get((r, c), 0) for c in cols]
            out.append("| %s | " % r + " | ".join(str(v) for v in vals) + " | %d |" % sum(vals))
        tot = [sum(data.get((r, c), 0) for r in rows) for c in cols]
        out.append("| **total** | " + " | ".join(str(v) for v in tot) + " | %d |" % sum(tot))
    else:
        out.append(title)
        w = max([len(r) for r in rows] + [8])
        out.append(" " * (w + 1) + " ".join("%8s" % c[:8] for c in cols) + "    total")
        for r in rows:
            vals = [data.get((r, c), 0) for c in cols]
            out.append("%-*s " % (w, r) + " ".join("%8d" % v for v in vals) + "  %7d" % sum(vals))
        tot = [sum(data.get((r, c), 0) for r in rows) for c in cols]
        out.append("%-*s " % (w, "total") + " ".join("%8d" % v for v in tot) + "  %7d" % sum(tot))
    return "\n".join(out) + "\n"


def main():
    markdown = "--markdown" in sys.argv[1:]
    errors, warnings = [], []
    mems = load("memories.jsonl", errors)
    pairs = load("pairs.jsonl", errors)
    prompts = load("prompts.jsonl", errors)

    # ---------------- memories ----------------
    mem_by_id = {}
    mem_fields = {"id", "title", "text", "type", "tags", "scope", "created", "aliases", "supersedes", "_line"}
    for m in mems:
        w = "memories.jsonl:%d" % m["_line"]
        for k in ("id", "title", "text", "type", "tags", "scope", "created"):
            if k not in m:
                errors.append("%s: missing field %s" % (w, k))
        extra = set(m) - mem_fields
        if extra:
            errors.append("%s: unknown fields %s" % (w, sorted(extra)))
        mid = m.get("id")
        if not isinstance(mid, str) or not ID_RE.match(mid):
            errors.append("%s: id not kebab-case ASCII: %r" % (w, mid))
            continue
        if mid in mem_by_id:
            errors.append("%s: duplicate id %s" % (w, mid))
        mem_by_id[mid] = m
        for k in ("title", "text"):
            if not isinstance(m.get(k), str) or not m.get(k, "").strip():
                errors.append("%s: %s must be a non-empty string" % (w, k))
        if m.get("type") not in TYPES:
            errors.append("%s: bad type %r" % (w, m.get("type")))
        if not is_str_list(m.get("tags"), 2, 4):
            errors.append("%s: tags must be a list of 2-4 strings" % w)
        sc = m.get("scope")
        if not (sc == "global" or (isinstance(sc, str) and sc.startswith("project:") and sc[8:] in REPOS)):
            errors.append("%s: bad scope %r" % (w, sc))
        try:
            d = date.fromisoformat(m.get("created", ""))
            if not (DATE_MIN <= d <= DATE_MAX):
                errors.append("%s: created %s out of range" % (w, d))
        except (TypeError, ValueError):
            errors.append("%s: bad created %r" % (w, m.get("created")))
        if "aliases" in m and not is_str_list(m["aliases"], 1, 10):
            errors.append("%s: aliases must be a non-empty list of strings" % w)
        if "supersedes" in m and not isinstance(m["supersedes"], str):
            errors.append("%s: supersedes must be a string id" % w)
        text = m.get("text", "") if isinstance(m.get("text"), str) else ""
        nsent = len([s for s in re.split(r"(?<=[.!?])\s+(?=[A-ZÇĞİÖŞÜ`'\"(])", text.strip()) if s])
        if nsent > 4:
            warnings.append("%s: text has %d sentences (>4)" % (w, nsent))
        scan_secrets(w, json.dumps({k: v for k, v in m.items() if k != "_line"}, ensure_ascii=False), errors)
    if not (175 <= len(mems) <= 185):
        errors.append("memories: %d rows, expected 175-185" % len(mems))
    n_alias = sum(1 for m in mems if "aliases" in m)
    if n_alias > 6:
        errors.append("memories: %d have aliases, at most 6 allowed" % n_alias)
    sup_links = []
    for m in mems:
        if "supersedes" in m and isinstance(m.get("supersedes"), str):
            old = mem_by_id.get(m["supersedes"])
            if old is None:
                errors.append("memories: %s supersedes unknown id %s" % (m["id"], m["supersedes"]))
            elif old["id"] == m["id"]:
                errors.append("memories: %s supersedes itself" % m["id"])
            else:
                sup_links.append((old["id"], m["id"]))
                if str(old.get("created")) > str(m.get("created")):
                    errors.append("memories: %s supersedes a newer memory %s" % (m["id"], old["id"]))
    sup_set = set(sup_links) | {(b, a) for a, b in sup_links}

    # ---------------- pairs ----------------
    for pr in pairs:
        w = "pairs.jsonl:%d" % pr["_line"]
        for k in ("older", "newer", "newer_replaces", "note"):
            if k not in pr:
                errors.append("%s: missing %s" % (w, k))
        o, n = pr.get("older"), pr.get("newer")
        if o not in mem_by_id:
            errors.append("%s: unknown older id %r" % (w, o))
        if n not in mem_by_id:
            errors.append("%s: unknown newer id %r" % (w, n))
        if not isinstance(pr.get("newer_replaces"), bool):
            errors.append("%s: newer_replaces must be boolean" % w)
        if not isinstance(pr.get("note"), str) or not pr.get("note", "").strip():
            errors.append("%s: note must be a non-empty string" % w)
        if o in mem_by_id and n in mem_by_id:
            if mem_by_id[o]["created"] > mem_by_id[n]["created"]:
                errors.append("%s: older %s is newer than %s" % (w, o, n))
            if (o, n) in sup_set:
                errors.append("%s: pair %s/%s also has a supersedes link" % (w, o, n))
        scan_secrets(w, pr.get("note", "") if isinstance(pr.get("note"), str) else "", errors)

    # ---------------- prompts ----------------
    seen = set()
    p_fields = {"id", "query", "kind", "lang", "expect", "stale", "history", "project", "_line"}
    for p in prompts:
        w = "prompts.jsonl:%d" % p["_line"]
        for k in ("id", "query", "kind", "lang", "expect"):
            if k not in p:
                errors.append("%s: missing %s" % (w, k))
        extra = set(p) - p_fields
        if extra:
            errors.append("%s: unknown fields %s" % (w, sorted(extra)))
        pid = p.get("id")
        if not isinstance(pid, str) or not PID_RE.match(pid):
            errors.append("%s: bad id %r" % (w, pid))
        elif pid in seen:
            errors.append("%s: duplicate id %s" % (w, pid))
        seen.add(pid)
        if not isinstance(p.get("query"), str) or not p.get("query", "").strip():
            errors.append("%s: query must be a non-empty string" % w)
        kind = p.get("kind")
        if kind not in KINDS:
            errors.append("%s: bad kind %r" % (w, kind))
        if p.get("lang") not in LANGS:
            errors.append("%s: bad lang %r" % (w, p.get("lang")))
        proj = p.get("project")
        if proj is not None and proj not in REPOS:
            errors.append("%s: unknown project %r" % (w, proj))
        exp = p.get("expect")
        if not isinstance(exp, list) or not all(isinstance(x, str) for x in exp):
            errors.append("%s: expect must be a list of ids" % w)
            exp = []
        if len(set(exp)) != len(exp):
            errors.append("%s: duplicate ids in expect" % w)
        if kind == "chitchat" and exp:
            errors.append("%s: chitchat must have empty expect" % w)
        if kind != "chitchat" and not exp:
            errors.append("%s: empty expect for kind %s" % (w, kind))
        if len(exp) > 4:
            errors.append("%s: more than 4 expected ids" % w)
        for e in exp:
            m = mem_by_id.get(e)
            if m is None:
                errors.append("%s: expect id %s does not exist" % (w, e))
                continue
            sc = m["scope"]
            if sc != "global" and sc != "project:%s" % proj:
                errors.append("%s: expected %s has scope %s but prompt project is %r" % (w, e, sc, proj))
        st = p.get("stale", [])
        if "stale" in p and (not isinstance(st, list) or not st):
            errors.append("%s: stale must be a non-empty list" % w)
            st = []
        for s in st:
            if s not in mem_by_id:
                errors.append("%s: stale id %s does not exist" % (w, s))
            if s in exp:
                errors.append("%s: %s is both expected and stale" % (w, s))
        if kind in ("superseded", "newer-disagrees") and exp:
            pass
        if kind == "superseded":
            if not st:
                errors.append("%s: superseded prompt without stale" % w)
            for s in st:
                if not any((s, e) in sup_links for e in exp):
                    errors.append("%s: stale %s is not superseded by an expected id" % (w, s))
        if "history" in p and not is_str_list(p["history"], 1, 3):
            errors.append("%s: history must be a list of 1-3 strings" % w)
        scan_secrets(w, json.dumps({k: v for k, v in p.items() if k != "_line"}, ensure_ascii=False), errors)
    if not (270 <= len(prompts) <= 285):
        errors.append("prompts: %d rows, expected 270-285" % len(prompts))
    pair_ids = set()
    for pr in pairs:
        pair_ids |= {pr.get("older"), pr.get("newer")}
    for p in prompts:
        if p.get("kind") == "newer-disagrees" and not (set(p.get("expect", [])) & pair_ids):
            errors.append("prompts.jsonl:%d: newer-disagrees prompt expects no pairs.jsonl memory" % p["_line"])

    # ---------------- tables ----------------
    out = []
    scopes = ["global"] + ["project:%s" % r for r in REPOS]
    d = Counter((m.get("scope"), m.get("type")) for m in mems)
    out.append(table("Memories by scope x type", scopes, TYPES, d, markdown))
    d = Counter((m.get("scope"), detect_lang(m.get("title", "") + " " + m.get("text", ""))) for m in mems)
    out.append(table("Memories by scope x language (heuristic)", scopes, LANGS, d, markdown))
    d = Counter((p.get("kind"), p.get("lang")) for p in prompts)
    out.append(table("Prompts by kind x lang", KINDS, LANGS, d, markdown))
    d = Counter((p.get("project") or "(none)", "with history" if "history" in p else "no history") for p in prompts)
    out.append(table("Prompts by project", REPOS + ["(none)"], ["with history", "no history"], d, markdown))
    summary = ("memories=%d (aliases on %d, supersedes links %d), pairs=%d (replaces %d, exceptions %d), prompts=%d "
               "(with project %d, with history %d, with stale %d)" % (
                   len(mems), n_alias, len(sup_links), len(pairs),
                   sum(1 for x in pairs if x.get("newer_replaces") is True),
                   sum(1 for x in pairs if x.get("newer_replaces") is False), len(prompts),
                   sum(1 for p in prompts if p.get("project")), sum(1 for p in prompts if "history" in p),
                   sum(1 for p in prompts if "stale" in p)))
    print(("\n" if markdown else "\n").join(out))
    print(summary)
    for wmsg in warnings:
        print("WARNING:", wmsg, file=sys.stderr)
    if errors:
        for e in errors:
            print("ERROR:", e, file=sys.stderr)
        print("%d error(s)" % len(errors), file=sys.stderr)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
