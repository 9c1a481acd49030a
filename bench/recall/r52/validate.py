#!/usr/bin/env python3
"""Validate the r52 blind evaluation set (memories, pairs, prompts).

Usage: python3 validate.py [--markdown]
Exit code 1 on any error. Warnings (e.g. paraphrase word overlap) do not fail.
"""
import json, os, re, sys
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
SET = "r52"
REPOS = ["sayac-okuma-ingest", "kesinti-tespit", "fatura-export", "saha-is-emri", "ts-store", "epdk-rapor"]
TYPES = ["rule", "knowledge", "lesson", "preference", "fact", "identity"]
KINDS = ["keyword", "no-diacritics", "typo", "pasted", "paraphrase", "cross-language", "inflected",
         "short-task", "superseded", "newer-disagrees", "chitchat", "chitchat-subject"]
LANGS = ["tr", "en", "mixed"]
errors, warnings = [], []


def err(msg):
    errors.append(msg)


def warn(msg):
    warnings.append(msg)


def load(name):
    rows = []
    path = os.path.join(HERE, name)
    if not os.path.exists(path):
        err(f"{name}: missing")
        return rows
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                err(f"{name}:{i}: empty line")
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                err(f"{name}:{i}: bad JSON ({e})")
                continue
            if not isinstance(obj, dict):
                err(f"{name}:{i}: not an object")
                continue
            if "\\u0" in line and re.search(r"\\u0(0e7|11f|131|0f6|15f|0fc|0c7|11e|130|0d6|15e|0dc)", line):
                err(f"{name}:{i}: Turkish characters are escaped, write them literally")
            obj["_line"] = i
            rows.append(obj)
    return rows


def check_fields(name, obj, required, optional):
    keys = set(obj) - {"_line"}
    for k, t in required.items():
        if k not in obj:
            err(f"{name}:{obj['_line']}: missing field {k}")
        elif not isinstance(obj[k], t):
            err(f"{name}:{obj['_line']}: field {k} has wrong type")
    for k, t in optional.items():
        if k in obj and not isinstance(obj[k], t):
            err(f"{name}:{obj['_line']}: field {k} has wrong type")
    extra = keys - set(required) - set(optional)
    if extra:
        err(f"{name}:{obj['_line']}: unknown fields {sorted(extra)}")


# ---------------------------------------------------------------- secrets
SECRET_PATTERNS = [
    (r"-----BEGIN [A-Z ]*PRIVATE KEY-----", "private key block"),
    (r"\bAKIA[0-9A-Z]{16}\b", "AWS access key id"),
    (r"\b(ghp|gho|ghs|github_pat|glpat|xox[abpr])[-_][A-Za-z0-9_-]{10,}", "platform token"),
    (r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}", "JWT"),
    (r"(?i)\b(password|passwd|parola|şifre|sifre|secret|token|api[_-]?key)\s*[:=]\s*['\"]?[^\s'\"<>{}]{4,}", "credential assignment"),
    (r"\b[0-9a-fA-F]{32,}\b", "long hex string"),
    (r"\b[A-Za-z0-9+/]{40,}={0,2}", "long base64-like string"),
    (r"://[^/\s:@]+:[^/\s@]+@", "credentials in URL"),
]


def scan_secrets(name, obj, text):
    for pat, what in SECRET_PATTERNS:
        m = re.search(pat, text)
        if m:
            err(f"{name}:{obj['_line']}: secret-looking string ({what}): {m.group(0)[:30]}")


# ---------------------------------------------------------------- language heuristic
TR_WORDS = set("""ve ile için bir bu da de mi mı mu mü ne var yok olarak artık sadece gibi ama değil önce sonra
daha çok her ya veya kadar diye ise olan olduğu oluyor yapılıyor ediliyor geliyor gidiyor tutuluyor kullan
kullanılıyor yapma etme yazılıyor itibarıyla üzerinden altında arası göre için nasıl neden hangi""".split())
EN_WORDS = set("""the and is are to of in for with from on be we our not only use it its by at as an a this that
these those when if into than then must never always after before until since each every one per are was
were has have had don't do does so no any all""".split())
TR_CHARS = set("çğıöşüÇĞİÖŞÜ")


