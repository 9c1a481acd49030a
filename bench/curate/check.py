#!/usr/bin/env python3
"""Is the curator set whole (labels.json against memories.jsonl and the built `shop` project)? Prints counts.

    python3 bench/curate/check.py              # checks + counts; exit 1 on any error
    python3 bench/curate/check.py --markdown   # also print the README count table
    python3 bench/curate/check.py --import     # also import the memories into a throwaway hafiza vault
                                               # (needs hafiza installed: the secret guard and the field
                                               # validation of the real import)

Stdlib only, except --import. The checks:
- every memory: fields, id format, unique id, dates (created <= updated <= 2026-12-01, last_used between),
  0 <= used <= shown, last_used present exactly when used > 0;
- every labelled id exists; a pair never pairs an id with itself;
- exact: the two texts are equal after folding whitespace, letter case and Turkish diacritics, and no other
  two memories are (the list is complete); the two differ in shown, used or created;
- near: not exact; `cross_language` agrees with a guess of each text's language; not_duplicate pairs are in
  neither list;
- paths: every dead/live/never-flag path appears verbatim in its memory; dead and live ones belong to
  project:shop; a dead path does not exist in the built project and its history agrees (deleted: a `D` entry
  and no rename; renamed: following `git log -M` renames from it ends at `renamed_to`, which exists, and
  `git log --follow` of `renamed_to` reaches the old path); a live path exists; a never-flag path does not
  exist in the project (so a checker that only tests existence would flag it);
- every path-like token in any memory is covered by one of its labels (no unlabelled path hides in a
  distractor);
- decay, with the design's half-lives (knowledge 150 d, preference and lesson 365 d; identity, rule and
  fact never decay) at 2026-12-01: an `archive` memory decays, is more than two half-lives past its last
  use (or creation), was never used and shown at least 5 times; every other decaying memory is within one
  half-life, so no other archive proposal is defensible; `keep` memories are not in `archive`;
- contradictions: same scope, [older, newer] by created date, `current` in the pair; genuine pairs are full
  coverage with the newer current; each trap kind has at least two instances, and each kind's labels are
  consistent (rule-vs-event: the rule is current; newer-retired: the older is current).
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import re
import subprocess
import sys
import tempfile
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import project  # noqa: E402  (the fixture builder next to this file)

import fixture  # noqa: E402  (bench/fixture.py, on the path project.py set)
from hafiza.vault.format import kinds  # noqa: E402

REF = dt.date(2026, 12, 1)
HALF_LIFE = {"knowledge": 150, "preference": 365, "lesson": 365}  # identity, rule, fact: never decay
TYPES = set(kinds.TYPES)
SCOPES = {"global", "project:shop", "project:other"}
TRAPS = ("one-shared-word", "rule-vs-event", "partial-coverage", "newer-retired")
KEYS = {"id", "title", "text", "type", "tags", "scope", "created", "source", "shown", "used", "updated"}
OPTIONAL = {"aliases", "supersedes", "last_used"}

errors: list[str] = []


def err(msg: str) -> None:
    errors.append(msg)


def day(value) -> dt.date:
    return dt.date.fromisoformat(value)


# ---------------------------------------------------------------- text
SPECIAL = {"ı": "i", "İ": "i", "I": "i"}


def fold(text: str) -> str:
    """Whitespace collapsed, Turkish-aware lower case, diacritics dropped (as vault.text.fold_text does)."""
    text = "".join(SPECIAL.get(ch, ch) for ch in unicodedata.normalize("NFC", text)).lower()
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return " ".join(text.split())


TR_WORDS = set("""ve bir bu şu için ile ama değil yok var sadece yalnızca olarak diye gibi da de mi mı ya
artık hâlâ hala her hiç ona onu oradan önce sonra kadar gerekiyor oluyor olsun yapma etme edilir yapılır
icin degil sadece artik once gun yeni eski""".split())
EN_WORDS = set("""the and is are to of in for not with it on we you there that this from be by as at or
don't isn't never every only after before our your""".split())


def language(text: str) -> str:
    """'tr' or 'en': a guess from function words and Turkish letters, good enough for this set."""
    words = re.findall(r"[\wçğıöşüâîû']+", text.lower().replace("İ", "i"))
    tr = sum(w in TR_WORDS for w in words) + 2 * len(re.findall(r"[çğışöüÇĞİŞÖÜ]", text))
    en = sum(w in EN_WORDS for w in words)
    return "tr" if tr > en else "en"


def whitespace_kind(a: str, b: str) -> str:
    if a == b:
        return "byte-identical"
    if " ".join(a.split()) == " ".join(b.split()):
        return "whitespace"
    if " ".join(a.lower().split()) == " ".join(b.lower().split()):
        return "letter case (+ whitespace)"
    return "diacritics (+ case)"


# Paths, as a curator might see them: a run with a slash, or a file name with a known extension or name.
PATH_RE = re.compile(r"(?<![\w@])(?:https?://\S+|[~$.\w{<*/-][\w.{}<>*?$~/-]*/[\w.{}<>*?$~/:-]*"
                     r"|[\w*.-]+\.(?:py|sh|ts|tsx|js|json|ya?ml|toml|md|html|log|tf|tfvars|rs|go|sql|gz|csv|conf|webp)\b"
                     r"|\b(?:Jenkinsfile|Makefile|Dockerfile[\w.]*)\b|\.env(?:\.\w+)?\b)")


def path_tokens(text: str) -> list[str]:
    return [t.rstrip(".,;:)'`") for t in PATH_RE.findall(text)]


# ---------------------------------------------------------------- the built project
def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def history(repo: Path) -> tuple[dict[str, str], set[str]]:
    """Renames old -> new and paths deleted, from `git log -M --name-status`, oldest commit first."""
    renames, deleted = {}, set()
    for line in git(repo, "log", "--reverse", "-M", "--name-status", "--format=").splitlines():
        parts = line.split("\t")
        if parts[0].startswith("R"):
            renames[parts[1]] = parts[2]
        elif parts[0] == "D":
            deleted.add(parts[1])
        elif parts[0] == "A":
            deleted.discard(parts[1])  # restored later
    return renames, deleted


def in_head(repo: Path, path: str) -> bool:
    return bool(git(repo, "ls-tree", "HEAD", "--", path.rstrip("/")).strip())


# ---------------------------------------------------------------- checks
def check_memories(mems: list[dict]) -> dict[str, dict]:
    by_id, seen = {}, set()
    for n, mem in enumerate(mems, 1):
        where = f"memories.jsonl:{n} ({mem.get('id')})"
        keys_ok, problems = fixture.entry_problems(mem, KEYS, OPTIONAL, seen)
        for problem in problems:
            err(f"{where}: {problem}")
        if not keys_ok:
            continue
        by_id[mem["id"]] = mem
        if mem["type"] not in TYPES or mem["scope"] not in SCOPES:
            err(f"{where}: type {mem['type']!r} or scope {mem['scope']!r}")
        created, updated = day(mem["created"]), day(mem["updated"])
        if not created <= updated <= REF:
            err(f"{where}: created {created} updated {updated}")
        if not 0 <= mem["used"] <= mem["shown"]:
            err(f"{where}: shown {mem['shown']} used {mem['used']}")
        if (mem["used"] > 0) != bool(mem.get("last_used")):
            err(f"{where}: last_used must be set exactly when used > 0")
        if mem.get("last_used") and not created <= day(mem["last_used"]) <= REF:
            err(f"{where}: last_used {mem['last_used']} outside created..{REF}")
        for old in mem.get("supersedes", []):
            if old not in {m["id"] for m in mems}:
                err(f"{where}: supersedes unknown {old}")
    return by_id


def check_ids(labels: dict, by_id: dict) -> None:
    def ids(entry):
        if isinstance(entry, list):
            return entry
        if "pair" in entry:
            return entry["pair"] + ([entry["current"]] if "current" in entry else [])
        return [entry["id"]] if isinstance(entry, dict) else [entry]

    for key, entries in labels.items():
        for entry in entries:
            found = ids(entry)
            for i in found:
                if i not in by_id:
                    err(f"labels.{key}: unknown id {i}")
            pair = entry if isinstance(entry, list) else entry.get("pair") if isinstance(entry, dict) else None
            if pair and (len(pair) != 2 or pair[0] == pair[1]):
                err(f"labels.{key}: bad pair {pair}")


def check_duplicates(labels: dict, by_id: dict) -> collections.Counter:
    kinds = collections.Counter()
    pairs = {frozenset(p) for p in labels["exact"]}
    for a, b in labels["exact"]:
        ma, mb = by_id[a], by_id[b]
        if fold(ma["text"]) != fold(mb["text"]):
            err(f"exact {a} / {b}: texts differ after folding")
        if ma["scope"] != mb["scope"]:
            err(f"exact {a} / {b}: different scopes")
        if all(ma[k] == mb[k] for k in ("shown", "used", "created")):
            err(f"exact {a} / {b}: nothing for a keep rule to choose by")
        kinds[whitespace_kind(ma["text"], mb["text"])] += 1
    groups = collections.defaultdict(list)
    for mem in by_id.values():
        groups[fold(mem["text"])].append(mem["id"])
    for group in groups.values():
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                if frozenset((a, b)) not in pairs:
                    err(f"exact: {a} / {b} fold to the same text but are not labelled")
    near = set()
    for entry in labels["near"]:
        a, b = entry["pair"]
        near.add(frozenset((a, b)))
        if fold(by_id[a]["text"]) == fold(by_id[b]["text"]):
            err(f"near {a} / {b}: exact duplicates, label them as exact")
        if by_id[a]["scope"] != by_id[b]["scope"]:
            err(f"near {a} / {b}: different scopes")
        cross = language(by_id[a]["text"]) != language(by_id[b]["text"])
        if cross != entry["cross_language"]:
            err(f"near {a} / {b}: cross_language {entry['cross_language']} but languages guessed "
                f"{language(by_id[a]['text'])} / {language(by_id[b]['text'])}")
    for a, b in labels["not_duplicate"]:
        if frozenset((a, b)) in pairs | near:
            err(f"not_duplicate {a} / {b} is also labelled a duplicate")
    return kinds


def check_paths(labels: dict, by_id: dict, repo: Path) -> collections.Counter:
    kinds = collections.Counter()
    renames, deleted = history(repo)
    for entry in labels["dead_paths"]:
        mem, path, new = by_id[entry["id"]], entry["path"], entry["renamed_to"]
        where = f"dead {entry['id']} {path}"
        if path not in mem["text"]:
            err(f"{where}: not verbatim in the text")
        if mem["scope"] != "project:shop":
            err(f"{where}: scope {mem['scope']}")
        if (repo / path).exists() or in_head(repo, path):
            err(f"{where}: exists in the project")
        end = path
        while end in renames:
            end = renames[end]
        if new is None:
            kinds["deleted"] += 1
            if end != path or path not in deleted:
                err(f"{where}: history says renamed to {end}" if end != path else f"{where}: never deleted")
        else:
            kinds["renamed"] += 1
            if end != new:
                err(f"{where}: renames end at {end}, labelled {new}")
            if not ((repo / new).is_file() and in_head(repo, new)):
                err(f"{where}: renamed_to {new} does not exist")
            followed = git(repo, "log", "--follow", "-M", "--name-only", "--format=", "--", new)
            if path not in followed.split():
                err(f"{where}: git log --follow {new} does not reach {path}")
    for entry in labels["live_paths"]:
        mem, path = by_id[entry["id"]], entry["path"]
        if path not in mem["text"]:
            err(f"live {entry['id']} {path}: not verbatim in the text")
        if mem["scope"] != "project:shop":
            err(f"live {entry['id']} {path}: scope {mem['scope']}")
        if not ((repo / path).exists() and in_head(repo, path)):
            err(f"live {entry['id']} {path}: does not exist in the project")
    for entry in labels["never_flag"]:
        mem, path = by_id[entry["id"]], entry["path"]
        if path not in mem["text"] or not entry.get("why"):
            err(f"never_flag {entry['id']} {path}: not verbatim in the text, or no why")
        if (repo / path.lstrip("/")).exists():
            err(f"never_flag {entry['id']} {path}: exists in the project (a naive checker would not flag it)")
        kinds["never_flag: " + entry["why"].split(":")[0]] += 1
    labelled = collections.defaultdict(list)
    for key in ("dead_paths", "live_paths", "never_flag"):
        for entry in labels[key]:
            labelled[entry["id"]].append(entry["path"])
    for mem in by_id.values():
        for token in path_tokens(mem["text"]):
            if not any(p in token or token in p for p in labelled[mem["id"]]):
                err(f"{mem['id']}: path-like {token!r} has no dead/live/never_flag label")
    return kinds


def since_last_use(mem: dict) -> int:
    return (REF - day(mem.get("last_used") or mem["created"])).days


def check_decay(labels: dict, by_id: dict) -> None:
    archive = set(labels["archive"])
    proposals = {i for p in labels["exact"] for i in p} | {i for e in labels["near"] for i in e["pair"]} \
        | {e["id"] for e in labels["dead_paths"]} | {i for e in labels["contradictions"] for i in e["pair"]}
    for i in sorted(archive & proposals):
        err(f"archive {i}: also in a duplicate, dead-path or contradiction label")
    for mem in by_id.values():
        half = HALF_LIFE.get(mem["type"])
        if mem["id"] in archive:
            if half is None or since_last_use(mem) <= 2 * half or mem["used"] or mem["shown"] < 5:
                err(f"archive {mem['id']}: type {mem['type']}, {since_last_use(mem)} d, used {mem['used']}, "
                    f"shown {mem['shown']}")
        elif half is not None and since_last_use(mem) > half:
            err(f"{mem['id']}: {mem['type']} {since_last_use(mem)} d past its last use, more than one "
                f"half-life, but not labelled archive")
    for entry in labels["keep"]:
        if entry["id"] in archive or not entry.get("why"):
            err(f"keep {entry['id']}: in archive, or no why")


def check_contradictions(labels: dict, by_id: dict) -> collections.Counter:
    kinds = collections.Counter()
    for entry in labels["contradictions"]:
        (old, new), cur, trap = entry["pair"], entry["current"], entry["trap"]
        mo, mn = by_id[old], by_id[new]
        where = f"contradiction {old} / {new}"
        kinds[trap or "genuine"] += 1
        if mo["scope"] != mn["scope"]:
            err(f"{where}: different scopes")
        if not day(mo["created"]) < day(mn["created"]):
            err(f"{where}: pair is not [older, newer]")
        if cur not in (old, new) or entry["coverage"] not in ("full", "partial"):
            err(f"{where}: current or coverage")
        if trap not in (None, *TRAPS):
            err(f"{where}: unknown trap {trap}")
        expected = {None: (new, "full", True, "supersede"),
                    "one-shared-word": (old, "partial", False, "none"),
                    "rule-vs-event": (old, "partial", True, "none"),
                    "partial-coverage": (old, "partial", True, "none"),
                    "newer-retired": (old, None, True, "review")}[trap]
        got = (cur, entry["coverage"] if expected[1] else None, entry["same_subject"], entry["expect"])
        if got != expected:
            err(f"{where}: labels {got}, expected {expected} for {trap or 'a genuine change'}")
        if trap == "rule-vs-event" and not (mo["type"] == "rule" and mn["type"] != "rule"):
            err(f"{where}: rule-vs-event needs an older rule and a newer non-rule")
    for trap in TRAPS:
        if kinds[trap] < 2:
            err(f"trap {trap}: {kinds[trap]} instances, want at least 2")
    return kinds


def try_import(path: Path, count: int) -> None:
    from hafiza.cli.importer import read_jsonl
    from hafiza.vault.store.vault import Vault

    items, problems = read_jsonl(path)
    with tempfile.TemporaryDirectory() as tmp:
        vault = Vault.init(Path(tmp) / "vault", actor="bench")
        memories, skipped = vault.import_many(items, source="import:curate-bench", skip_invalid=True)
    for problem in problems + skipped:
        err(f"import: {problem}")
    if len(memories) != count:
        err(f"import: {len(memories)} of {count} memories imported")
    for warning in vault.warnings:
        print(f"import warning: {warning}")


def main(argv: list[str]) -> int:
    mems = [json.loads(line) for line in open(HERE / "memories.jsonl", encoding="utf-8") if line.strip()]
    labels = json.loads((HERE / "labels.json").read_text(encoding="utf-8"))
    by_id = check_memories(mems)
    check_ids(labels, by_id)
    if errors:  # later checks index by id
        print("\n".join(errors))
        return 1
    dup_kinds = check_duplicates(labels, by_id)
    with tempfile.TemporaryDirectory() as tmp:
        repo = project.build(Path(tmp))
        head = git(repo, "rev-parse", "HEAD").strip()
        path_kinds = check_paths(labels, by_id, repo)
    check_decay(labels, by_id)
    con_kinds = check_contradictions(labels, by_id)
    if "--import" in argv:
        try_import(HERE / "memories.jsonl", len(mems))

    flagged = {i for p in labels["exact"] for i in p} | {i for e in labels["near"] for i in e["pair"]} \
        | {e["id"] for e in labels["dead_paths"]} | set(labels["archive"]) \
        | {i for e in labels["contradictions"] if e["expect"] != "none" for i in e["pair"]}
    any_label = flagged | {i for key in ("not_duplicate",) for p in labels[key] for i in p} \
        | {e["id"] for key in ("live_paths", "never_flag", "keep") for e in labels[key]} \
        | {i for e in labels["contradictions"] for i in e["pair"]} \
        | {i for e in labels.get("already_superseded", []) for i in e["pair"]}
    langs = collections.Counter(language(m["text"]) for m in mems)
    no_diacritics = sum(1 for m in mems if language(m["text"]) == "tr" and m["text"].isascii())
    rows = [
        ("memories", len(mems)),
        ("  by scope", ", ".join(f"{k} {v}" for k, v in sorted(collections.Counter(m["scope"] for m in mems).items()))),
        ("  by type", ", ".join(f"{k} {v}" for k, v in sorted(collections.Counter(m["type"] for m in mems).items()))),
        ("  by language (guessed)", f"Turkish {langs['tr']} ({no_diacritics} without diacritics), English {langs['en']}"),
        ("  expected to produce no proposal", len(mems) - len(flagged)),
        ("  with no label at all (plain distractors)", len(mems) - len(any_label)),
        ("exact duplicate pairs", f"{len(labels['exact'])}: " + ", ".join(f"{k} {v}" for k, v in sorted(dup_kinds.items()))),
        ("near-duplicate pairs", f"{len(labels['near'])}, of which cross-language "
                                 f"{sum(e['cross_language'] for e in labels['near'])}"),
        ("not-duplicate pairs (similar wording, different facts)", len(labels["not_duplicate"])),
        ("dead paths", f"{len(labels['dead_paths'])}: deleted {path_kinds['deleted']}, renamed or moved {path_kinds['renamed']}"),
        ("live paths (must not be flagged)", f"{len(labels['live_paths'])} in "
                                             f"{len({e['id'] for e in labels['live_paths']})} memories"),
        ("never-flag paths",
         f"{len(labels['never_flag'])} in {len({e['id'] for e in labels['never_flag']})} memories: "
         + ", ".join(f"{k.split(': ', 1)[1]} {v}" for k, v in sorted(path_kinds.items()) if k.startswith("never_flag"))),
        ("archive (decayed, never used)", len(labels["archive"])),
        ("keep (must not be archived)", len(labels["keep"])),
        ("contradiction pairs", f"{len(labels['contradictions'])}: genuine {con_kinds['genuine']}, "
                                + ", ".join(f"{t} {con_kinds[t]}" for t in TRAPS)),
        ("already superseded pairs (resolved; no proposal)", len(labels.get("already_superseded", []))),
        ("fixture project HEAD", head),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    if "--markdown" in argv:
        print("\n| category | count |\n| --- | --- |")
        for key, value in rows:
            print(f"| {key.strip()} | {value} |")
    if errors:
        print(f"\n{len(errors)} errors:")
        print("\n".join(errors))
        return 1
    print("\nok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
