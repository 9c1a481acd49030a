"""The rebuildable index under <vault>/.hafiza/: incremental sync from the files, full rebuild.

A sync reads only the files hafiza's writes logged since the index was last in step
(vault/store/changes.py), or, when something else moved the folder, compares each file's
(mtime, size) with the manifest and re-reads what moved; a changed file whose content
hash is unchanged costs no index write. A missing, corrupt or outdated index is
rebuilt with a notice.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from hafiza.vault.store import changes
from hafiza.vault.format.conflicts import readable, texts
from hafiza.vault.files import NotRegularFile, atomic_write, read_text
from hafiza.vault.store.lock import is_held, locked, try_locked
from hafiza.vault.format.layout import rel_name, shard_folders
from hafiza.vault.format.paths import FACT_DOC, FACTS, MEMORIES, SIDECAR, WRITE_LOCK
from hafiza.vault.format.text import first_line

from .schema import (ALIAS_SEPARATOR, CONFLICT_CHARS, SCHEMA_VERSION, SNIPPET_CHARS, TAG_SEPARATOR, indexed_body,
                     schema)

if TYPE_CHECKING:
    from .manifest import Row

SYNCED = "synced"    # .hafiza/synced: the stamps (manifest mtime, change-log position, index generation) the index
                     # last matched
MANIFEST = "manifest.db"
MISNAMED = "misnamed"  # .hafiza/misnamed: the manifest's misnamed ids, with the manifest version read (_version)
APPLY_WAIT = 2.0  # seconds a reader waits for another process applying the same writes, before reading stale
COMPACT_MIN_DOCS = 1_000  # a segment this big, mostly deleted documents, is rewritten by a full sync
DROP, ADD, UPDATE = "drop", "add", "update"  # the index's changes of a sync (FileChange.index)
ADDED, CHANGED, REMOVED = "added", "changed", "removed"  # how a file's change counts in the SyncReport


class FileChange(NamedTuple):
    """What one file's change asks of the manifest and the index (Index._file_changes)."""

    name: str
    row: Row | None             # its manifest row now; None: the file is gone
    memory: object = None       # what it parsed to, for the manifest's catalog: a memory, or None
    index: tuple = ()           # (DROP, document id), (ADD, fields), (UPDATE, fields), in order
    counted: str | None = None  # ADDED, CHANGED or REMOVED in the report; None: unparsable or unchanged
    unchanged: bool = False     # its content is the row's: only its mtime and size moved


class Preview:
    """What a sync would change (Index.preview): `changes` in order, the index `generation` and the `stamps`
    they apply to, and `report` (counts, and unparsable files as they would be; None when in step)."""

    def __init__(self, changes: list, generation: int, stamps: tuple, report: "SyncReport"):
        self.changes, self.generation, self.stamps, self.report = changes, generation, stamps, report


class SyncReport:
    """What a sync did. A plain class: importing dataclasses costs the cold hook ~5 ms."""

    def __init__(self, added: int = 0, changed: int = 0, removed: int = 0, rebuilt: bool = False,
                 skipped: bool = False, errors: dict[str, str] | None = None, impact_built: int = 0):
        self.added, self.changed, self.removed = added, changed, removed
        self.impact_built = impact_built  # impact files of older segments written (see indexer/impact.py)
        self.rebuilt = rebuilt
        self.skipped = skipped  # another process was syncing; the index may be a moment stale
        self.errors: dict[str, str] = errors if errors is not None else {}

    @property
    def touched(self) -> int:
        return self.added + self.changed + self.removed


def _stderr_notice(text: str) -> None:
    print(f"hafiza: {text}", file=sys.stderr)


