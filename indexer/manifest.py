"""What the index knows of each memory file: name -> (mtime_ns, size, content hash, id, why unparsable),
and the few fields `hafiza list` and `stats` print (a catalog: they need neither Whoosh nor the files).

Kept in SQLite (`.hafiza/manifest.db`) so that a write reads and updates only its own files' rows and
taking an id asks one question: at 100,000 memories the JSON manifest it replaces was 17 MB that every
write and every cold search read whole (0.27 s) and every sync wrote whole. Rebuildable like the rest of
the sidecar: a file that is missing, of another version or unreadable means a rebuild.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from operator import itemgetter
from pathlib import Path
from typing import NamedTuple


class Row(NamedTuple):
    """What the manifest holds of one file."""

    mtime: int                 # nanoseconds
    size: int
    hash: str | None = None    # of its content (model.content_hash)
    id: str | None = None      # the memory's id, or `fact:<note>` for a fact note
    error: str | None = None   # why it does not parse

    @property
    def stat(self) -> tuple[int, int]:
        return self.mtime, self.size


# Files whose name is not their id: `x.md`, and a large vault's `3f/x.md` (vault/format/layout.py), are named
# for their id. The query of `misnamed` repeats this condition, so SQLite reads only the other rows.
_MISNAMED = "name != id || '.md' AND name NOT LIKE '__/' || id || '.md'"
_MISNAMED_INDEX = f"CREATE INDEX misnamed ON files (id) WHERE {_MISNAMED}"
# `errors`, after every sync that indexed something: without it SQLite read every row (~10 ms at 100,000).
_UNPARSABLE_INDEX = "CREATE INDEX unparsable ON files (name, error) WHERE error IS NOT NULL"
_TABLES = f"""
CREATE TABLE files (name TEXT PRIMARY KEY, mtime INTEGER, size INTEGER, hash TEXT, id TEXT, error TEXT,
                    title TEXT, type TEXT, scope TEXT, status TEXT, created TEXT, aliased INTEGER)
    WITHOUT ROWID;
