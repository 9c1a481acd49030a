#!/usr/bin/env python3
"""Validate the r51 blind evaluation set (memories.jsonl, pairs.jsonl, prompts.jsonl).

Usage: python3 validate.py [--markdown]
Prints count tables; exits 1 on any error. Warnings do not fail the run.
Standard library only.
"""
import json
import os
import re
import sys
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
SET = "r51"
REPOS = ["mobil-bff", "kuzey-ios", "kuzey-android", "para-transferi",
         "kart-yonetimi", "musteri-onboarding"]
TYPES = ["rule", "knowledge", "lesson", "preference", "fact", "identity"]
KINDS = ["keyword", "no-diacritics", "typo", "pasted", "paraphrase", "cross-language",
         "inflected", "short-task", "superseded", "newer-disagrees", "chitchat",
         "chitchat-subject"]
LANGS = ["tr", "en", "mixed"]
DATE_MIN, DATE_MAX = "2025-01-06", "2026-11-30"
ID_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
TR_DIACRITICS = set("çğıöşüÇĞİÖŞÜ")

SECRET_PATTERNS = [
    (r"AKIA[0-9A-Z]{16}", "AWS access key"),
    (r"-----BEGIN [A-Z ]*PRIVATE KEY-----", "private key"),
    (r"\bgh[pousr]_[A-Za-z0-9]{20,}", "GitHub token"),
    (r"\bglpat-[A-Za-z0-9_-]{10,}", "GitLab token"),
    (r"\bxox[abpr]-[A-Za-z0-9-]{10,}", "Slack token"),
    (r"\bAIza[0-9A-Za-z_-]{30,}", "Google API key"),
    (r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}", "JWT"),
    (r"(?i)\b(password|passwd|pwd|secret|token|api[_-]?key|şifre)\s*[:=]\s*['\"]?[^\s'\"<>]{4,}", "assignment of a secret"),
    (r"\b[A-Fa-f0-9]{32,}\b", "long hex string"),
    (r"\b(?=[A-Za-z0-9+/]*\d)(?=[A-Za-z0-9+/]*[a-z])(?=[A-Za-z0-9+/]*[A-Z])[A-Za-z0-9+/]{40,}={0,2}", "long base64-like string"),
]
HOST_RE = re.compile(r"(?<![\w.])((?:[a-z0-9-]+\.)+(?:com|net|org|io|dev|app|co|tr|cloud|ai))(?![\w.]*\w)")
URL_RE = re.compile(r"https?://([^/\s:'\"`),;]+?)[.,;]?(?=[/\s:'\"`),;]|$)")

STOP = set("""the a an and or of to in on for with by is are be was were it this that these those
from at as not no do does did can could should would will i you we our your my me us they them
if then than so but how what which who where when why there here into about after before
only any all also just still now new old use using used get make need via per vs ve ile
has have had out up down off
bir bu şu o da de mi mı mu mü ne için gibi daha çok en ki ya veya yok var değil olan olarak
sonra önce artık her hiç nasıl neden nerede hangi kim kaç şey ama fakat ise""".split())

TR_WORDS = set("""ve ile için bir bu da de değil yok olarak sonra önce artık her gibi veya ama mı mi
var kadar arası sadece yine göre üzerinden altında olmalı gerekir lazım itibaren beri ya ki hiç çok
daha ise en""".split())
EN_WORDS = set("""the and is are to of in on for with by must use not from only since we it be before
after when than into this that all every never always other run them was has have uses get gets goes go
do does its their our your at as an a or if so any who via just need needs without within under above
over more less then they these those there""".split())

errors, warnings = [], []


def err(msg):
    errors.append(msg)


def warn(msg):
    warnings.append(msg)


def load(name):
    rows = []
    path = os.path.join(HERE, name)
    if not os.path.exists(path):
        err("%s: missing" % name)
        return rows
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                err("%s:%d: empty line" % (name, n))
                continue
            try:
                o = json.loads(line)
            except json.JSONDecodeError as e:
                err("%s:%d: bad JSON (%s)" % (name, n, e))
                continue
            if not isinstance(o, dict):
                err("%s:%d: not an object" % (name, n))
                continue
            rows.append(o)
    return rows


def words(s):
    return re.findall(r"[a-zçğıöşüâîû0-9]+", s.lower().replace("İ", "i").replace("I", "ı"))