class Index:
    """The Whoosh index of one vault (a Vault, or anything with its `root`)."""

    def __init__(self, root: Path, notice=_stderr_notice):
        self.root = Path(root)
        self.memories_dir = self.root / MEMORIES
        self.sidecar = self.root / SIDECAR
        self.dir = self.sidecar / "index"
        self.manifest_path = self.sidecar / MANIFEST
        self.lock_path = self.sidecar / "index.lock"
        self.notice = notice
        # What this process knows, so a sync can skip work: the open index, and the stamps (manifest
        # mtime, change-log position) of when it was last in step with the files.
        self._ix = None
        self._seen: tuple | None = None
        self._stamped: tuple | None = None  # what .hafiza/synced says, as this process last wrote or read it
        self._stamped_generation: int | None = None  # and the index generation it says that was
        self._errors: dict[str, str] | None = None  # unparsable files as of the last sync

    def _manifest(self):
        from .manifest import Manifest

        return Manifest.open(self.manifest_path, SCHEMA_VERSION)

    def _scan(self) -> dict[str, tuple[int, int]]:
        """(mtime, size) of every memory file by name, and of every fact note as `facts/<name>`."""
        out = {}
        subfolders = [(sub, f"{sub.name}/") for sub in shard_folders(self.memories_dir)]  # vault/format/layout.py
        for folder, prefix in ((self.memories_dir, ""), *subfolders, (self.root / FACTS, f"{FACTS}/")):
            try:
                entries = os.scandir(folder)
            except FileNotFoundError:
                continue
            with entries:
                for entry in entries:
                    if _is_memory_name(entry.name):
                        # Never through a link: a dangling one would fail here, one to /etc/passwd would be read.
                        # A link, a pipe or a folder is listed, and named once as unreadable in _apply.
                        try:
                            st = entry.stat(follow_symlinks=False)
                        except OSError:
                            continue
                        out[prefix + entry.name] = (st.st_mtime_ns, st.st_size)
        return out

    def _path(self, name: str) -> Path:
        """The file a manifest name stands for: memories/<name>, or the fact note facts/<name>."""
        return self.root / name if name.startswith(f"{FACTS}/") else self.memories_dir / name

    def _stat(self, names) -> dict[str, tuple[int, int]]:
        """`_scan` for a few names: those that exist, in order of name (the order they are indexed in, so
        that a search ranking them before they are indexed numbers them as the commit will: pending.py)."""
        out = {}
        for name in sorted(names):
            if _is_memory_name(name):
                try:
                    st = os.lstat(self._path(name))
                except OSError:
                    continue
                out[name] = (st.st_mtime_ns, st.st_size)
        return out

    # ---- opening

    @property
    def opened(self):
        """The Whoosh index this object last opened (None before the first `open`), without a sync."""
        return self._ix

    def open(self, quick: bool = True):
        """The Whoosh index, synced from the files first (see `sync` for `quick`)."""
        self.sync(quick=quick)
        return self._ix

    def _open_existing(self):
        try:
            ix = _open_dir(self.dir)
            ix.reader().close()  # a truncated segment shows only once a reader opens it
            return ix
        except Exception:  # EmptyIndexError, a truncated segment, a stray file: all mean rebuild
            return None

    # ---- sync

    def _stamps(self) -> tuple:
        return (_mtime(self.manifest_path), changes.now(self.root))

    def sync(self, progress=None, quick: bool = False, whoosh: bool = True) -> SyncReport:
        """Bring the index up to the files; rebuild it if it is missing or corrupt.

        With `quick` (every reader and writer), the cost does not grow with the vault: an index
        in step with the files is opened as it is, and when the folder moved only by hafiza's own
        writes, just the files those wrote are read (see vault/store/changes.py). Anything else, a file
        created or deleted by hand, means comparing every file. Without `quick` (doctor, and the
        warm process when idle) every file is compared, which also finds edits made in place.
        Without `whoosh` (a caller that reads only the manifest) an index in step is not even opened.
        """
        stamps = self._stamps()
        if quick:
            report = self._catch_up(stamps, progress, whoosh)
            if report is not None:
                return report
        return self._full_sync(stamps, progress)

    def follow(self, changed) -> SyncReport:
        """Apply the files `changed()` names (a kernel watch's report: hooks/watch.py), edits made in place
        included, reading only those; every file when it returns None (the watch lost count)."""
        stamps = self._stamps()
        names = changed()  # drained after the stamps are taken: nothing that moved them is missed
        if names is None:
            return self._full_sync(stamps, None)
        if not names:
            return SyncReport(errors=self._errors)
        return self._apply_names(names, stamps, None) or self._full_sync(stamps, None)

    def _catch_up(self, stamps: tuple, progress, whoosh: bool = True) -> SyncReport | None:
        """A sync that reads only what hafiza's writes changed since this process (or, in a fresh
        process, the last sync anywhere) was in step; None when every file must be compared."""
        fresh = self._ix is None
        base = self._read_stamped() if fresh else self._seen
        if base is None or base[0] is None:
            return None
        if stamps == base:
            if fresh and whoosh:
                try:  # the cold hook's path: neither the manifest nor any memory file is read
                    self._ix = _open_dir(self.dir)
                except Exception:  # whatever is wrong, the full sync sorts it out
                    return None
                self._seen = stamps
            return SyncReport(errors=self._errors)
        names = changes.since(self.root, base[1], stamps[1])
        if names is None:
            if not fresh and is_held(self.sidecar / WRITE_LOCK):
                return SyncReport(skipped=True, errors=self._errors)  # a write is under way: its line follows
            return None
        return self._apply_names(names, stamps, progress)

    def _apply_names(self, names: set[str], stamps: tuple, progress) -> SyncReport | None:
        # Another process applying changes (the warm process's watch, most often, after this very write)
        # holds the lock for milliseconds: waited for, so a read right after a write sees it. Not waiting
        # made MCP `recall` right after `remember` answer from the index before it, 7 times in 12 with a
        # warm process running (issue 30, item 2; tests/test_week.py).
        with try_locked(self.lock_path, wait=APPLY_WAIT) as got:
            if not got:  # still busy (a rebuild): search what is there
                if self._ix is None:
                    self._ix = self._open_existing()
                    if self._ix is None:
                        return None
                return SyncReport(skipped=True, errors=self._errors)
            manifest = self._manifest()
            if manifest is None:
                return None
            with manifest:
                ix = self._ix or self._open_existing()
                if ix is None:
                    return None
                report = self._apply(ix, manifest, manifest.rows(names), self._stat(names), progress)
            applied, generation = (_mtime(self.manifest_path), stamps[1]), _generation(self.dir)
        self._ix = _reopened(self.dir, ix)
        self._in_step(applied, report.errors, generation)
        return report

    def _full_sync(self, stamps: tuple, progress) -> SyncReport:
        """Compare every file with the manifest and apply what moved; rebuild a missing or broken index."""
        manifest = self._manifest()
        reuse = self._ix is not None and self._seen is not None and stamps[0] == self._seen[0]
        ix = (self._ix if reuse else self._open_existing()) if manifest is not None else None
        if ix is None:
            if manifest is not None or self.dir.exists() or self.manifest_path.exists():
                self.notice("the index was missing or unreadable; rebuilding it from the files")
            if manifest is not None:
                manifest.__exit__(None)
            return self.rebuild(progress)
        self._ix = ix
        with manifest:
            rows = manifest.rows()
            errors = _errors(rows)
        on_disk = self._scan()
        if not _moved(rows, on_disk):
            from . import cold

            ix = self._ix = self._compacted(ix)
            # The generation as it is now: one committed since the stamps were taken moved the manifest too.
            self._in_step(stamps, errors, _generation(self.dir))
            # An index made before impact files existed gets them here, in doctor or a warm process's first
            # full sync (writes build them only for the segments they make): once, ~3 s at 20,000 memories.
            return SyncReport(errors=errors, impact_built=len(cold.build(ix)))
        with try_locked(self.lock_path) as got:
            if not got:  # someone else is writing the same changes; search what is there
                return SyncReport(skipped=True, errors=errors)
            manifest = self._manifest()
            if manifest is None:
                return self.rebuild(progress)
            with manifest:  # the rows may have moved on while we waited
                report = self._apply(ix, manifest, manifest.rows(), on_disk, progress)
            # The log as it was before the scan: a file another writer adds meanwhile must not be vouched for.
            applied, generation = (_mtime(self.manifest_path), stamps[1]), _generation(self.dir)
        self._ix = _reopened(self.dir, ix)
        self._in_step(applied, report.errors, generation)
        return report

    def _compacted(self, ix):
        """`ix` with its segments that are mostly deleted documents rewritten without them, under the
        index lock (left as it is when another process holds the lock). The caller builds the new
        segment's files for the cold path (cold.build).

        Whoosh merges only small segments, so a big one keeps every version a change replaced: each
        edit, usage fold or re-index leaves one behind. A search then skips them all, one by one: at
        100,000 memories an index re-made beside its old segment (98,001 of 100,000 documents deleted)
        made every cold search build a set of 140,000 documents to leave out (~50 ms). A full sync
        (doctor, a warm process's first) rewrites such a segment's live documents once."""
        if not any(_bloated(s) for s in ix._segments()):
            return ix
        with try_locked(self.lock_path) as got:
            if not got:
                return ix
            ix.writer().commit(mergetype=_compact)
            return _reopened(self.dir, ix)

    def _in_step(self, stamps: tuple, errors: dict[str, str], generation: int | None) -> None:
        """The index (its Whoosh `generation`) matches the files as of `stamps`: remember it here, and in
        .hafiza/synced for the quick open of the next fresh process, and for `preview`."""
        self._seen, self._errors = stamps, errors
        stamped = self._stamped or self._read_stamped()
        if (stamps, generation) != (stamped, self._stamped_generation):
            try:
                atomic_write(self.sidecar / SYNCED, json.dumps([stamps[0], stamps[1].to_json(), generation]),
                             fsync=False)
                self._stamped, self._stamped_generation = stamps, generation
            except OSError:
                pass

    def _read_stamped(self):
        try:
            manifest_mtime, position, *generation = json.loads((self.sidecar / SYNCED).read_text())
            position = changes.Position.from_json(position)
            self._stamped = (manifest_mtime, position) if position is not None else None
            self._stamped_generation = generation[0] if generation and isinstance(generation[0], int) else None
        except (OSError, ValueError, TypeError):
            self._stamped, self._stamped_generation = None, None
        return self._stamped

    def _apply(self, ix, manifest, rows: dict, on_disk: dict, progress, **writer_args) -> SyncReport:
        """Bring `ix` and `manifest` up to the files: `rows` are the manifest's rows of the files
        considered, `on_disk` those of them that exist (a row without a file is a deletion)."""
        report = SyncReport()
        writer = None
        for change in self._file_changes(manifest, rows, on_disk, progress):
            _record(manifest, change, report)
            for kind, value in change.index:
                writer = writer or ix.writer(**writer_args)
                if kind == DROP:
                    _drop(writer, value)
                elif kind == ADD:
                    writer.add_document(**value)
                else:
                    writer.update_document(**value)
        if writer is not None:
            from . import cold

            writer.commit(mergetype=_merge_small)
            cold.build(ix)  # the impact file of a new big segment (a merge, a rebuild): once, not per prompt
        report.errors = manifest.errors()
        return report

    def _file_changes(self, manifest, rows: dict, on_disk: dict, progress):
        """What bringing the index up to the files takes, file by file: a FileChange for each file that moved
        or is gone, read from the files and `manifest` (whose owners of an id must include the changes
        recorded so far: each is recorded before the next is asked for). One walk serves the commit (`_apply`)
        and a search that ranks the writes in memory instead (`preview`, pending.py), so that both see the
        same documents in the same order."""
        moved = [n for n, st in on_disk.items() if n not in rows or rows[n].stat != st]
        for done, name in enumerate(moved, 1):
            change = self._file_change(manifest, name, rows.get(name), on_disk)
            yield change
            if progress and change.memory is not None:
                progress(done, len(moved))
        for name in rows:
            if name not in on_disk:
                gone = rows[name].id
                yield FileChange(name, None, index=((DROP, gone),) if gone else (), counted=REMOVED)

    def _file_change(self, manifest, name: str, old, on_disk: dict) -> FileChange:
        """What one moved file asks: read, checked for secrets, parsed, checked for an id another file holds."""
        from hafiza.vault.format import model
        from hafiza.vault.errors import Quarantined
        from hafiza.vault.guard import quarantine

        from .manifest import Row

        stat = on_disk[name]
        path = self._path(name)
        try:
            text = read_text(path)
        except NotRegularFile as exc:
            return FileChange(name, Row(*stat, error=exc.reason))
        except UnicodeDecodeError:
            return FileChange(name, Row(*stat, error="not UTF-8 text"))
        except OSError as exc:
            return FileChange(name, Row(*stat, error=f"unreadable: {exc.strerror or exc}"))
        digest = model.content_hash(text)
        if old and old.hash == digest:
            return FileChange(name, Row(*stat, digest, old.id, old.error), unchanged=True)
        dropped = ((DROP, old.id),) if old and old.id else ()
        counted = CHANGED if old else ADDED
        try:
            quarantine.check(text, path)  # a secret merged from a remote, or edited in by hand: never indexed
        except Quarantined as exc:
            return FileChange(name, Row(*stat, digest, error=exc.reason), index=dropped)
        if name.startswith(f"{FACTS}/"):
            return self._note_change(name, path, text, stat, digest, dropped, counted, self.sidecar)
        try:
            memory = model.parse(text, path)
            owner = next((o for o in manifest.owners(memory.id)
                          if o != name and (o in on_disk or os.path.lexists(self.memories_dir / o))), None)
            if owner:
                raise model.FrontmatterError(path, f"duplicate id {memory.id!r}, also in {owner}")
        except model.FrontmatterError as exc:
            return FileChange(name, Row(*stat, digest, error=exc.reason), index=dropped)
        # Dropped before it is added: what update_document does, without its query (see _drop).
        renamed = () if old and old.id == memory.id else ((DROP, memory.id),)
        return FileChange(name, Row(*stat, digest, memory.id), memory,
                          (*dropped, *renamed, (ADD, document(memory, digest, self.sidecar))), counted)

    @staticmethod
    def _note_change(name, path, text, stat, digest, dropped: tuple, counted: str, cache=None) -> FileChange:
        """A fact note's change: a document per attribute with a current value (indexer/facts.py)."""
        from hafiza.vault import facts

        from .facts import documents
        from .manifest import Row

        try:
            note = facts.parse(text, path)
        except facts.FrontmatterError as exc:
            return FileChange(name, Row(*stat, digest, error=exc.reason), index=dropped)
        updates = tuple((UPDATE, doc) for doc in documents(note, digest, cache))
        return FileChange(name, Row(*stat, digest, f"{FACT_DOC}{note.slug}"), index=(*dropped, *updates),
                          counted=counted)

    def preview(self, limit: int):
        """What a quick sync would change, without changing anything: a Preview of the documents it would
        drop and add, for a search to rank in memory (pending.py); None when a sync must run first: the index
        was not left in step with a point of the change log, something other than hafiza's writes moved the
        folder since, or more than `limit` files changed."""
        stamps, base = self._stamps(), self._read_stamped()
        generation = self._stamped_generation
        if base is None or base[0] is None or stamps[0] != base[0] or generation is None:
            return None  # stamped by an older version, or the manifest moved since (a sync under way)
        names = changes.since(self.root, base[1], stamps[1])
        if names is None or len(names) > limit:
            return None
        if not names:
            return Preview([], generation, stamps, None)  # in step
        from .manifest import Draft

        manifest = self._manifest()
        if manifest is None:
            return None
        report = SyncReport()
        with manifest:  # read only: the Draft keeps the rows a sync would write
            draft = Draft(manifest)
            found = []
            for change in self._file_changes(draft, manifest.rows(names), self._stat(names), None):
                _record(draft, change, report)
                found += change.index
            report.errors = draft.errors()
        return Preview(found, generation, stamps, report)

    def previewed(self, preview) -> None:
        """A search ranks `preview`'s changes in memory (pending.py): the unparsable files are those they leave."""
        if preview.report is not None:
            self._errors = preview.report.errors

    def state(self) -> tuple:
        """Where the files and the index are now: the stamps, and the index generation."""
        return self._stamps(), _generation(self.dir)

    def unmoved(self, preview) -> bool:
        """Whether the index and its manifest are still those `preview` was made against (nothing was committed
        since: a sync that started meanwhile shows in one or the other)."""
        return _mtime(self.manifest_path) == preview.stamps[0] and _generation(self.dir) == preview.generation

    def rebuild(self, progress=None) -> SyncReport:
        """Build a fresh index and manifest beside the old ones and swap them in."""
        import shutil

        from whoosh import index as windex

        from .manifest import create

        self.sidecar.mkdir(parents=True, exist_ok=True)
        with locked(self.lock_path, what="index"):
            fresh = self.sidecar / f"index.new-{os.getpid()}"
            fresh_manifest = self.sidecar / f"{MANIFEST}.new-{os.getpid()}"
            shutil.rmtree(fresh, ignore_errors=True)
            fresh.mkdir()
            before = changes.now(self.root)  # as in sync: what the scan below is known to include
            # Built aside and swapped in, so readers see the old index until the new one is whole.
            with create(fresh_manifest, SCHEMA_VERSION) as manifest:
                report = self._apply(windex.create_in(str(fresh), schema()), manifest, {}, self._scan(), progress,
                                     limitmb=256)
            report.rebuilt = True
            self._swap(fresh)
            os.replace(fresh_manifest, self.manifest_path)
            self._in_step((_mtime(self.manifest_path), before), report.errors, _generation(self.dir))
        self._ix = _open_dir(self.dir)
        return report

    def _swap(self, fresh: Path) -> None:
        import shutil  # only a rebuild needs it, and it costs every reader ~5 ms (bz2, lzma)

        old = self.sidecar / f"index.old-{os.getpid()}"
        if self.dir.exists():
            os.replace(self.dir, old)
        os.replace(fresh, self.dir)
        shutil.rmtree(old, ignore_errors=True)

    def catalog(self, lines: bool = False, **which) -> list:
        """What `hafiza list` prints of every memory (see Manifest.catalog for `which`; Manifest.listing
        with `lines`), without Whoosh unless hafiza's writes since the last sync are to be indexed first."""
        self.sync(quick=True, whoosh=False)
        manifest = self._manifest()
        if manifest is None:
            return []
        with manifest:
            return manifest.listing(**which) if lines else manifest.catalog(**which)

    def misnamed(self) -> set[str]:
        """Ids that files named otherwise declare: what taking an id must also avoid. The manifest's, and
        those of the files hafiza's writes logged since it was last in step, read from their headers, but
        for the files it wrote as the memory their name says (the log says which: without that, every write
        read every file written since the last search, ~1 ms a hundred). A writer never loads Whoosh to
        learn them."""
        from hafiza.vault.format.model import declared_id

        stamps, base = self._stamps(), self._read_stamped()
        written = changes.written_since(self.root, base[1], stamps[1]) if base is not None else None
        if written is None:  # the folder moved otherwise: bring the index up to every file first
            self.sync(quick=True)
            written = set(), set()
        found = self._listed_misnamed()
        pending, named = written
        for name in pending - named:  # files hafiza wrote as the memory their name says are not read
            declared = declared_id(self.memories_dir / name)
            if declared and f"{declared}.md" != name.rpartition("/")[2]:
                found.add(declared)
        return found

    def _listed_misnamed(self) -> set[str]:
        """The manifest's misnamed ids: kept in .hafiza/misnamed with the version of the manifest they were read
        from, so that a writer whose manifest has not moved since does not load SQLite at all (~5 ms)."""
        version, kept = _version(self.manifest_path), self.sidecar / MISNAMED
        try:
            was, ids = json.loads(kept.read_text("utf-8"))
            if version is not None and was == version:
                return set(ids)
        except (OSError, ValueError, TypeError):
            pass
        manifest = self._manifest()
        if manifest is None:
            return set()
        with manifest:
            found = manifest.misnamed()
        if version is not None and _version(self.manifest_path) == version:  # not written meanwhile
            try:
                atomic_write(kept, json.dumps([version, sorted(found)]), fsync=False)
            except OSError:
                pass
        return found

    def unparsable(self) -> dict[str, str]:
        """Memory files the last sync left out because they do not parse: name -> why."""
        if self._errors is None:
            manifest = self._manifest()
            if manifest is None:
                return {}
            with manifest:
                self._errors = manifest.errors()
        return self._errors

    def documents(self, type: str | None = None, status: str = "all", scope: str | None = None,
                  without_aliases: bool = False) -> list[dict]:
        """Stored fields of every memory (or those of one type, status and scope, or without aliases), by id;
        fact notes' documents are not memories and are left out."""
        docs = [d for d in self.stored() if not d["id"].startswith(FACT_DOC)  # memories only: `fact list`
                and (not type or d["type"] == type) and (status == "all" or d["status"] == status)
                and (not scope or d["scope"] == scope) and not (without_aliases and d.get("aliases"))]
        return sorted(docs, key=lambda d: d["id"])

    def stored(self) -> Iterator[dict]:
        """Every memory's stored fields, one at a time, in index order (synced from the files first)."""
        with self.open().searcher() as searcher:
            yield from searcher.all_stored_fields()

    def doc_count(self) -> int:
        return self.open().doc_count()


