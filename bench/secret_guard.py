"""How many passwords as people type them does the secret guard keep out of git on each write path, how many
look-alikes does it refuse by mistake, and does a scan stay linear on adversarial megabytes?

    python bench/secret_guard.py [--save] [--baseline REV]

- corpora: tests/secrets_heldout.py (issue 29: 119 secrets as people type them, on command lines, in
  connection strings, in TR and EN assignments and in .env, YAML, JSON, INI, TOML and docker-compose files;
  82 look-alikes; 30 and 20 of them written after the guard was done), tests/secrets_corpus.py (the first
  corpus: token formats, keys, split and hidden tokens) and tests/secrets_labels.py (passwords and PINs
  after a short label, `pw: …`, `pin: …`, `şifre olarak …`, and the prose and placeholders around them);
- write paths: tests/secret_writes.py, each in a fresh git vault: remember, update, edit, import, the MCP
  `remember` and `update` tools through the real SDK client, a hand edit recorded as "record manual edits",
  an episode's lesson, a fact's value, capture (said in a session, filed with auto-accept), aliases, the
  MCP `add_aliases` and `set_fact` tools;
- false positives on team notes: `scan` over every text of the recall, curate, related and verify sets
  (memories, titles, tags, aliases, prompts), 5,000 memories and 3,000 queries tests/gen.py makes, and the
  docs' paragraphs; with --baseline, the same at REV (a frozen copy of its code), and what is flagged now
  and was not then, each text shown;
- refused: the write raised SecretRefused (capture: the statement was skipped); kept out: the secret's value
  is nowhere in `git log -p --all` afterwards; a false positive: a look-alike refused;
- linear time: `scan` on 30 adversarial 1 MB texts (tests/test_secrets.py checks the patterns themselves;
  these are the timings), the median of 3 runs each.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import os
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import log, machine, save  # noqa: E402  (also puts tests/ on the path)

import secret_writes  # noqa: E402
import secrets_corpus  # noqa: E402
import secrets_heldout  # noqa: E402
import secrets_labels  # noqa: E402

MB = 1_000_000


def _repeat(unit: str) -> str:
    return (unit * (MB // len(unit) + 1))[:MB]


ADVERSARIAL = {
    "a": "a" * MB, "dashes": "-" * MB, "a-": _repeat("a-"), "password=": _repeat("password="),
    "password: ": _repeat("password: "), "şifre ": _repeat("şifre "),
    "base64": base64.b64encode(random.Random(3).randbytes(MB * 3 // 4)).decode(),
    "sk-": _repeat("sk-"), "eyJ-": _repeat("eyJ-"), "a://": _repeat("a://b:"), "ghp_": _repeat("ghp_"),
    "BEGIN": _repeat("-----BEGIN " + "RSA PRIVATE KEY-----\n"), "wrapped": _repeat("ghp_ab \\\n  "),
    "spaces": _repeat("a    "), "zero-width": _repeat("a\u200b"), "digits:": _repeat("12345678:"),
    "AC": _repeat("AC" + "0" * 32 + " "), "short lines": "ghp_ " + _repeat("a\n"),
    "Authorization": _repeat("Authorization: Bearer "), "data:": _repeat("data:image/png;base64,"),
    "docker login": _repeat("docker login -u a "), "mysql -p": _repeat("mysql -p"), "curl -u": _repeat("curl -u a:"),
    "user:pw@": _repeat("a:bcd@"), "password x is": _repeat("password x is "), "open quote": _repeat("token='a"),
    "%3D": _repeat("%3Dghp_"), "tilde": _repeat("a~"), "htpasswd": _repeat("htpasswd -b a "),
    "echo |": _repeat("echo a |"),
    # The short labels: a match on every one, each value read (a PIN's digits, `olarak` before a value).
    "pw: ": _repeat("pw: "), "pin: 4821 ": _repeat("pin: 4821 "), "şifre olarak ": _repeat("şifre olarak "),
}


def _vault(folder: Path):
    from hafiza.vault.store.vault import Vault

    return Vault.init(folder)


def through(path: str, secrets: list[tuple[str, str, str]], lookalikes: list[tuple[str, str]]) -> dict:
    """One write path on a fresh vault: what it refused, what reached git, what it refused by mistake."""
    write = secret_writes.PATHS[path]
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:  # the MCP server may still write
        vault = _vault(Path(tmp) / "vault")
        refused = write(vault, [text for _, text, _ in secrets])
        log_text = secret_writes.history(vault.root)
        leaked = [name for name, _, value in secrets if value in log_text]
        wrong = write(vault, [text for _, text in lookalikes])
    return {"refused": sum(refused), "kept_out": len(secrets) - len(leaked), "total": len(secrets),
            "leaked": leaked, "not_refused": [name for (name, _, _), r in zip(secrets, refused) if not r],
            "false_positives": [name for (name, _), r in zip(lookalikes, wrong) if r], "lookalikes": len(lookalikes)}


def linear() -> dict:
    from hafiza.vault.guard.secrets import scan

    out = {}
    for name, text in ADVERSARIAL.items():
        times = []
        for _ in range(3):
            started = time.perf_counter()
            scan(text)
            times.append(time.perf_counter() - started)
        out[name] = round(statistics.median(times), 3)
        log(f"  {name}: {out[name]} s")
    return out


def first_corpus() -> tuple[list, list]:
    """secrets_corpus.py in the held-out corpus's shape (name, text, value)."""
    secrets = [(name, text, secrets_corpus.SECRET_VALUES[name]) for name, text in secrets_corpus.SECRETS]
    return secrets, secrets_corpus.LOOKALIKES


