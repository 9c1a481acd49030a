"""The episode log: what happened on a task and how it went, appended to episodes/YYYY-MM.jsonl.

Episodes are events, not memories: they are never recalled on the prompt
path. A lesson drawn from one is a memory (type `lesson`, source
`episode:<id>`), written in the same commit as the episode line so the two
never drift apart.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from .guard import secrets
from .errors import HafizaError, SecretRefused
from .files import FILE_MODE, kind, read_regular
from .format.model import Memory

EPISODES = "episodes"
OUTCOMES = ("success", "failure", "partial")
MAX_CHARS = 20_000  # an episode is a note, not a transcript
MAX_LOG_BYTES = 64 << 20  # one month's log


@dataclass
class Episode:
    id: str
    time: str
    task: str
    outcome: str
    what_happened: str
    actor: str
    lesson_id: str | None = None

    def to_json(self) -> dict:
        data = asdict(self)
        if data["lesson_id"] is None:
            del data["lesson_id"]
        return data


def log_path(root: Path, when: dt.datetime) -> Path:
    return Path(root) / EPISODES / f"{when:%Y-%m}.jsonl"


def _text(value, field: str, required: bool = True) -> str:
    value = (value or "").strip()
    if required and not value:
        raise HafizaError(f"{field} is empty", field=field)
    if len(value) > MAX_CHARS:
        raise HafizaError(f"{field} is {len(value)} characters; keep it under {MAX_CHARS}", field=field)
    try:
        secrets.check(value, field)
    except SecretRefused as exc:
        exc.field = field  # name the input that held it, not the generic "text"
        raise
    return value


def new_id(when: dt.datetime) -> str:
    return f"ep-{when:%Y%m%d-%H%M%S}-{os.urandom(2).hex()}"


def record(vault, task: str, outcome: str, what_happened: str, lesson: str | None = None, *,
           scope: str | None = None, now: dt.datetime | None = None) -> tuple[Episode, Memory | None]:
    """Append one episode (and write its lesson memory, if any) as one commit.

    Everything is validated and secret-checked before anything is written;
    if the commit fails (or the process dies), the log and the lesson file are put back as they were.
    """
    task = _text(task, "task")
    what_happened = _text(what_happened, "what_happened")
    outcome = (outcome or "").strip().lower()
    if outcome not in OUTCOMES:
        raise HafizaError(f"unknown outcome {outcome!r}; use one of {', '.join(OUTCOMES)}", field="outcome")
    lesson = _text(lesson, "lesson", required=False) or None
    when = (now or dt.datetime.now()).astimezone()
    episode = Episode(id=new_id(when), time=when.isoformat(timespec="seconds"), task=task, outcome=outcome,
                      what_happened=what_happened, actor=vault.actor)
    with vault.transaction():
        memory = None
        if lesson:
            try:
                memory = vault.new_memory(lesson, type="lesson", scope=scope, source=f"episode:{episode.id}")
            except HafizaError as exc:
                exc.field = "lesson" if exc.field == "text" else exc.field
                raise
            episode.lesson_id = memory.id
        path = log_path(vault.root, when)
        vault.track([path])  # a failed or interrupted commit puts the log back as it was
        _append(path, episode)
        paths = [path] + ([vault.write_file(memory)] if memory else [])
        subject = f"episode {episode.id} ({outcome})" + (f", lesson {memory.id}" if memory else "")
        vault.commit(paths, subject, "episode", task)
    return episode, (memory.evolve(path=vault.path_of(memory.id)) if memory else None)


def _append(path: Path, episode: Episode) -> None:
    """Append one JSON line (under the writer lock); never through a symlink, only to a regular file."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    line = json.dumps(episode.to_json(), ensure_ascii=False).encode("utf-8") + b"\n"
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     FILE_MODE)
    except OSError as exc:
        raise HafizaError(f"{path.name}: cannot append to the episode log ({exc.strerror or exc}; "
                          "a symbolic link there is never followed)") from None
    try:
        st = os.fstat(fd)
        what = kind(st)
        if what:
            raise HafizaError(f"{path.name} is {what}, not a file hafiza writes to; move it away")
        if st.st_size and os.pread(fd, 1, st.st_size - 1) != b"\n":
            line = b"\n" + line  # a hand edit left the last line open
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def read(root: Path, month: str | None = None) -> list[dict]:
    """Episodes in the log, oldest first (one month's file with `month='YYYY-MM'`); bad lines skipped."""
    folder = Path(root) / EPISODES
    files = [folder / f"{month}.jsonl"] if month else sorted(folder.glob("*.jsonl"))
    out = []
    for path in files:
        try:
            lines = read_regular(path, limit=MAX_LOG_BYTES).decode("utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for line in lines:
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if isinstance(item, dict):
                out.append(item)
    return out