def verified_note(verified) -> str | None:
    """'since <date>: <detail>' for a memory whose claims stopped being true; None when they hold."""
    if not isinstance(verified, dict) or verified.get("status") in (None, "ok"):
        return None
    detail = " ".join(str(verified.get("detail") or verified.get("status")).split())
    return f"since {verified['at']}: {detail}" if verified.get("at") else detail


def _open_dir(folder: Path):
    """The Whoosh index in `folder`, its files read rather than memory-mapped. whoosh3 copies each column
    file it opens out of a map whole (a BytesIO around the mapped slice), so at 100,000 memories a reader
    opened in 35-119 ms mapped and 2-3 ms read, and the first stored fields took ~100 ms against ~1 ms
    (bench/results/keyword-scale-2026-12-01.md)."""
    from whoosh.filedb.filestore import FileStorage

    global _SCHEMA
    if _SCHEMA is None:
        _SCHEMA = schema()
    # With the schema given, Whoosh skips unpickling the one in its table of contents, which it reads on
    # every open, reader and writer (~5 ms each at 20,000 memories; four to six of them when a search indexes a write).
    return FileStorage(str(folder), supports_mmap=False).open_index(schema=_SCHEMA)


_SCHEMA = None


def _reopened(folder: Path, ix):
    """A new index object on `folder` after a sync changed it (a Recall keeps its View while the object stays
    the same), or `ix` when it cannot be opened: it reads the newest generation all the same."""
    try:
        return _open_dir(folder)
    except Exception:  # whatever it is, the next sync's open sorts it out
        return ix