NOTE_KEYS = ("text", "title", "query", "question", "tags", "aliases", "history", "note")
# A word the guard reads as a password's label: how many notes the new key words could misread.
LABEL_WORD = r"(?i)(?<!\w)(?:pw|pwd|passw\w*|pass|passphrase|pin|[şs]ifre\w*|parola\w*)(?!\w)"


def team_notes() -> list[tuple[str, str]]:
    """(where, text) for every text a team writes or asks that the benchmarks hold (see the docstring)."""
    import json

    import gen

    notes = []
    for path in sorted(HERE.glob("recall/**/*.jsonl")) + sorted(HERE.glob("*/memories.jsonl")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            item = json.loads(line)
            for key in NOTE_KEYS:
                values = item.get(key) if isinstance(item.get(key), list) else [item.get(key)]
                notes += [(f"{path.relative_to(HERE)}:{n}:{key}", v) for v in values if isinstance(v, str) and v]
    for n, item in enumerate(gen.memories(5000), 1):
        notes += [(f"gen:{n}:{key}", v) for key in ("title", "text") for v in [item[key]]]
        notes += [(f"gen:{n}:aliases", v) for v in item.get("aliases") or []]
    notes += [(f"gen query {n}", q) for n, q in enumerate(gen.queries(3000), 1)]
    docs = sorted((HERE.parent / "docs").glob("**/*.md")) + [HERE.parent / "README.md", HERE.parent / "CHANGELOG.md"]
    for path in docs:
        paragraphs = path.read_text(encoding="utf-8").split("\n\n")
        notes += [(f"{path.relative_to(HERE.parent)} ¶{n}", p) for n, p in enumerate(paragraphs, 1) if p.strip()]
    return notes


def flagged() -> dict:
    """What `scan` (the code on the path) refuses and warns about in the team notes, and how many of the labelled
    passwords it finds."""
    from hafiza.vault.guard.secrets import scan

    notes, refused, warned = team_notes(), {}, {}
    for where, text in notes:
        found = scan(text)
        if found.secrets:
            refused[where] = {"kinds": found.secrets, "text": text[:300]}
        elif found.examples:
            warned[where] = {"kinds": found.examples, "text": text[:300]}
    labels = [name for name, text, _ in secrets_labels.SECRETS if scan(text).secrets]
    labelled = sum(bool(re.search(LABEL_WORD, text)) for _, text in notes)
    return {"texts": len(notes), "labelled": labelled, "refused": refused, "warned": warned, "labels_found": labels}


def at_commit(rev: str) -> dict:
    """`flagged` with the guard as it was at `rev`: a frozen copy of its code, in a child process."""
    import json
    import subprocess

    from common import snapshot

    with tempfile.TemporaryDirectory() as tmp:
        sha = snapshot(rev, Path(tmp) / "code")
        out = Path(tmp) / "flagged.json"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(tmp) / "code"), os.environ.get("PYTHONPATH", "")])}
        subprocess.run([sys.executable, __file__, "--flagged", str(out)], env=env, check=True)
        return {"commit": sha, **json.loads(out.read_text())}


def _notes_markdown(now: dict, then: dict | None) -> list[str]:
    lines = ["## False positives on team notes", "",
             f"`scan` over {now['texts']:,} texts (bench/recall, curate, related and verify: memories, titles, tags, "
             "aliases, prompts; 5,000 memories and 3,000 queries from tests/gen.py; the docs' paragraphs); "
             f"{now['labelled']:,} of them hold a word the guard reads as a password's label (pw, pass, pin, "
             "şifre...).",
             "",
             "| code | refused | warned (example or placeholder) | labelled passwords found |", "|---|---|---|---|"]
    for name, r in ([("baseline " + then["commit"], then)] if then else []) + [("now", now)]:
        lines.append(f"| {name} | {len(r['refused'])} | {len(r['warned'])} | {len(r['labels_found'])} / "
                     f"{len(secrets_labels.SECRETS)} |")
    for title, key in (("Refused now", "refused"), ("Warned now", "warned")):
        fresh = {w: x for w, x in now[key].items() if not then or w not in then[key]}
        label = f"{title}, not at the baseline" if then else title
        lines += ["", f"{label}: {len(fresh)}", ""]
        lines += [f"- `{where}` ({', '.join(x['kinds'])}): {x['text'][:160]!r}" for where, x in fresh.items()]
    return lines


