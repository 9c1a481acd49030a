"""Does conversation search beat plain BM25 on multi-session dialogue with known answers (TR and EN)?

    python bench/sessions.py [--save]

bench/sessions/dialogues.py is written out as the four clients' own transcript files (Claude Code,
Codex and Gemini CLI JSONL, opencode's SQLite tables) in a temporary HOME, read by the real importer
(`hafiza.skills`), and each question is asked of:

- conversation search: `Conversations.search`, BM25 over each turn with hafiza's folding;
- plain BM25: the textbook formula (k1 1.2, b 0.75) over the same turns, words split with
  `str.lower()` and `\\w+`, no folding and no stop words.

A question is a hit at k when one of the first k turns is either turn of the exchange that answers it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import re
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "sessions")]

from common import save  # noqa: E402
from dialogues import FILLER, SESSIONS  # noqa: E402

OPENCODE_SCHEMA = HERE.parent / "tests" / "fixtures" / "sessions" / "home" / ".local" / "share" / "opencode" / "opencode.sql"
TURKISH = re.compile(r"[çğıöşüÇĞİÖŞÜ]")


def exchanges(facts: list) -> list[tuple[str, str, str | None]]:
    """A session's exchanges: two filler exchanges before each fact, as real sessions go."""
    out = []
    for n, fact in enumerate(facts):
        out += [(*FILLER[(2 * n + i + len(facts)) % len(FILLER)], None) for i in range(2)] + [fact]
    return out


def stamp(day: str, minute: int) -> str:
    return f"{day}T10:{minute // 60:02d}:{minute % 60:02d}.000Z"


def write_home(home: Path) -> list[dict]:
    """Every session in its client's format under `home`; the questions with their answers' texts."""
    questions, opencode_rows = [], []
    for number, (client, project, day, facts) in enumerate(SESSIONS):
        session = f"{number:04d}aaaa-bench-4000-8000-{client.replace('-', '')[:6]:0<12}"[:36]
        turns = []
        for user, assistant, question in exchanges(facts):
            turns += [("user", user), ("assistant", assistant)]
            if question:
                questions.append({"question": question, "session": session, "answers": [user, assistant],
                                  "language": "tr" if TURKISH.search(user) else "en", "client": client})
        cwd = f"/home/dev/{project}"
        if client == "opencode":
            opencode_rows.append((session, cwd, day, turns))
            continue
        path, lines = WRITERS[client](home, session, cwd, day, turns)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    _opencode(home, opencode_rows)
    return questions


def _claude(home, session, cwd, day, turns):
    path = home / ".claude" / "projects" / cwd.replace("/", "-") / f"{session}.jsonl"
    return path, [{"type": role, "message": {"role": role, "content": text if role == "user" else
                                             [{"type": "text", "text": text}]},
                   "uuid": f"{session}-{i}", "timestamp": stamp(day, i), "cwd": cwd, "sessionId": session}
                  for i, (role, text) in enumerate(turns)]


def _codex(home, session, cwd, day, turns):
    path = home / ".codex" / "sessions" / day.replace("-", "/") / f"rollout-{day}T10-00-00-{session}.jsonl"
    kinds = {"user": "input_text", "assistant": "output_text"}
    return path, [{"timestamp": stamp(day, 0), "type": "session_meta", "payload": {"id": session, "cwd": cwd}}] + [
        {"timestamp": stamp(day, i), "type": "response_item",
         "payload": {"type": "message", "role": role, "content": [{"type": kinds[role], "text": text}]}}
        for i, (role, text) in enumerate(turns)]


def _gemini(home, session, cwd, day, turns):
    path = home / ".gemini" / "tmp" / Path(cwd).name / "chats" / f"session-{day}T10-00-{session[:8]}.jsonl"
    return path, [{"sessionId": session, "startTime": stamp(day, 0), "kind": "main"}] + [
        {"id": f"{session}-{i}", "timestamp": stamp(day, i), "type": "user" if role == "user" else "gemini",
         "content": [{"text": text}] if role == "user" else text} for i, (role, text) in enumerate(turns)]


WRITERS = {"claude-code": _claude, "codex": _codex, "gemini": _gemini}


def _opencode(home: Path, sessions: list) -> None:
    """opencode's own tables (the schema recorded from opencode 1.18), one row per session, message and part."""
    db = home / ".local" / "share" / "opencode" / "opencode.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    schema = [s + ";" for s in OPENCODE_SCHEMA.read_text(encoding="utf-8").split(";") if "CREATE TABLE" in s]
    with sqlite3.connect(db) as con:
        con.executescript("\n".join(schema))
        for session, cwd, day, turns in sessions:
            start = int(dt.datetime.fromisoformat(day + "T10:00:00+00:00").timestamp() * 1000)
            con.execute("INSERT INTO session (id, project_id, slug, directory, title, version, time_created, "
                        "time_updated) VALUES (?, 'p', 's', ?, 't', '1.18.33', ?, ?)", (session, cwd, start, start))
            for i, (role, text) in enumerate(turns):
                at = start + i * 60_000
                con.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                            (f"msg_{session}_{i:03d}", session, at, at, json.dumps({"role": role})))
                con.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                            (f"prt_{session}_{i:03d}", f"msg_{session}_{i:03d}", session, at, at,
                             json.dumps({"type": "text", "text": text})))


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