def _generation(folder: Path) -> int | None:
    from .cold import latest_generation

    try:
        return latest_generation(folder)
    except OSError:
        return None


def _merge_small(writer, segments):
    """Whoosh's MERGE_SMALL, its choice made by `cold.merged`, where a search that ranks unindexed writes in
    memory reads it too (pending.py): it can then tell whether their commit would merge."""
    from .cold import merged

    return _merged_into(writer, segments, merged([s.doc_count_all() for s in segments]))


def _merged_into(writer, segments, chosen: list[int]) -> list:
    """Copy the live documents of the `chosen` segments (their positions, in the order they are copied)
    into the commit's new segment; the segments kept as they are (what a Whoosh merge policy returns)."""
    from whoosh.reading import SegmentReader

    for k in chosen:
        reader = SegmentReader(writer.storage, writer.schema, segments[k])
        writer.add_reader(reader)
        reader.close()
    return [s for k, s in enumerate(segments) if k not in chosen]


def _bloated(segment) -> bool:
    """Whether a segment is big and mostly documents deleted since (see Index._compacted)."""
    total = segment.doc_count_all()
    return total >= COMPACT_MIN_DOCS and segment.deleted_count() * 2 > total


def _compact(writer, segments):
    """A merge policy: the bloated segments' live documents into the commit's new segment; the rest kept."""
    return _merged_into(writer, segments, [k for k, s in enumerate(segments) if _bloated(s)])