CREATE INDEX files_by_id ON files (id);
{_MISNAMED_INDEX};
{_UNPARSABLE_INDEX};
"""


class Manifest:
    """One connection to the manifest; use it as a context manager (changes are committed on exit)."""

    def __init__(self, path: Path, version: int, create: bool = False):
        self.path = Path(path)
        if not create and not self.path.exists():
            raise ManifestMissing(self.path)
        self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            self.db.execute("PRAGMA synchronous = OFF")  # rebuildable: a torn write means a rebuild
            self.db.execute("PRAGMA journal_mode = DELETE")
            found = self.db.execute("PRAGMA user_version").fetchone()[0]
            if create and found == 0:
                self.db.executescript(_TABLES)
                self.db.execute(f"PRAGMA user_version = {int(version)}")
            elif found != version:
                raise ManifestMissing(self.path, f"version {found}, not {version}")
            else:
                self._upgrade()
            self.db.execute("BEGIN")
        except sqlite3.OperationalError as exc:
            self.db.close()
            if create:  # a rebuild on a full disk: an OSError like any other write's
                raise OSError(errno.ENOSPC if "full" in str(exc) else errno.EIO, f"the index manifest: {exc}") from None
            raise
        except BaseException:
            self.db.close()
            raise

    def _upgrade(self) -> None:
        """The indexes of a manifest made by an earlier version: one made before memories could live in
        subfolders counts every `3f/x.md` as misnamed, and one may lack the index of unparsable files."""
        found = dict(self.db.execute("SELECT name, sql FROM sqlite_master WHERE name IN ('misnamed', 'unparsable')"))
        if found.get("misnamed") != _MISNAMED_INDEX:
            self.db.executescript(f"DROP INDEX IF EXISTS misnamed; {_MISNAMED_INDEX};")
        if found.get("unparsable") != _UNPARSABLE_INDEX:
            self.db.executescript(f"DROP INDEX IF EXISTS unparsable; {_UNPARSABLE_INDEX};")

    @classmethod
    def open(cls, path: Path, version: int) -> "Manifest | None":
        """The manifest, or None when it is missing, outdated or unreadable (the caller rebuilds)."""
        try:
            return cls(path, version)
        except (ManifestMissing, sqlite3.Error):
            return None

    def __enter__(self) -> "Manifest":
        return self

    def __exit__(self, kind, *_) -> None:
        try:
            self._run("COMMIT" if kind is None else "ROLLBACK")
        finally:
            self.db.close()

    def _run(self, sql: str, args=()):
        """Execute; a failure of the machine (a full disk) is an OSError, as for any file hafiza writes."""
        try:
            return self.db.execute(sql, args)
        except sqlite3.OperationalError as exc:
            full = "full" in str(exc)
            raise OSError(errno.ENOSPC if full else errno.EIO, f"the index manifest: {exc}") from None

    def rows(self, names=None) -> dict[str, Row]:
        """Every file's row, or those of `names` (the ones the manifest has)."""
        query = "SELECT name, mtime, size, hash, id, error FROM files"
        if names is None:
            return {r[0]: Row(*r[1:]) for r in self._run(query)}
        out = {}
        for name in names:
            r = self._run(query + " WHERE name = ?", (name,)).fetchone()
            if r:
                out[name] = Row(*r[1:])
        return out

    def put(self, name: str, row: Row, memory=None) -> None:
        """Record a file; `memory` (what it parsed to) fills the catalog."""
        listed = ((memory.title, memory.type, memory.scope, memory.status, memory.created.isoformat(),
                   int(bool(memory.aliases))) if memory is not None else (None,) * 6)
        self._run("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", (name, *row, *listed))

    def moved(self, name: str, mtime: int, size: int) -> None:
        """The file was touched but its content is the same."""
        self._run("UPDATE files SET mtime = ?, size = ? WHERE name = ?", (mtime, size, name))

    def catalog(self, type: str | None = None, status: str = "all", scope: str | None = None,
                without_aliases: bool = False) -> list[sqlite3.Row]:
        """Every memory's id, title, type, scope, status, created and file name (`path`), by id; or those of
        one type, status and scope, or without aliases. Rows are read by name, as a dict is."""
        return self._select("id, title, type, scope, status, created, name AS path", type, status, scope,
                            without_aliases, sqlite3.Row)

    def listing(self, type: str | None = None, status: str = "all", scope: str | None = None,
                without_aliases: bool = False) -> list[tuple[str, str, str]]:
        """As `catalog`, each memory as (id, the line `hafiza list` prints up to its title, the title):
        `id  (type, scope) [status]  `, the status only when not active. Made by SQLite, because a listing
        of thousands of memories spent a fifth of its time building rows and strings in Python."""
        return self._select("id, id || '  (' || type || ', ' || scope || ')' || "
                            "iif(status = 'active', '', ' [' || status || ']') || '  ', title",
                            type, status, scope, without_aliases)

    def _select(self, columns: str, type, status, scope, without_aliases, row_factory=None) -> list:
        where, args = ["id IS NOT NULL", "name NOT LIKE 'facts/%'"], []  # fact notes: `hafiza fact list`
        for column, value in (("type", type), ("status", None if status == "all" else status), ("scope", scope)):
            if value:
                where.append(f"{column} = ?")
                args.append(value)
        if without_aliases:
            where.append("aliased = 0")
        cursor = self._run(f"SELECT {columns} FROM files WHERE {' AND '.join(where)}", args)
        cursor.row_factory = row_factory
        # Sorted here rather than by ORDER BY, which walks the id index and looks every row up: 25% slower.
        return sorted(cursor, key=itemgetter(0))

    def drop(self, name: str) -> None:
        self._run("DELETE FROM files WHERE name = ?", (name,))

    def owners(self, memory_id: str) -> list[str]:
        """The files that hold the memory `memory_id`, by name."""
        return sorted(r[0] for r in self._run("SELECT name FROM files WHERE id = ?", (memory_id,)))

    def misnamed(self) -> set[str]:
        """Ids declared by files named otherwise (a hand-made `notes.md` saying `id: deploy`)."""
        return {r[0] for r in self._run(f"SELECT id FROM files WHERE {_MISNAMED} AND name NOT LIKE 'facts/%'")}

    def errors(self) -> dict[str, str]:
        return dict(self._run("SELECT name, error FROM files WHERE error IS NOT NULL ORDER BY name"))


class Draft:
    """A manifest's rows as a sync would leave them, the manifest itself unwritten: what a search that ranks
    unindexed writes in memory walks the changes with (Index.preview), answering as the manifest would."""

    def __init__(self, manifest: Manifest):
        self.manifest = manifest
        self.rows: dict[str, Row | None] = {}  # name -> its row as written, None when dropped

    def put(self, name: str, row: Row, memory=None) -> None:
        self.rows[name] = row

    def moved(self, name: str, mtime: int, size: int) -> None:
        pass  # the same content: nothing a search reads

    def drop(self, name: str) -> None:
        self.rows[name] = None

    def owners(self, memory_id: str) -> list[str]:
        kept = [n for n in self.manifest.owners(memory_id) if n not in self.rows]
        return sorted(kept + [n for n, row in self.rows.items() if row is not None and row.id == memory_id])

    def errors(self) -> dict[str, str]:
        found = {n: e for n, e in self.manifest.errors().items() if n not in self.rows}
        found.update((n, row.error) for n, row in self.rows.items() if row is not None and row.error)
        return dict(sorted(found.items()))  # by name, as the manifest lists them


class ManifestMissing(Exception):
    def __init__(self, path, why: str = "missing"):
        super().__init__(f"{path}: {why}")


def create(path: Path, version: int) -> Manifest:
    """A new, empty manifest at `path` (an existing file there is replaced)."""
    for leftover in (path, Path(f"{path}-journal")):
        try:
            os.unlink(leftover)
        except FileNotFoundError:
            pass
    return Manifest(path, version, create=True)
