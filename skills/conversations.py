"""Conversation search: the clients' transcripts in their own Whoosh index under .hafiza/conversations/.

Separate from the memories' index (a turn is not a memory and never reaches recall) and rebuildable:
the transcripts are the truth, and `hafiza sessions import` reads them again into an empty folder.
One document per turn. Ranking is plain BM25 over the turn's whole text, with hafiza's Turkish/ASCII
folding and no title or first-words weight: on raw dialogue the memory ranking (hybrid, titles made
from the first words) did worse than plain BM25 (issue 14: hit@5 0.34 against 0.47), because the
embedder ranks every question near every question. Secrets are masked with the write guard's own
scanner before a turn reaches the index, so nothing secret is stored there.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from typing import NamedTuple

from hafiza.indexer.search import query_terms
from hafiza.indexer.text import terms
from hafiza.vault.errors import HafizaError
from hafiza.vault.files import atomic_write
from hafiza.vault.store.lock import locked
from hafiza.vault.format.paths import SIDECAR
from hafiza.vault.guard.secrets import mask

from . import transcripts
from .transcripts import Turn

FOLDER = "conversations"   # in .hafiza/: index/ and state.json
VERSION = 1                # bump when fields or analysis change: the index is rebuilt from the transcripts
BATCH = 2000               # turns per index commit on a long import
CONTEXT_LINES = 3


class Report(NamedTuple):
    files: int      # transcripts that had something new
    turns: int      # turns indexed
    redacted: int   # turns in which a secret was masked


class Result(NamedTuple):
    session: str
    client: str
    project: str
    role: str
    time: str
    score: float
    context: list[str]
    key: str

    def to_json(self) -> dict:
        return {**self._asdict(), "score": round(self.score, 4)}


class SessionNotFound(HafizaError):
    exit_code = 3  # as MemoryNotFound


# The shortest start of a session id `show` takes, as git's shortest abbreviated commit. Four hex digits of a
# UUID are 65,536 values: a few hundred sessions share one now and then, and the error then lists them.
PREFIX_CHARS = 4


def schema():
    from whoosh.fields import ID, NUMERIC, STORED, TEXT, Schema

    from hafiza.indexer.analyzer import analyzer

    return Schema(key=ID(stored=True, unique=True), session=ID(stored=True), client=ID(stored=True),
                  project=ID(stored=True), role=ID(stored=True), time=ID(stored=True), source=ID,
                  pos=NUMERIC(stored=True, bits=64, signed=False), text=TEXT(analyzer=analyzer(), phrase=False),
                  shown=STORED)


class Conversations:
    """The conversation index of the vault at `root`."""

    def __init__(self, root: Path):
        self.folder = Path(root) / SIDECAR / FOLDER
        self.dir, self.state_path = self.folder / "index", self.folder / "state.json"
        self.touched: set[str] = set()  # sessions that got new turns through this object

    # ---- state: how far each transcript was read

    def _state(self) -> dict:
        try:
            state = json.loads(self.state_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {"version": VERSION, "files": {}}
        return state if isinstance(state, dict) and state.get("version") == VERSION else {"version": VERSION, "files": {}}

    def _save(self, state: dict) -> None:
        atomic_write(self.state_path, json.dumps(state, ensure_ascii=False), fsync=False)

    def _open(self, create: bool = False):
        from whoosh import index as windex

        if windex.exists_in(str(self.dir)):
            try:
                return windex.open_dir(str(self.dir))
            except Exception:  # damaged: it is only derived data
                if not create:
                    return None
        elif not create:
            return None
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.state_path.unlink(missing_ok=True)  # the offsets described the index just dropped
        return windex.create_in(str(self.dir), schema())

    # ---- writing

    def ingest(self, found: list[tuple[str, Path]], since: dt.date | None = None, progress=None) -> Report:
        """Read what is new in each (client, path) into the index: one lock, one commit per BATCH turns."""
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        with locked(self.folder / "lock", what="conversation index"):
            ix = self._open(create=True)
            state = self._state()
            files = turns = redacted = 0
            pending: dict[str, dict] = {}
            writer = None
            for done, (client, path) in enumerate(found, 1):
                new, reset = self._read(client, path, state["files"])
                if since is not None:
                    new = [t for t in new if t.time[:10] >= since.isoformat()]
                if new or reset:
                    files += 1
                    writer = writer or ix.writer()
                    if reset:
                        writer.delete_by_term("source", str(path))
                self.touched.update(turn.session for turn in new)
                for turn in new:
                    doc = document(turn, str(path))
                    redacted += doc.pop("_redacted")
                    pending[turn.key] = doc
                if len(pending) >= BATCH or (pending and done == len(found)):
                    turns += _write(writer, pending)
                    writer.commit()
                    self._save(state)
                    pending, writer = {}, None
                if progress:
                    progress(done, len(found), "reading transcripts")
            if writer is not None:
                writer.commit()
            self._save(state)
            return Report(files, turns, redacted)

    def drain(self, spool: Path, where: dict[str, Path]) -> Report:
        """Ingest the transcripts that sessions named as they ended or compacted (the hooks' spool, from
        where the last drain stopped) and what is new in opencode's database."""
        from .sources import client_of

        start = self._state().get("spool", 0)
        try:
            events, end = transcripts.read_lines(spool, start if spool.stat().st_size >= start else 0)
        except OSError:  # no session has ended yet
            events, end = [], 0
        # opencode tells of no session end: its database is read whenever the spool is (from its last update)
        found: dict[Path, str] = {where["opencode"]: "opencode"} if where.get("opencode") else {}
        for _, event in events:
            client, named = event.get("client"), event.get("transcript")
            if client in transcripts.JSONL_READERS and isinstance(named, str) and named.endswith(".jsonl"):
                path = Path(named)
                found[path] = client_of(path, where) or client
        report = self.ingest([(client, path) for path, client in found.items() if path.is_file()])
        with locked(self.folder / "lock", what="conversation index"):
            state = self._state()
            state["spool"] = end
            self._save(state)
        return report

    def _read(self, client: str, path: Path, files: dict) -> tuple[list[Turn], bool]:
        """New turns of one transcript, and whether it was rewritten (shorter than what was read)."""
        key = str(path)
        entry = files.get(key) or {"client": client}
        try:
            size = path.stat().st_size
        except OSError:
            return [], False
        reset = client != "opencode" and size < entry.get("offset", 0)
        if reset:
            entry = {"client": client}
        if client != "opencode" and size == entry.get("offset", 0):
            return [], False  # nothing new: not even opened
        try:
            new = transcripts.read(client, path, entry, size)
        except transcripts.UNREADABLE:
            return [], False  # unreadable now (being replaced, locked, not a transcript): the next run retries
        files[key] = entry
        return new, reset

    # ---- reading

    def search(self, query: str, project: str | None = None, since: dt.date | None = None,
               limit: int = 10) -> list[Result]:
        """Turns that match QUERY best, by BM25 over their text."""
        from whoosh import query as Q
        from whoosh.scoring import BM25F

        ix = self._open()
        words = query_terms(query) or list(dict.fromkeys(terms(query)))
        if ix is None or not words:
            return []
        conditions = []
        if project:
            conditions.append(Q.Term("project", project))
        if since:
            conditions.append(Q.TermRange("time", since.isoformat(), None))
        with ix.searcher(weighting=BM25F()) as searcher:
            hits = searcher.search(Q.Or([Q.Term("text", w) for w in words]), limit=limit,
                                   filter=Q.And(conditions) if conditions else None)
            return [Result(h["session"], h["client"], h["project"], h["role"], h["time"], h.score,
                           context(h["shown"], words), h["key"]) for h in hits]

    def show(self, session: str) -> list[Turn]:
        """Every indexed turn of one session (its id, or the start of just one id, of at least PREFIX_CHARS
        characters), in order."""
        from whoosh import query as Q

        ix = self._open()
        if ix is None:
            raise SessionNotFound("no conversations indexed yet; run `hafiza sessions import`")
        with ix.searcher() as searcher:
            docs = [d for d in searcher.documents(session=session)]
            if not docs and len(session) >= PREFIX_CHARS:
                ids = sorted({d["session"] for d in searcher.search(Q.Prefix("session", session), limit=None)})
                if len(ids) > 1:
                    more = f" (and {len(ids) - 5} more)" if len(ids) > 5 else ""
                    raise SessionNotFound(f"{session!r} is the start of {len(ids)} sessions: {', '.join(ids[:5])}"
                                          f"{more}; give more of the id")
                docs = [d for d in searcher.documents(session=ids[0])] if ids else []
        if not docs:
            short = f" (the start of an id needs {PREFIX_CHARS} characters)" if len(session) < PREFIX_CHARS else ""
            raise SessionNotFound(f"no session {session!r} in the conversation index{short}")
        turns = [Turn(d["key"], d["client"], d["session"], d["project"], d["role"], d["time"], d["pos"], d["shown"])
                 for d in docs]
        return sorted(turns, key=lambda t: (t.time, t.pos))

    def sessions(self, since: dt.date | None = None) -> dict[str, int]:
        """Each indexed session (with a turn on or after `since`) and how many turns it has."""
        from collections import Counter

        ix = self._open()
        if ix is None:
            return {}
        day = since.isoformat() if since else ""
        with ix.searcher() as searcher:
            turns = [(d["session"], d["time"]) for d in searcher.documents()]
        recent = {session for session, time in turns if time >= day}
        return {k: v for k, v in Counter(session for session, _ in turns).items() if k in recent}

    def count(self) -> int:
        ix = self._open()
        return ix.doc_count() if ix is not None else 0