def sentence_lang(s):
    words = re.findall(r"[A-Za-zÇĞİÖŞÜçğıöşüâîû']+", s)
    tr = en = 0.0
    for w in words:
        lw = w.lower().strip("'")
        if lw in TR_WORDS:
            tr += 1
        if lw in EN_WORDS:
            en += 1
        if w[:1].islower() and any(c in TR_CHARS for c in w):
            tr += 0.5
        if re.search(r"'(d[ae]|t[ae]|[ıiuü]n|[ıiuü]|y[ae]|[ae]|l[ae]r|d[ae]n|t[ae]n|s[ıi])$", w):
            tr += 0.5
    if tr >= 1 and tr > en:
        return "tr"
    if en >= 1 and en > tr:
        return "en"
    return None


def text_lang(text):
    # quoted error strings and code are not the author's language
    text = re.sub(r"(?<![\w])'[^']+'(?![\w])|`[^`]*`|\"[^\"]*\"", " ", text)
    # identifiers (read_at, use-context, kafka01.veri.lan, a/b) carry no language
    text = re.sub(r"[\w'-]*[_/=<>][\w'./=<>-]*|\b\w+(?:[.-]\w+)+", " ", text)
    parts = [p for p in re.split(r"(?<=[.;:!?])\s+", text) if len(p.split()) >= 3]
    labels = Counter(l for l in map(sentence_lang, parts) if l)
    if labels.get("tr") and labels.get("en"):
        return "mixed"
    if labels.get("en"):
        return "en"
    if labels.get("tr"):
        return "tr"
    return "tr" if re.search(r"\b[a-zçğıöşü]*[çğıöşü]", text) else "en"


# ---------------------------------------------------------------- paraphrase overlap
STOP = set("""the and for with from that this what when where which who how why are was can our you your does did not
have has had but any all its out about into onto over than then them they their there these those just some like
still again also more most much very get got let way yes too use used one two new old every each after before
bir ve ile için bu şu ne mi mı mu mü da de ya ki gibi ama olan var yok çok daha diye nasıl neden hangi kim kime
bizim benim ben sen biz siz hep her""".split())


def words(s):
    return {w for w in re.findall(r"[a-zçğıöşüâîû0-9]+", s.lower().replace("i̇", "i")) if len(w) >= 3 and w not in STOP}


def overlap(q, mem):
    mw = words(mem["title"] + " " + mem["text"] + " " + " ".join(mem["tags"]))
    qw = words(q)
    hits = sorted(qw & mw)
    pref = {w[:5] for w in mw if len(w) >= 5}
    hits += sorted(w for w in qw if len(w) >= 5 and w[:5] in pref and w not in mw)
    return hits