def lang_of(text):
    """Heuristic language of a memory: quoted error strings/code are ignored;
    Turkish markers = words with Turkish letters, Turkish function words and
    apostrophe suffixes (MR'ları); English markers = English function words."""
    t = re.sub(r"`[^`]*`|(?<!\w)'[^']*'(?!\w)|\"[^\"]*\"", " ", text)
    suffixes = len(re.findall(r"\w'[a-zçğıöşü]+", t))
    raw = re.findall(r"[A-Za-zÇĞİÖŞÜçğıöşüâîû]+", t)
    w = words(t)
    tr = suffixes + sum(1 for x in w if x in TR_WORDS)
    tr += sum(1 for x in raw if x[0].islower() and set(x) & TR_DIACRITICS)
    en = sum(1 for x in w if x in EN_WORDS)
    if tr >= 2 and en >= 2 and min(tr, en) / float(tr + en) >= 0.2:
        return "mixed"
    return "en" if en > tr else "tr"


def check_text_safety(where, s):
    for pat, what in SECRET_PATTERNS:
        if re.search(pat, s):
            err("%s: secret-looking string (%s)" % (where, what))
    for h in URL_RE.findall(s):
        if not (h.endswith(".lan") or h.endswith(".example")):
            err("%s: URL host %r is not .lan/.example" % (where, h))
    for h in HOST_RE.findall(s):
        err("%s: host-like name %r is not .lan/.example" % (where, h))