def _version(path: Path) -> list[int] | None:
    """Which manifest file and which version of it: its inode, and SQLite's count of the transactions that
    wrote it (bytes 24-27 of the database header; the manifest keeps no write-ahead log, which would leave
    them)."""
    try:
        with open(path, "rb") as f:
            head, inode = f.read(28), os.fstat(f.fileno()).st_ino
    except OSError:
        return None
    if len(head) < 28 or not head.startswith(b"SQLite format 3\0"):
        return None
    return [inode, int.from_bytes(head[24:28], "big")]


def _mtime(path: Path) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except FileNotFoundError:
        return None


def _record(manifest, change: FileChange, report: SyncReport) -> None:
    """`change` into the manifest (or a Draft of it) and the report."""
    if change.row is None:
        manifest.drop(change.name)
    elif change.unchanged:
        manifest.moved(change.name, *change.row.stat)
    else:
        manifest.put(change.name, change.row, change.memory)
    report.added += change.counted == ADDED
    report.changed += change.counted == CHANGED
    report.removed += change.counted == REMOVED


def _errors(rows: dict) -> dict[str, str]:
    return {name: row.error for name, row in rows.items() if row.error}


def _moved(rows: dict, on_disk: dict) -> bool:
    return any(n not in rows or rows[n].stat != st for n, st in on_disk.items()) or any(
        n not in on_disk for n in rows)