# ---------------------------------------------------------------- main
def main():
    md = "--markdown" in sys.argv
    mems = load("memories.jsonl")
    pairs = load("pairs.jsonl")
    prompts = load("prompts.jsonl")

    byid = {}
    for m in mems:
        check_fields("memories.jsonl", m,
                     {"id": str, "title": str, "text": str, "type": str, "tags": list, "scope": str, "created": str},
                     {"aliases": list, "supersedes": str})
        mid = m.get("id", "")
        if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", mid or ""):
            err(f"memories.jsonl:{m['_line']}: id not kebab-case ASCII: {mid!r}")
        if mid in byid:
            err(f"memories.jsonl:{m['_line']}: duplicate id {mid}")
        byid[mid] = m
        if m.get("type") not in TYPES:
            err(f"memories.jsonl:{m['_line']}: bad type {m.get('type')}")
        tags = m.get("tags", [])
        if not (2 <= len(tags) <= 4) or not all(isinstance(t, str) and t for t in tags):
            err(f"memories.jsonl:{m['_line']}: tags must be 2-4 strings")
        sc = m.get("scope", "")
        if sc != "global" and not (sc.startswith("project:") and sc[8:] in REPOS):
            err(f"memories.jsonl:{m['_line']}: bad scope {sc}")
        c = m.get("created", "")
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", c) or not ("2025-01-06" <= c <= "2026-11-30"):
            err(f"memories.jsonl:{m['_line']}: created out of range: {c}")
        nsent = len([s for s in re.split(r"(?<=[.!?])\s+(?=[A-ZÇĞİÖŞÜ0-9'\"#(])", m.get("text", "")) if s.strip()])
        if nsent > 5:
            warn(f"memories.jsonl:{m['_line']}: text has {nsent} sentences")
        if "aliases" in m and not all(isinstance(a, str) and a for a in m["aliases"]):
            err(f"memories.jsonl:{m['_line']}: aliases must be non-empty strings")
        scan_secrets("memories.jsonl", m, " ".join([m.get("title", ""), m.get("text", "")] + m.get("aliases", [])))

    n_alias = sum(1 for m in mems if "aliases" in m)
    if n_alias > 6:
        err(f"memories: {n_alias} memories have aliases (max 6)")
    if not (175 <= len(mems) <= 185):
        err(f"memories: count {len(mems)} outside 175-185")

    sup_pairs = []
    for m in mems:
        if "supersedes" in m:
            o = m["supersedes"]
            if o not in byid:
                err(f"memories.jsonl:{m['_line']}: supersedes unknown id {o}")
            elif o == m["id"]:
                err(f"memories.jsonl:{m['_line']}: supersedes itself")
            else:
                if byid[o]["created"] >= m["created"]:
                    err(f"memories.jsonl:{m['_line']}: newer memory is not newer than {o}")
                sup_pairs.append((o, m["id"]))

    for pr in pairs:
        check_fields("pairs.jsonl", pr, {"older": str, "newer": str, "newer_replaces": bool, "note": str}, {})
        for k in ("older", "newer"):
            if pr.get(k) not in byid:
                err(f"pairs.jsonl:{pr['_line']}: unknown id {pr.get(k)}")
        if pr.get("older") in byid and pr.get("newer") in byid:
            if byid[pr["older"]]["created"] >= byid[pr["newer"]]["created"]:
                err(f"pairs.jsonl:{pr['_line']}: newer is not newer")
            if byid[pr["newer"]].get("supersedes") == pr["older"]:
                err(f"pairs.jsonl:{pr['_line']}: pair also has a supersedes link")
    pair_set = {(p.get("older"), p.get("newer")) for p in pairs}

    pids = set()
    for p in prompts:
        check_fields("prompts.jsonl", p,
                     {"id": str, "query": str, "kind": str, "lang": str, "expect": list},
                     {"stale": list, "history": list, "project": str})
        ln = p["_line"]
        if not re.fullmatch(SET + r"-p\d{3}", p.get("id", "")):
            err(f"prompts.jsonl:{ln}: bad id {p.get('id')}")
        if p.get("id") in pids:
            err(f"prompts.jsonl:{ln}: duplicate id")
        pids.add(p.get("id"))
        kind = p.get("kind")
        if kind not in KINDS:
            err(f"prompts.jsonl:{ln}: bad kind {kind}")
        if p.get("lang") not in LANGS:
            err(f"prompts.jsonl:{ln}: bad lang {p.get('lang')}")
        proj = p.get("project")
        if proj is not None and proj not in REPOS:
            err(f"prompts.jsonl:{ln}: unknown project {proj}")
        exp = p.get("expect", [])
        if kind == "chitchat" and exp:
            err(f"prompts.jsonl:{ln}: chitchat must have empty expect")
        if kind != "chitchat" and not exp:
            err(f"prompts.jsonl:{ln}: empty expect only allowed for chitchat")
        if len(exp) != len(set(exp)):
            err(f"prompts.jsonl:{ln}: duplicate ids in expect")
        for e in exp + p.get("stale", []):
            if e not in byid:
                err(f"prompts.jsonl:{ln}: unknown memory id {e}")
        for e in exp:
            if e in byid:
                sc = byid[e]["scope"]
                if sc != "global" and sc != f"project:{proj}":
                    err(f"prompts.jsonl:{ln}: expected {e} ({sc}) not visible in project {proj}")
        for s in p.get("stale", []):
            if s in exp:
                err(f"prompts.jsonl:{ln}: {s} both expected and stale")
        if "history" in p:
            h = p["history"]
            if not (1 <= len(h) <= 3) or not all(isinstance(x, str) and x.strip() for x in h):
                err(f"prompts.jsonl:{ln}: history must be 1-3 non-empty strings")
        if kind == "superseded":
            ok = any(byid.get(e, {}).get("supersedes") in p.get("stale", []) for e in exp)
            if not ok:
                err(f"prompts.jsonl:{ln}: superseded prompt without a supersedes-linked expect/stale")
        if kind == "newer-disagrees":
            ids = set(exp) | set(p.get("stale", []))
            if not any(o in ids and n in ids for o, n in pair_set):
                err(f"prompts.jsonl:{ln}: newer-disagrees prompt does not cover a pairs.jsonl pair")
        if kind == "no-diacritics" and re.search(r"[çğıöşüÇĞİÖŞÜ]", p.get("query", "")):
            err(f"prompts.jsonl:{ln}: no-diacritics prompt contains diacritics")
        if kind == "paraphrase":
            for e in exp[:1]:
                if e in byid:
                    hits = overlap(p["query"], byid[e])
                    if hits:
                        warn(f"prompts.jsonl:{ln}: paraphrase shares words with {e}: {hits}")
        scan_secrets("prompts.jsonl", p, " ".join([p.get("query", "")] + p.get("history", [])))
    if not (270 <= len(prompts) <= 285):
        err(f"prompts: count {len(prompts)} outside 270-285")

    # ------------------------------------------------------------ tables
    def table(title, rows, cols, data):
        out = []
        if md:
            out.append(f"**{title}**\n")
            out.append("| | " + " | ".join(cols) + " | total |")
            out.append("|---" * (len(cols) + 2) + "|")
        else:
            out.append(title)
            out.append(f"{'':26}" + "".join(f"{c:>12}" for c in cols) + f"{'total':>8}")
        for r in rows:
            vals = [data.get((r, c), 0) for c in cols]
            if md:
                out.append(f"| {r} | " + " | ".join(str(v) for v in vals) + f" | {sum(vals)} |")
            else:
                out.append(f"{r:26}" + "".join(f"{v:>12}" for v in vals) + f"{sum(vals):>8}")
        tot = [sum(data.get((r, c), 0) for r in rows) for c in cols]
        if md:
            out.append("| total | " + " | ".join(str(v) for v in tot) + f" | {sum(tot)} |")
        else:
            out.append(f"{'total':26}" + "".join(f"{v:>12}" for v in tot) + f"{sum(tot):>8}")
        print("\n".join(out) + "\n")

    d = Counter((m.get("scope"), m.get("type")) for m in mems)
    scopes = ["global"] + [f"project:{r}" for r in REPOS]
    table("Memories by scope x type", scopes, TYPES, d)
    d = Counter((text_lang(m.get("title", "") + ". " + m.get("text", "")), "memories") for m in mems)
    table("Memories by language (heuristic)", LANGS, ["memories"], d)
    d = Counter((p.get("kind"), p.get("lang")) for p in prompts)
    table("Prompts by kind x lang", KINDS, LANGS, d)
    d = Counter((p.get("project") or "(none)", "with history" if p.get("history") else "no history") for p in prompts)
    table("Prompts by project", REPOS + ["(none)"], ["with history", "no history"], d)
    d = Counter((k, "count") for k in ["supersedes links", "pairs (replaces)", "pairs (exception)", "memories with aliases",
                                       "prompts with stale"]
                for _ in range({"supersedes links": len(sup_pairs),
                                "pairs (replaces)": sum(1 for p in pairs if p.get("newer_replaces") is True),
                                "pairs (exception)": sum(1 for p in pairs if p.get("newer_replaces") is False),
                                "memories with aliases": n_alias,
                                "prompts with stale": sum(1 for p in prompts if p.get("stale"))}[k]))
    table("Links", ["supersedes links", "pairs (replaces)", "pairs (exception)", "memories with aliases",
                    "prompts with stale"], ["count"], d)

    for w in warnings:
        print("WARNING:", w, file=sys.stderr)
    for e in errors:
        print("ERROR:", e, file=sys.stderr)
    if errors:
        print(f"FAILED: {len(errors)} error(s)", file=sys.stderr)
        sys.exit(1)
    print(f"OK: {len(mems)} memories, {len(pairs)} pairs, {len(prompts)} prompts", file=sys.stderr)


if __name__ == "__main__":
    main()