def main():
    md = "--markdown" in sys.argv
    mems = load("memories.jsonl")
    pairs = load("pairs.jsonl")
    prompts = load("prompts.jsonl")

    # ---------- memories
    byid = {}
    alias_count = 0
    for m in mems:
        mid = m.get("id")
        where = "memory %s" % mid
        allowed = {"id", "title", "text", "type", "tags", "scope", "created", "aliases", "supersedes"}
        for k in m:
            if k not in allowed:
                err("%s: unknown field %r" % (where, k))
        for k in ["id", "title", "text", "type", "tags", "scope", "created"]:
            if k not in m:
                err("%s: missing field %r" % (where, k))
        if not isinstance(mid, str) or not ID_RE.match(mid or ""):
            err("%s: id not kebab-case ASCII" % where)
        if mid in byid:
            err("%s: duplicate id" % where)
        byid[mid] = m
        for k in ["title", "text"]:
            if not isinstance(m.get(k), str) or not m.get(k, "").strip():
                err("%s: %s must be a non-empty string" % (where, k))
        if m.get("type") not in TYPES:
            err("%s: bad type %r" % (where, m.get("type")))
        tags = m.get("tags")
        if not isinstance(tags, list) or not (2 <= len(tags) <= 4) or not all(isinstance(t, str) and t for t in tags):
            err("%s: tags must be a list of 2-4 strings" % where)
        sc = m.get("scope")
        if not (sc == "global" or (isinstance(sc, str) and sc.startswith("project:") and sc[8:] in REPOS)):
            err("%s: bad scope %r" % (where, sc))
        cr = m.get("created")
        if not isinstance(cr, str) or not DATE_RE.match(cr) or not (DATE_MIN <= cr <= DATE_MAX):
            err("%s: created %r not a date in [%s, %s]" % (where, cr, DATE_MIN, DATE_MAX))
        if "aliases" in m:
            al = m["aliases"]
            if not isinstance(al, list) or not al or not all(isinstance(a, str) and a for a in al):
                err("%s: aliases must be a non-empty list of strings" % where)
            alias_count += 1
        if "supersedes" in m and not isinstance(m["supersedes"], str):
            err("%s: supersedes must be a string id" % where)
        text = m.get("text", "") or ""
        nsent = len([x for x in re.split(r"(?<=[.!?])\s+(?=[A-ZÇĞİÖŞÜ`'\"(])", text.strip()) if x])
        if nsent > 4:
            warn("%s: text looks longer than 4 sentences (%d)" % (where, nsent))
        blob = " ".join([str(m.get("title", "")), text] + [str(a) for a in m.get("aliases", []) or []])
        check_text_safety(where, blob)
    if alias_count > 6:
        err("aliases used on %d memories (max 6)" % alias_count)
    if not (175 <= len(mems) <= 185):
        err("memories: %d (expected 175-185)" % len(mems))

    sup_links = []
    for m in mems:
        s = m.get("supersedes")
        if s is None:
            continue
        if s not in byid:
            err("memory %s: supersedes unknown id %r" % (m["id"], s))
            continue
        if s == m["id"]:
            err("memory %s: supersedes itself" % m["id"])
        if byid[s].get("created", "") >= m.get("created", ""):
            err("memory %s: not newer than superseded %s" % (m["id"], s))
        sup_links.append((s, m["id"]))

    # ---------- pairs
    pair_ids = set()
    for n, p in enumerate(pairs, 1):
        where = "pair %d" % n
        for k in ["older", "newer", "newer_replaces", "note"]:
            if k not in p:
                err("%s: missing %r" % (where, k))
        o, nw = p.get("older"), p.get("newer")
        if o not in byid or nw not in byid:
            err("%s: unknown id(s) %r / %r" % (where, o, nw))
            continue
        if not isinstance(p.get("newer_replaces"), bool):
            err("%s: newer_replaces must be boolean" % where)
        if not isinstance(p.get("note"), str) or not p.get("note"):
            err("%s: note must be a non-empty string" % where)
        if byid[o]["created"] >= byid[nw]["created"]:
            err("%s: older %s is not older than %s" % (where, o, nw))
        if byid[nw].get("supersedes") == o or byid[o].get("supersedes") == nw:
            err("%s: has a supersedes link (pairs must not)" % where)
        pair_ids.add((o, nw))

    # ---------- prompts
    seen = set()
    for p in prompts:
        pid = p.get("id")
        where = "prompt %s" % pid
        allowed = {"id", "query", "kind", "lang", "expect", "stale", "history", "project"}
        for k in p:
            if k not in allowed:
                err("%s: unknown field %r" % (where, k))
        if not isinstance(pid, str) or not re.match(r"^%s-p\d{3}$" % SET, pid or ""):
            err("%s: bad id" % where)
        if pid in seen:
            err("%s: duplicate id" % where)
        seen.add(pid)
        q = p.get("query")
        if not isinstance(q, str) or not q.strip():
            err("%s: query must be a non-empty string" % where)
            q = ""
        kind = p.get("kind")
        if kind not in KINDS:
            err("%s: bad kind %r" % (where, kind))
        if p.get("lang") not in LANGS:
            err("%s: bad lang %r" % (where, p.get("lang")))
        exp = p.get("expect")
        if not isinstance(exp, list) or not all(isinstance(x, str) for x in exp):
            err("%s: expect must be a list of ids" % where)
            exp = []
        if len(set(exp)) != len(exp):
            err("%s: duplicate ids in expect" % where)
        if kind == "chitchat" and exp:
            err("%s: chitchat must have empty expect" % where)
        if kind != "chitchat" and not exp:
            err("%s: non-chitchat prompt with empty expect" % where)
        if len(exp) > 4:
            warn("%s: %d expected memories" % (where, len(exp)))
        stale = p.get("stale", [])
        if "stale" in p and (not isinstance(stale, list) or not stale or not all(isinstance(x, str) for x in stale)):
            err("%s: stale must be a non-empty list of ids" % where)
            stale = []
        if set(stale) & set(exp):
            err("%s: id both in expect and stale" % where)
        proj = p.get("project")
        if "project" in p and proj not in REPOS:
            err("%s: unknown project %r" % (where, proj))
        if "history" in p:
            h = p["history"]
            if not isinstance(h, list) or not (1 <= len(h) <= 3) or not all(isinstance(x, str) and x for x in h):
                err("%s: history must be a list of 1-3 strings" % where)
        for x in exp + stale:
            if x not in byid:
                err("%s: unknown memory id %r" % (where, x))
        for x in exp:
            if x in byid:
                sc = byid[x]["scope"]
                if sc != "global" and sc != "project:%s" % proj:
                    err("%s: expects %s (scope %s) but project is %r" % (where, x, sc, proj))
        if kind == "no-diacritics" and set(q) & TR_DIACRITICS:
            err("%s: no-diacritics prompt contains Turkish diacritics" % where)
        if kind == "superseded":
            if not stale:
                err("%s: superseded prompt without stale" % where)
            for s in stale:
                if not any(s == a and b in exp for a, b in sup_links):
                    err("%s: stale %s is not superseded by an expected memory" % (where, s))
        if kind == "newer-disagrees":
            ok = any((a in exp or a in stale) and b in exp for a, b in pair_ids)
            if not ok:
                err("%s: newer-disagrees prompt does not expect the newer memory of a pair" % where)
        if kind == "paraphrase" and exp and exp[0] in byid:
            m = byid[exp[0]]
            mw = {w for w in words(" ".join([m["title"], m["text"]] + m["tags"])) if w not in STOP and len(w) > 2}
            qw = {w for w in words(q) if w not in STOP and len(w) > 2}
            shared = sorted(a for a in qw for b in mw
                            if a == b or (len(a) >= 5 and len(b) >= 5 and a[:5] == b[:5]))
            if shared:
                warn("%s: paraphrase shares words with %s: %s" % (where, exp[0], sorted(set(shared))))
        check_text_safety(where, q + " " + " ".join(p.get("history", []) or []))
    if not (270 <= len(prompts) <= 285):
        err("prompts: %d (expected 270-285)" % len(prompts))

    # ---------- tables
    def table(title, rows_keys, cols_keys, cell):
        out = []
        if md:
            out.append("**%s**\n" % title)
            out.append("| | " + " | ".join(cols_keys) + " | total |")
            out.append("|---" * (len(cols_keys) + 2) + "|")
            for r in rows_keys:
                vals = [cell(r, c) for c in cols_keys]
                out.append("| %s | " % r + " | ".join(str(v) for v in vals) + " | %d |" % sum(vals))
            tot = [sum(cell(r, c) for r in rows_keys) for c in cols_keys]
            out.append("| total | " + " | ".join(str(v) for v in tot) + " | %d |" % sum(tot))
        else:
            out.append(title)
            w = max(len(str(r)) for r in rows_keys + ["total"]) + 2
            out.append(" " * w + "".join("%10s" % c[:9] for c in cols_keys) + "%8s" % "total")
            for r in rows_keys:
                vals = [cell(r, c) for c in cols_keys]
                out.append(str(r).ljust(w) + "".join("%10d" % v for v in vals) + "%8d" % sum(vals))
            tot = [sum(cell(r, c) for r in rows_keys) for c in cols_keys]
            out.append("total".ljust(w) + "".join("%10d" % v for v in tot) + "%8d" % sum(tot))
        print("\n".join(out) + "\n")

    scopes = ["global"] + ["project:%s" % r for r in REPOS]
    st = Counter((m.get("scope"), m.get("type")) for m in mems)
    table("Memories by scope x type", scopes, TYPES, lambda r, c: st[(r, c)])
    ml = Counter((m.get("scope") == "global" and "global" or "project", lang_of(m.get("title", "") + ". " + m.get("text", ""))) for m in mems)
    table("Memories by language (heuristic) x scope kind", ["global", "project"], LANGS, lambda r, c: ml[(r, c)])
    kl = Counter((p.get("kind"), p.get("lang")) for p in prompts)
    table("Prompts by kind x lang", KINDS, LANGS, lambda r, c: kl[(r, c)])
    pj = Counter((p.get("project") or "(none)", "with history" if p.get("history") else "no history") for p in prompts)
    table("Prompts by project", REPOS + ["(none)"], ["with history", "no history"], lambda r, c: pj[(r, c)])
    other = Counter()
    other["supersedes links"] = len(sup_links)
    other["pairs (newer replaces)"] = sum(1 for p in pairs if p.get("newer_replaces") is True)
    other["pairs (exception)"] = sum(1 for p in pairs if p.get("newer_replaces") is False)
    other["memories with aliases"] = alias_count
    other["prompts with stale"] = sum(1 for p in prompts if p.get("stale"))
    if md:
        print("**Other counts**\n\n| item | count |\n|---|---|")
        for k, v in other.items():
            print("| %s | %d |" % (k, v))
        print()
    else:
        for k, v in other.items():
            print("%-24s %d" % (k, v))
        print()

    for w in warnings:
        print("WARNING:", w, file=sys.stderr)
    for e in errors:
        print("ERROR:", e, file=sys.stderr)
    if errors:
        print("%d error(s)" % len(errors), file=sys.stderr)
        sys.exit(1)
    print("OK: %d memories, %d pairs, %d prompts, %d warning(s)" % (len(mems), len(pairs), len(prompts), len(warnings)),
          file=sys.stderr)


if __name__ == "__main__":
    main()