def markdown(r: dict) -> str:
    held, first = r["heldout"], r["first"]
    lines = [f"# The secret guard on every write path, {r['date']}", "",
             f"`{r.get('command', 'python bench/secret_guard.py --save')}`, on {r['machine']['cpu']} "
             f"({r['machine']['nproc']} cores, "
             f"load {r['machine']['loadavg_1m']}), commit {r['machine']['commit']}.", "",
             "## Passwords as people type them (tests/secrets_heldout.py)", "",
             "| write path | refused / secrets | kept out of git | false positives / look-alikes |",
             "|---|---|---|---|"]
    for path, x in held.items():
        lines.append(f"| {path} | {x['refused']} / {x['total']} | {x['kept_out']} / {x['total']} "
                     f"| {len(x['false_positives'])} / {x['lookalikes']} |")
    lines += ["", "Capture refuses only what reads as a statement (`Remember this: …`); a config file pasted "
              "after the cue is not one, so it is neither refused nor written.", "",
              "Known misses (tests/secrets_heldout.py `KNOWN_MISSES`, pinned by tests/test_secrets.py):", ""]
    lines += [f"- `{name}`: {why}" for name, why in secrets_heldout.KNOWN_MISSES.items()]
    lines += ["", "## The first corpus (tests/secrets_corpus.py: token formats, keys, split and hidden tokens)", "",
              "| write path | refused / secrets | kept out of git | false positives / look-alikes |", "|---|---|---|---|"]
    for path, x in first.items():
        lines.append(f"| {path} | {x['refused']} / {x['total']} | {x['kept_out']} / {x['total']} "
                     f"| {len(x['false_positives'])} / {x['lookalikes']} |")
    lines += ["", "## Passwords and PINs after a short label (tests/secrets_labels.py)", "",
              "| write path | refused / secrets | kept out of git | false positives / look-alikes |",
              "|---|---|---|---|"]
    for path, x in r["labels"].items():
        lines.append(f"| {path} | {x['refused']} / {x['total']} | {x['kept_out']} / {x['total']} "
                     f"| {len(x['false_positives'])} / {x['lookalikes']} |")
    lines += ["", "What reached git or was refused by mistake, by name:", ""]
    for corpus, results in (("held-out", held), ("first", first), ("labels", r["labels"])):
        for path, x in results.items():
            if x["leaked"] or x["false_positives"]:
                lines.append(f"- {corpus} corpus, {path}: in git {x['leaked'] or 'none'}; look-alikes refused "
                             f"{x['false_positives'] or 'none'}")
    lines += [""] + _notes_markdown(r["notes"], r.get("baseline"))
    lines += ["", "## Linear time: `scan` on adversarial 1 MB texts (median of 3, seconds)", "",
              "| text | s |", "|---|---|"]
    lines += [f"| `{name!r}` | {s} |" for name, s in r["linear"].items()]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--save", action="store_true", help="write bench/results/NAME-<date>.{json,md}")
    parser.add_argument("--name", default="secrets", help="the results' name (default: secrets)")
    parser.add_argument("--paths", nargs="*", default=list(secret_writes.PATHS), help="only these write paths")
    parser.add_argument("--render", metavar="JSON", help="only write the markdown again from a saved report")
    parser.add_argument("--baseline", metavar="REV", help="also scan the team notes with the guard at REV")
    parser.add_argument("--flagged", metavar="JSON", help=argparse.SUPPRESS)  # at_commit's child process
    args = parser.parse_args(argv)
    if args.flagged:
        import json

        Path(args.flagged).write_text(json.dumps(flagged(), ensure_ascii=False))
        return
    if args.render:
        import json

        report = json.loads(Path(args.render).read_text())
        save(args.name, report["date"], report, markdown(report))
        return
    # The guard is what is measured: the deterministic embedder keeps the MCP server from loading a model.
    os.environ.setdefault("HAFIZA_EMBEDDER", "hash")
    os.environ.setdefault("GIT_AUTHOR_NAME", "bench")
    os.environ.setdefault("GIT_AUTHOR_EMAIL", "bench@example.com")
    os.environ.setdefault("GIT_COMMITTER_NAME", "bench")
    os.environ.setdefault("GIT_COMMITTER_EMAIL", "bench@example.com")
    report = {"date": dt.date.today().isoformat(), "machine": machine(), "heldout": {}, "first": {}, "labels": {},
              "command": " ".join(["python bench/secret_guard.py", *(sys.argv[1:] if argv is None else argv)])}
    for path in args.paths:
        log(f"{path}: held-out corpus")
        report["heldout"][path] = through(path, secrets_heldout.SECRETS, secrets_heldout.LOOKALIKES)
        log(f"{path}: first corpus")
        report["first"][path] = through(path, *first_corpus())
        log(f"{path}: labelled passwords")
        report["labels"][path] = through(path, secrets_labels.SECRETS, secrets_labels.LOOKALIKES)
    log("team notes")
    report["notes"] = flagged()
    if args.baseline:
        log(f"team notes at {args.baseline}")
        report["baseline"] = at_commit(args.baseline)
    log("linear time")
    report["linear"] = linear()
    text = markdown(report)
    print(text)
    if args.save:
        save(args.name, report["date"], report, text)


if __name__ == "__main__":
    main()