def document(turn: Turn, source: str) -> dict:
    """The index document of a turn, its secrets masked (`_redacted`: whether any were)."""
    text = mask(turn.text)
    return {"key": turn.key, "session": turn.session, "client": turn.client, "project": turn.project,
            "role": turn.role, "time": turn.time, "source": source, "pos": max(0, int(turn.pos)),
            "text": text, "shown": text, "_redacted": text != turn.text}


def _write(writer, docs: dict[str, dict]) -> int:
    for doc in docs.values():
        writer.update_document(**doc)
    return len(docs)


def context(text: str, words: list[str], lines: int = CONTEXT_LINES, width: int = 200) -> list[str]:
    """A few lines of `text` around the query's words: those holding most of them, in their order."""
    rows = [row.strip() for row in text.splitlines() if row.strip()]
    wanted = set(words)
    scored = sorted(range(len(rows)), key=lambda i: -len(wanted.intersection(terms(rows[i]))))[:lines]
    return [_cut(rows[i], wanted, width) for i in sorted(scored)]


def _cut(row: str, wanted: set[str], width: int) -> str:
    """`row` in at most `width` characters, starting a little before its first matching word."""
    if len(row) <= width:
        return row
    start = 0
    for at, word in enumerate(row.split()):
        if wanted.intersection(terms(word)):
            start = max(0, len(" ".join(row.split()[:at])) - 40)
            break
    return ("…" if start else "") + row[start:start + width].strip() + "…"