def _drop(writer, doc_id: str) -> None:
    """Take a file's documents out of the index: a memory's one, or each attribute of a fact note."""
    if doc_id.startswith(FACT_DOC):
        from whoosh.query import Prefix

        writer.delete_by_query(Prefix("id", f"{doc_id}/"))
        return
    # Through the id's postings: delete_by_term (and update_document) run a Whoosh query, whose modules
    # (whoosh.query, whoosh.searching) a search that indexes a write would otherwise import.
    reader = writer.reader()
    try:
        if ("id", doc_id) in reader:
            for docnum in reader.postings("id", doc_id).all_ids():
                writer.delete_document(docnum)
    finally:
        reader.close()


def _is_memory_name(name: str) -> bool:
    return name.endswith(".md") and not name.rpartition("/")[2].startswith(".")


def document(memory, digest: str, cache: Path | None = None) -> dict:
    """The index fields of one memory (`cache`: the sidecar, where the lexicon is kept parsed)."""
    # A title hafiza took from the text's first line is shown as a title but not weighed as one: the same
    # words are in the body already, and a word early in a long text would outrank the same word later
    # (on a public dialogue set, indexing the text evenly raised keyword hit@5 0.41 -> 0.53).
    from .lexicon import concepts_text
    from .search import query_terms
    from .text import prefixes

    made_up = memory.title == first_line(memory.body)
    body = readable(memory.body)  # both texts of a merge conflict, without its fence lines
    return {
        "id": memory.id,
        "title": "" if made_up else memory.title,
        "_stored_title": memory.title,
        "aliases": ALIAS_SEPARATOR.join(memory.aliases),
        "alias_terms": [terms for terms in map(query_terms, memory.aliases) if terms],
        "tags": TAG_SEPARATOR.join(memory.tags),
        "body": indexed_body(body, memory.scope),
        "prefixes": prefixes(words := " ".join(("" if made_up else memory.title, " ".join(memory.aliases), " ".join(memory.tags), body))),
        "concepts": concepts_text(words, cache),
        "type": memory.type,
        "scope": memory.scope,
        "status": memory.status,
        "created": memory.created.isoformat(),
        "updated": (memory.updated or memory.created).isoformat(),
        "last_used": memory.last_used.isoformat() if memory.last_used else None,
        "shown": memory.shown,
        "used": memory.used,
        "half_life": memory.half_life,
        "snippet": body[:SNIPPET_CHARS],
        "path": rel_name(memory.path) if memory.path else f"{memory.id}.md",
        "supersedes": memory.supersedes,
        "superseded_by": memory.superseded_by,
        "verified": (memory.verified or {}).get("status"),
        "verified_note": verified_note(memory.verified),
        "conflict": [text[:CONFLICT_CHARS] for text in texts(memory.body)] or None,
        "hash": digest,
        "chars": len(memory.body),
    }