class PlainBM25:
    """Okapi BM25 with the textbook defaults over (key, text) documents."""

    def __init__(self, docs: dict[str, str], k1: float = 1.2, b: float = 0.75):
        self.k1, self.b = k1, b
        self.tf = {key: Counter(words(text)) for key, text in docs.items()}
        self.length = {key: sum(tf.values()) for key, tf in self.tf.items()}
        self.avg = sum(self.length.values()) / max(1, len(self.length))
        df = Counter(w for tf in self.tf.values() for w in tf)
        n = len(self.tf)
        self.idf = {w: math.log(1 + (n - d + 0.5) / (d + 0.5)) for w, d in df.items()}

    def search(self, query: str, limit: int) -> list[str]:
        scores = Counter()
        for w in set(words(query)):
            for key, tf in self.tf.items():
                if w in tf:
                    f = tf[w]
                    norm = self.k1 * (1 - self.b + self.b * self.length[key] / self.avg)
                    scores[key] += self.idf.get(w, 0.0) * f * (self.k1 + 1) / (f + norm)
        return [key for key, _ in scores.most_common(limit)]


def rate(ranked: dict[str, list[bool]]) -> dict:
    """hit@1 and hit@5 of one system, overall and by language."""
    out = {}
    for label, hits in ranked.items():
        out[label] = {"n": len(hits), "hit@1": round(sum(h[0] for h in hits) / len(hits), 3),
                      "hit@5": round(sum(any(h[:5]) for h in hits) / len(hits), 3)}
    return out


def run() -> dict:
    from hafiza.skills import sources
    from hafiza.skills.conversations import Conversations

    with tempfile.TemporaryDirectory() as tmp:
        home, vault = Path(tmp) / "home", Path(tmp) / "vault"
        questions = write_home(home)
        conversations = Conversations(vault)
        started = time.perf_counter()
        report = conversations.ingest(sources.files(sources.locations({"HOME": str(home)})))
        import_s = time.perf_counter() - started
        with conversations._open().searcher() as searcher:
            docs = {d["key"]: (d["session"], d["shown"]) for d in searcher.documents()}
        plain = PlainBM25({key: text for key, (_, text) in docs.items()})
        systems = {"conversation search": {}, "plain BM25": {}}
        per_question, times = [], []
        for q in questions:
            started = time.perf_counter()
            found = [r.key for r in conversations.search(q["question"], limit=5)]
            times.append(time.perf_counter() - started)
            ranked = {"conversation search": found, "plain BM25": plain.search(q["question"], 5)}
            row = {"question": q["question"], "language": q["language"]}
            for name, keys in ranked.items():
                hits = [docs[k][0] == q["session"] and docs[k][1] in q["answers"] for k in keys]
                hits += [False] * (5 - len(hits))
                for label in ("all", q["language"]):
                    systems[name].setdefault(label, []).append(hits)
                row[name] = next((i + 1 for i, h in enumerate(hits) if h), None)
            per_question.append(row)
    return {"date": dt.date.today().isoformat(), "sessions": len(SESSIONS), "turns": report.turns,
            "questions": len(questions), "clients": sorted({c for c, *_ in SESSIONS}),
            "import_s": round(import_s, 3), "search_ms_median": round(sorted(times)[len(times) // 2] * 1000, 2),
            "results": {name: rate(hits) for name, hits in systems.items()}, "per_question": per_question}


def markdown(r: dict) -> str:
    lines = [f"# Conversation search, {r['date']}", "",
             f"`python bench/sessions.py --save`: {r['sessions']} sessions of the four clients "
             f"({', '.join(r['clients'])}) written in their own formats, {r['turns']} turns, "
             f"{r['questions']} questions with known answers (bench/sessions/dialogues.py).", "",
             "| system | questions | hit@1 | hit@5 | TR hit@5 | EN hit@5 |", "|---|---|---|---|---|---|"]
    for name, by in r["results"].items():
        lines.append(f"| {name} | {by['all']['n']} | {by['all']['hit@1']} | {by['all']['hit@5']} | "
                     f"{by['tr']['hit@5']} ({by['tr']['n']}) | {by['en']['hit@5']} ({by['en']['n']}) |")
    lines += ["", f"Import of all transcripts: {r['import_s']} s; a search: {r['search_ms_median']} ms (median).", "",
              "Questions either system missed at 5 (rank of the answer, `-` for none):", "",
              "| question | conversation search | plain BM25 |", "|---|---|---|"]
    for row in r["per_question"]:
        if not row["conversation search"] or not row["plain BM25"]:
            lines.append(f"| {row['question']} | {row['conversation search'] or '-'} | {row['plain BM25'] or '-'} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--save", action="store_true", help="write bench/results/sessions-<date>.{json,md}")
    args = parser.parse_args(argv)
    result = run()
    print(markdown(result))
    if args.save:
        save("sessions", result["date"], result, markdown(result))


if __name__ == "__main__":
    main()
