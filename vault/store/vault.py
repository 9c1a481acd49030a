"""The Vault: reading memories, and every write as one locked, atomic, committed change."""

from __future__ import annotations

import datetime as dt
import itertools
import os
import re
from contextlib import contextmanager
from pathlib import Path

from . import changes, journal, usage
from hafiza.vault.format import ignore, layout, model
from hafiza.vault.errors import AlreadyRemembered, FrontmatterError, GitError, HafizaError, MemoryNotFound, SecretRefused
from hafiza.vault.format.ids import is_valid_id, near, slugify, unique_id
from hafiza.vault.files import DIR_MODE, MAX_FILE_BYTES, atomic_write
from hafiza.vault.format.inputs import (MAX_REASON_CHARS, MAX_TEXT_CHARS, _content_key, _input, _limit, _merge_aliases,
                                       _strings, as_read, inherit_aliases)
from .hand import HandEdits
from .lock import DEFAULT_TIMEOUT, locked
from hafiza.vault.format.model import Memory
from hafiza.vault.format.text import plural
from hafiza.vault.format.paths import MEMORIES, SIDECAR, WRITE_LOCK, check_sidecar, is_vault, no_vault

FOLD_AFTER = dt.timedelta(days=1)  # fold the usage log on any commit once it is this old
UNDO_HORIZON = 500  # commits `undo` looks back through for the latest change not yet undone
PACK_AFTER = 1_000  # files an import writes before it has git pack their objects, in the background
_DRAFT = re.compile(r"(\d{8})-(\d{6})(?:-(\d{6}))?(?:-(\d+))?\.md")  # save_draft's names, after `<id>-`
ALREADY = "already in the vault"  # an import item skipped because it is; the CLI counts them by it


def reader(root: Path) -> "Vault":
    """A vault for reading only (`show`, `log`): a write through it is refused, since writers must open it
    with hafiza.indexer.refresh.writable, which keeps the index in step."""
    return Vault(root, read_only=True)


class Vault(HandEdits):
    """A memory vault rooted at `root`: a git repository of markdown files."""

    def __init__(self, root: Path, actor: str = "cli", lock_timeout: float = DEFAULT_TIMEOUT, after_commit=None,
                 read_only: bool = False, misnamed=None):
        self.root = Path(root)
        self.read_only = read_only  # opened by a command that only reads: a write is a bug, refused
        self.actor = actor
        self.lock_timeout = lock_timeout  # seconds a writer waits for the lock before VaultLocked
        # Called with the vault after each write that committed, outside the lock: what keeps derived stores
        # (the index, the vectors) in step. hafiza.indexer.refresh.writable sets it; see there.
        self.after_commit = after_commit
        # misnamed() -> the ids files named otherwise declare, from the index (see `taken`); None: read every header.
        self.misnamed = misnamed
        self._commits = 0
        self.touched = 0  # memory files the last transaction's commits changed (after_commit may read it)
        self._implicit: set[str] = set()  # commits `transaction` made before the caller's change
        # The sha of the caller's own commit in the last write (its last, should it make several), never one
        # made on the way in (hand edits, a stale usage log); None when it committed nothing.
        self.last_commit: str | None = None
        self.memories_dir = self.root / MEMORIES
        self.sidecar = self.root / SIDECAR
        self.lock_path = self.sidecar / WRITE_LOCK
        self.warnings: list[str] = []  # what the last write noticed (a placeholder key, a skipped symlink)
        self._journal = journal.Journal(self.root, self.sidecar)
        self._git = None
        self._placer: layout.Placer | None = None
        # Between full looks at a large vault: the files this write looked at for hand edits (_spot_check).
        self._looked: set[Path] | None = None
        self._named: set[str] = set()  # files written as the memory their name says, not yet logged (_log)

    # ---- setup

    @classmethod
    def init(cls, root: Path, actor: str = "cli") -> "Vault":
        """Create (or adopt) a vault at `root`; idempotent."""
        from hafiza.vault.sync import machines as sync
        from hafiza.vault.git import GitStore, message

        root = Path(root)
        if os.path.lexists(root) and not root.is_dir():
            raise HafizaError(f"{root} exists and is not a folder; point HAFIZA_VAULT or --vault at a folder "
                              "(it is created if missing)")
        created = not root.exists()
        (root / MEMORIES).mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        if created:
            root.chmod(DIR_MODE)  # only its owner may read what people told their agents
        check_sidecar(root)
        fresh = not (root / ".git").exists()
        store = GitStore.init(root) if fresh else GitStore(root)
        store.private()
        store.tune()
        ignore.ensure(root)
        sync.prepare(root, store)
        keep = root / MEMORIES / ".gitkeep"
        if not any((root / MEMORIES).iterdir()):
            keep.touch()
        vault = cls(root, actor)
        if fresh or store.dirty():
            with locked(vault.lock_path):
                vault.last_commit = store.commit(None, message("init vault", "init", actor))
        return vault

    def exists(self) -> bool:
        return is_vault(self.root)

    def require(self) -> "Vault":
        if not self.exists():
            raise no_vault(self.root)
        check_sidecar(self.root)
        return self

    @property
    def git(self):
        if self._git is None:
            from hafiza.vault.git import GitStore

            self._git = GitStore(self.root)
        return self._git

    # ---- reading

    def paths(self) -> list[Path]:
        return layout.memory_files(self.memories_dir)

    def path_of(self, memory_id: str) -> Path:
        """The file of `memory_id`: where it is, or where a new memory by that id goes (vault/format/layout.py)."""
        if self._placer is None:
            self._placer = layout.Placer(self.memories_dir)
        return self._placer.place(memory_id)

    def rel(self, memory: Memory) -> str:
        """A memory's file relative to the vault (`memories/x.md`, `memories/3f/x.md`), as git names it."""
        return layout.vault_rel(memory.path or self.path_of(memory.id))

    def load_all(self) -> tuple[list[Memory], list[FrontmatterError]]:
        """Every memory that parses, and an error per file that does not (or repeats an id)."""
        memories, errors, seen = [], [], {}
        for path in self.paths():
            try:
                memory = _read(path)
            except FrontmatterError as exc:
                errors.append(exc)
                continue
            if memory.id in seen:
                errors.append(FrontmatterError(path, f"duplicate id {memory.id!r}, also in {seen[memory.id].name}"))
                continue
            seen[memory.id] = path
            memories.append(memory)
        return memories, errors

    def get(self, memory_id: str) -> Memory:
        path = layout.existing(self.memories_dir, memory_id) if is_valid_id(memory_id) else None
        if path is not None:
            memory = _read(path)  # a symlink or a pipe by that name is refused, not followed
            if memory.id == memory_id:
                return memory  # else x.md says `id: y`: it is y, and only y (doctor names the mismatch)
        memories = self.load_all()[0]
        for memory in memories:  # a hand-made file whose name differs from its id
            if memory.id == memory_id:
                return memory
        from hafiza.vault.facts import note_of

        note = note_of(memory_id)
        if note is not None:
            raise MemoryNotFound(f"{memory_id} is an attribute of the fact note {note}, not a memory; "
                                 f"`hafiza fact show {note[6:-3]}` prints it", field="id")
        raise MemoryNotFound(f"no memory with id {memory_id!r}", field="id",
                             near=near(memory_id, (m.id for m in memories)))

    def taken(self) -> "Taken":
        """The ids a new memory must avoid (`id in vault.taken()`), without reading the vault when the index
        can say which file declares an id."""
        return Taken(self)

    def taken_ids(self) -> set[str]:
        """Ids in use: every file's name, and the id a hand-made file declares under another name.

        Without the declared ids a new memory could reuse one, and the index would skip it as
        a duplicate. Only each header's `id:` line is read, not the YAML (~70 ms at 5,000 files,
        12.8 s at 100,000): writers ask `taken` instead, which asks the index.
        """
        taken = set()
        for path in self.paths():
            taken.add(path.stem)
            declared = model.declared_id(path)
            if declared:
                taken.add(declared)
        return taken

    # ---- writing: every public write is one commit under the writer lock

    @contextmanager
    def transaction(self, merging: bool = False, thorough: bool = False):
        """Hold the writer lock; finish an interrupted write, commit hand edits first, fold a stale
        usage log. A write that fails inside is rolled back: whole or absent.

        While a git merge is under way (a `git pull` stopped on a conflict) a commit would record half of
        it: only sync (`merging`), which finishes it, may write then, and nothing is done on the way in.
        `thorough`: look at every file for hand edits, whatever the vault's size (git commands that
        touch the work tree themselves, such as a revert, need them committed first)."""
        if self.read_only:
            raise HafizaError("this vault was opened for reading; writers open it with "
                              "hafiza.indexer.refresh.writable, so the index follows every write")
        self.require()
        self._commits = self.touched = 0
        self._named.clear()  # left by a write that failed before its commit
        self._placer = None  # others may have written since: count memories/ again, once, if a new file needs it
        with locked(self.lock_path, self.lock_timeout):
            # Commits made on the way in are not what the caller asked for: undo must not pick them.
            self._implicit = set()
            self.warnings = []
            self._recover()
            self.git.tune()  # a vault made by an earlier version
            open_merge = self.git.merging()
            if open_merge and not merging:
                raise HafizaError("a git merge is under way in the vault (a `git pull` stopped on a conflict?); "
                                  "`hafiza sync` finishes it, `git merge --abort` drops it. Nothing was changed.")
            self._looked = None
            if not open_merge:
                self._ignore_device_files()
                self._record_hand_edits(thorough or merging)
            first = usage.oldest(self.sidecar)
            if first is not None and dt.datetime.now() - first > FOLD_AFTER and not open_merge:
                before = self.git.head()
                self._fold_locked()
                self._implicit |= {self.git.head()} - {before}
            self.last_commit = None
            try:
                yield
            except BaseException:
                if self._journal.active:
                    try:
                        journal.recover(self._journal, self.git)
                    except Exception:  # e.g. the disk is still full: the journal stays for the next writer
                        pass
                raise
        if self._commits and self.after_commit is not None:
            self._follow()

    def _follow(self) -> None:
        """Bring derived stores up to the commit. The commit is the write: a failure here is a warning,
        never an error that would invite repeating a write that landed; readers catch up from the files."""
        try:
            self.after_commit(self)
        except (OSError, HafizaError) as exc:
            why = exc.message if isinstance(exc, HafizaError) else (exc.strerror or str(exc))
            self.warnings.append(f"the change is committed, but the index could not follow ({why}); search "
                                 "finds it after `hafiza reindex`")

    def _recover(self) -> None:
        """What a writer killed mid-way left: a stale git lock, half a write, temp files."""
        lock = self.git.stale_lock()
        if lock is not None:
            lock.unlink(missing_ok=True)
            self.warnings.append("removed a stale .git/index.lock left by a git process that died")
        if not self._journal.path.exists():
            return  # no write died since the last one ended: nothing to look for (a scan is O(vault))
        done = journal.recover(self._journal, self.git)
        self._journal.active = False  # whatever this object began before is finished or rolled back now
        if done:
            self.warnings.append(done)
        for path in journal.orphan_temp_files(self.root) + self.git.leftovers():
            path.unlink(missing_ok=True)

    def _ignore_device_files(self) -> None:
        """A vault made before its .gitignore kept editors' per-device files out (vault/format/ignore.py): the lines
        added, and any such file git already tracks untracked (it stays on disk), as one commit of its own,
        before hand edits are looked at. Every later write reads .gitignore and finds nothing to do."""
        from hafiza.vault.git import message

        if not ignore.ensure(self.root):
            return
        tracked = sorted(p for p in self.git.tracked() if ignore.device_file(p))
        body = ("No longer tracked (the files stay):\n" + "\n".join(f"- {p}" for p in tracked)) if tracked else ""
        sha = self.git.untrack(tracked, ".gitignore", message("keep editors' per-device files out of git",
                                                               "ignore", self.actor, body=body))
        self._implicit.add(sha)
        self._commits += 1

    def track(self, paths, after: tuple[str, ...] = ()) -> None:
        """About to write `paths` (inside `transaction`): journal them, so a write that dies is rolled back."""
        if self._looked is not None:
            self._spot_check(paths)
        if not self._journal.active:
            self._journal.begin(self.git.head(), after)
        self._journal.add(paths)

    def write_file(self, memory: Memory, fsync: bool = True) -> Path:
        """Write one memory file atomically (call inside `transaction`, then `commit`)."""
        path = memory.path or self.path_of(memory.id)
        data = model.dump(memory).encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            raise HafizaError(f"{memory.id} would be {len(data):,} bytes; a memory is at most {MAX_FILE_BYTES:,}")
        self.write_bytes(path, data, fsync)
        if path.name == f"{memory.id}.md":
            self._named.add(str(path.relative_to(self.root)))
        return path

    def write_bytes(self, path: Path, data: bytes, fsync: bool = True) -> Path:
        """Write any vault file atomically (call inside `transaction`, then `commit`), journaled."""
        self.track([path])
        if path.parent != self.memories_dir and path.parent.parent == self.memories_dir:
            path.parent.mkdir(mode=DIR_MODE, exist_ok=True)  # a subfolder of a large vault (vault/format/layout.py)
        atomic_write(path, data, fsync)
        self._journal.wrote(path, data)
        return path

    def commit(self, paths, subject: str, action: str, reason: str | None = None, *, body: str = "",
               trailers: dict[str, str] | None = None, actor: str | None = None) -> str:
        """Commit `paths` as one hafiza change (call inside `transaction`).

        Every byte committed passes the secret guard here, whichever writer produced it: the
        files, and the message (subject, reason, the actor an MCP client named itself).
        """
        from hafiza.vault.git import message
        from hafiza.vault.guard import secrets

        if reason is not None:
            _limit(reason, MAX_REASON_CHARS, "reason")
        text = message(subject, action, actor or self.actor, reason, body=body, trailers=trailers)
        secrets.check(text, "the commit message", field="reason")
        rel = [Path(p).relative_to(self.root) for p in paths]
        for path, name in zip(paths, rel):
            if os.path.lexists(path):
                self._scan_file(Path(path), str(name), "about to be committed")
        sha = self.git.commit(rel, text) if self._looked is None else self._commit_unlooked(rel, text)
        self._landed(rel, sha)
        return sha

    def _landed(self, paths, sha: str) -> None:
        """A commit of this write is in: its journal is done, and derived stores follow after the lock."""
        self.last_commit = sha
        self._journal.end()
        self._log(paths)
        self._commits += 1

    def _log(self, paths) -> None:
        """Tell readers which memory files a commit changed, so their index catches up by reading only those."""
        names = [name for name in map(changes.name_of, map(str, paths)) if name]
        self.touched += len(names)
        named = [changes.name_of(str(p)) for p in paths if str(p) in self._named]
        self._named.difference_update(map(str, paths))
        changes.record(self.root, names, named)

    def new_memory(self, text: str, *, title=None, type=None, tags=(), scope=None, id=None,
                   aliases=(), supersedes=(), source=None, created=None, taken=None, claims=None) -> Memory:
        """Validate input and build a Memory (not yet written). Raises HafizaError naming the field.

        The keywords are the frontmatter's own keys (`type`, `id`), as files, imports and agents name them.
        """
        given = _input(text=text, title=title, type=type, tags=tags, scope=scope, id=id, aliases=aliases,
                       supersedes=supersedes, source=source, claims=claims)
        self._check_fields({key: given[key] or "" for key in ("text", "title", "tags", "aliases", "scope", "source",
                                                              "claim_text", "id")})
        memory_id = self._new_id(given["id"], given["title"], self.taken() if taken is None else taken)
        try:
            day = model.as_date(created, "created") or dt.date.today()
            return model.from_metadata(
                {"id": memory_id, "type": given["type"], "title": given["title"], "scope": given["scope"] or "global",
                 "created": day, "updated": day, "tags": given["tag_list"], "aliases": given["alias_list"],
                 "supersedes": given["supersedes"], "source": given["source"] or "manual",
                 "claims": given["claims"]}, given["text"])
        except model.FieldError as exc:
            raise HafizaError(str(exc), field=exc.field) from None

    @staticmethod
    def _new_id(wanted: str | None, title: str, taken) -> str:
        """The id asked for, if valid and free; else one made from the title."""
        if not wanted:
            from hafiza.vault.guard import secrets

            # From the masked title: the id is the file name and the commit subject (issue 29).
            return unique_id(slugify(secrets.mask(title)), taken)
        if not is_valid_id(wanted):
            raise HafizaError(f"id {wanted!r} is not valid: use lowercase letters, digits and -", field="id")
        if wanted in taken:
            raise HafizaError(f"id {wanted!r} is already taken", field="id")
        return wanted

    def _check_fields(self, fields: dict[str, str]) -> None:
        """The secret guard over every field at once; the one at fault is named only when something is
        found (one scan instead of six: they are most of an import's time)."""
        from hafiza.vault.guard import secrets

        try:
            self.warnings += secrets.check("\n".join(fields.values()), "the memory", field="text")
        except SecretRefused:
            for what, value in fields.items():
                secrets.check(value, what)
            raise  # spread over two fields

    def remember(self, text: str, *, supersedes=(), reason: str | None = None, **fields) -> Memory:
        """Write a new memory; memories it supersedes are marked so in the same commit."""
        with self.transaction():
            memory = self.new_memory(text, supersedes=supersedes, **fields)
            twin = self._twin(memory)
            if twin is not None:
                raise AlreadyRemembered(twin)
            olds = [self._superseded(old_id, memory.id) for old_id in memory.supersedes]
            memory = inherit_aliases(memory, olds)
            paths = [self.write_file(memory)] + [self.write_file(old) for old in olds]
            ids = " ".join([memory.id] + [f"(supersedes {o.id})" for o in olds])
            self.commit(paths, f"remember {ids}", "remember", reason)
        return memory.evolve(path=paths[0])

    def _twin(self, memory: Memory) -> str | None:
        """The id of an active memory with `memory`'s text and scope, spacing and case aside. Its id was
        made from its title (`base`, `base-2`...): this one's, or the text's first words had its line
        breaks been elsewhere. Only those few files are read."""
        from hafiza.vault.format.text import first_line
        from hafiza.vault.guard import secrets

        key = _content_key(memory)
        for title in dict.fromkeys([memory.title, first_line(" ".join(memory.body.split()))]):
            base = slugify(secrets.mask(title))
            for n in range(1, 100):
                other = base if n == 1 else f"{base}-{n}"
                if layout.existing(self.memories_dir, other) is None:  # a stat: no header is read for it
                    break
                try:
                    found = self.get(other)
                except HafizaError:
                    continue
                if found.status == "active" and _content_key(found) == key:
                    return found.id
        return None

    def _superseded(self, old_id: str, new_id: str) -> Memory:
        if old_id == new_id:
            raise HafizaError("a memory cannot supersede itself", field="supersedes")
        try:
            old = self.get(old_id)
        except MemoryNotFound as exc:
            raise MemoryNotFound(f"cannot supersede {old_id!r}: no such memory", field="supersedes",
                                 near=exc.near) from None
        if old.status == "superseded" and old.superseded_by not in (None, new_id):
            raise HafizaError(f"{old_id} is already superseded by {old.superseded_by}", field="supersedes")
        return old.evolve(status="superseded", superseded_by=new_id, updated=dt.date.today())

    def supersede(self, old_id: str, new_id: str, reason: str | None = None) -> tuple[Memory, Memory]:
        """Mark `old_id` as replaced by the existing memory `new_id`."""
        with self.transaction():
            new = self.get(new_id)
            if old_id in new.supersedes and self.get(old_id).superseded_by == new.id:
                # Written again, the same files would make an empty commit, which the next `undo` takes back
                # while the supersession stays.
                raise HafizaError(f"{old_id} is already superseded by {new.id}; nothing written", field="old_id")
            old = self._superseded(old_id, new.id)
            if new.status != "active":
                raise HafizaError(f"{new_id} is {new.status}; only an active memory can supersede", field="new_id")
            new = inherit_aliases(new, [old]).evolve(supersedes=list(dict.fromkeys([*new.supersedes, old.id])),
                                                     updated=dt.date.today())
            paths = [self.write_file(old), self.write_file(new)]
            self.commit(paths, f"supersede {old.id} with {new.id}", "supersede", reason)
        return old, new

    def forget(self, memory_id: str, reason: str | None = None) -> Memory:
        """Archive a memory: it leaves recall, its file and history stay."""
        with self.transaction():
            memory = self.get(memory_id)
            if memory.status == "archived":
                raise HafizaError(f"{memory_id} is already archived")
            memory = memory.evolve(status="archived", archived_reason=reason, updated=dt.date.today())
            path = self.write_file(memory)
            self.commit([path], f"forget {memory.id}", "forget", reason)
        return memory

    def restore(self, memory_id: str, reason: str | None = None) -> Memory:
        """Bring an archived memory back into recall (its archive stays in the history)."""
        with self.transaction():
            memory = self.get(memory_id)
            if memory.status != "archived":
                later = f" by {memory.superseded_by}; supersede back or edit it" if memory.superseded_by else ""
                raise HafizaError(f"{memory_id} is {memory.status}{later}; only an archived memory is restored")
            memory = memory.evolve(status="active", archived_reason=None, updated=dt.date.today())
            path = self.write_file(memory)
            self.commit([path], f"restore {memory.id}", "restore", reason)
        return memory

    def add_aliases(self, memory_id: str, aliases, reason: str | None = None) -> tuple[Memory, list[str]]:
        """Add phrases people may type for an active memory; (memory, the ones that were new).

        Phrases it already has are skipped (see `_merge_aliases`); when none
        is new nothing is written or committed.
        """
        from hafiza.vault.guard import secrets

        phrases = _strings(aliases, "aliases")
        if not any(p.strip() for p in phrases):
            raise HafizaError("give at least one alias", field="aliases")
        with self.transaction():
            self.warnings += secrets.check(as_read(phrases), "aliases") or []
            memory = self.get(memory_id)
            if memory.status != "active":
                later = f" by {memory.superseded_by}" if memory.superseded_by else ""
                raise HafizaError(f"{memory.id} is {memory.status}{later} and out of recall; add aliases to an "
                                  "active memory", field="id")
            merged, added = _merge_aliases(memory.aliases, phrases)
            if added:
                memory = memory.evolve(aliases=merged, updated=dt.date.today())
                path = self.write_file(memory)
                self.commit([path], f"alias {memory.id}", "alias", reason)
        return memory, added

    def rewrite(self, memory_id: str, text: str, action: str = "edit", reason: str | None = None) -> Memory:
        """Replace a memory's whole file text (after an edit), validated and secret-checked."""
        from hafiza.vault.guard import secrets

        with self.transaction():
            old = self.get(memory_id)
            memory = model.parse(_limit(text, MAX_TEXT_CHARS + 10_000, "text"), old.path)
            if memory.id != old.id:
                raise HafizaError(f"the id cannot change in an edit ({old.id} -> {memory.id}); use supersede",
                                  field="id")
            self.warnings += secrets.check(model.dump(memory), "the edited memory", field="text") or []
            memory = memory.evolve(updated=dt.date.today())
            path = self.write_file(memory)
            self.commit([path], f"{action} {memory.id}", action, reason)
        return memory

    def edit(self, memory_id: str, text: str, reason: str | None = None, draft: Path | None = None) -> Memory:
        """`rewrite` for a person's edit (`hafiza edit`, the web page): an edit refused for any reason is kept
        under .hafiza/drafts/ (`save_draft`), replacing `draft` (the one it was resumed from), and the error says
        where, so no typing is ever lost; the error keeps its class and exit code and carries the draft's path as
        `draft`. An edit that lands removes `draft`."""
        try:
            memory = self.rewrite(memory_id, text, reason=reason)
        except HafizaError as exc:
            saved = self.save_draft(memory_id, text)
            if draft is not None and draft != saved:
                draft.unlink(missing_ok=True)  # the newer draft holds this one's text and the new changes
            masked = " with the secret masked" if isinstance(exc, SecretRefused) else ""
            exc.message = (f"{exc.message} (nothing changed; your edit is saved{masked} in {saved}; "
                           f"`hafiza edit {memory_id} --resume` reopens it)")
            exc.args = (exc.message,)
            exc.draft = saved
            raise exc from None
        if draft is not None:
            draft.unlink(missing_ok=True)  # applied
        return memory

    def update(self, memory_id: str, text: str, *, title: str | None = None, reason: str | None = None) -> Memory:
        """Replace an active memory's text (and title) in place, with the guards `remember` applies; one
        commit. A title hafiza made from the old text is made again from the new one."""
        with self.transaction():
            old = self.get(memory_id)
            if old.status != "active":
                raise HafizaError(f"{old.id} is {old.status}; remember a new memory that supersedes it instead",
                                  field="id")
            made_up = old.title == model.first_line(old.body)
            given = _input(text=text, title=title if title is not None else (None if made_up else old.title),
                           type=old.type, tags=old.tags, scope=old.scope, id=old.id, aliases=old.aliases,
                           supersedes=(), source=old.source, claims=None)
            self._check_fields({"text": given["text"], "title": given["title"]})
            memory = old.evolve(body=given["text"], title=given["title"], updated=dt.date.today())
            path = self.write_file(memory)
            self.commit([path], f"update {memory.id}", "update", reason)
        return memory

    def set_fact(self, entity: str, attribute: str, value: str, since=None, kind: str | None = None,
                 reason: str | None = None):
        """Set an attribute in the entity's fact note, the old value kept in its history: one commit
        (vault/facts.py). Returns (note, change)."""
        from hafiza.vault import facts

        return facts.set_value(self, entity, attribute, value, since, kind, reason)

    def remove_fact(self, entity: str, attribute: str, until=None, reason: str | None = None):
        """End an attribute of the entity's fact note, its values kept in the history: one commit
        (vault/facts.py). Returns (note, change)."""
        from hafiza.vault import facts

        return facts.remove_value(self, entity, attribute, until, reason)

    def save_draft(self, memory_id: str, text: str) -> Path:
        """Keep a refused edit under .hafiza/drafts/ (never committed), readable by its owner only and
        with any secret in it masked: the reason it was refused must not stay on disk in plain text."""
        from hafiza.vault.guard import secrets

        drafts = self.sidecar / "drafts"
        drafts.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        name = memory_id if is_valid_id(memory_id) else "memory"
        # To the microsecond, and never over another draft: two edits refused in the same second shared one
        # name, and the first one's error named a file the second had overwritten (new-user trial).
        stem = f"{name}-{dt.datetime.now():%Y%m%d-%H%M%S-%f}"
        for n in itertools.count():
            path = drafts / (f"{stem}.md" if n == 0 else f"{stem}-{n}.md")
            try:
                atomic_write(path, secrets.mask(text), replace=False)
                return path
            except FileExistsError:
                continue

    def latest_draft(self, memory_id: str) -> Path | None:
        """The newest draft `save_draft` kept for `memory_id`, if any (`hafiza edit ID --resume`)."""
        name = memory_id if is_valid_id(memory_id) else "memory"
        found = []
        for path in (self.sidecar / "drafts").glob(f"{name}-*.md"):
            # Only this id's (`staging-2-...` is another memory's draft); older drafts' names have no microseconds.
            match = _DRAFT.fullmatch(path.name[len(name) + 1:])
            if match:
                date, time, micro, n = match.groups()
                found.append(((date, time, micro or "", int(n or 0)), path))
        return max(found)[1] if found else None

    def import_many(self, items: list[dict], source: str, skip_invalid: bool = False,
                    dry_run: bool = False) -> tuple[list[Memory], list[str]]:
        """Write many memories as one commit; every item is validated before anything is written.

        An invalid item refuses the whole import, or with `skip_invalid` is left out and reported. An
        item whose text the vault already holds in the same scope is skipped and reported, so importing
        a file twice adds nothing the second time. `dry_run` checks all of it and writes nothing.
        Returns (imported, problems and skips).
        """
        if dry_run:
            self.require()
            return self._plan_import(items, source, skip_invalid)[::2]
        with self.transaction():
            memories, touched, problems = self._plan_import(items, source, skip_invalid)
            paths = [self.write_file(m, fsync=len(touched) < 20) for m in touched.values()]
            if paths:
                self.commit(paths, f"import {plural(len(memories), 'memory')}", "import", f"from {source}")
        if len(paths) >= PACK_AFTER:  # a loose object per file (404 MB at 100,000) until git packs them
            from hafiza.vault.git import pack

            pack(self.root, loose=True)
        return memories, problems

    def _plan_import(self, items: list[dict], source: str, skip_invalid: bool):
        taken, memories, problems, present = self.taken(), [], [], []
        held = {_content_key(m): m.id for m in self.load_all()[0]}  # what a second import of a file finds
        touched: dict[str, Memory] = {}
        for n, item in _superseded_first(items):
            if self._holds(item, source, taken):
                present.append(f"item {item.get('_where', n)}: {ALREADY} as {item['id']} (same id, text and scope)")
                continue
            try:
                memory = self._import_item(item, source, taken)
                olds = [touched.get(o) or self._superseded(o, memory.id) for o in memory.supersedes]
                memory = inherit_aliases(memory, olds)
            except HafizaError as exc:
                problem = f"item {item.get('_where', n)}: {exc.message}"
                if not skip_invalid:
                    exc.message, exc.args = problem, (problem,)  # keeps its class and exit code
                    raise exc from None
                problems.append(problem)
                continue
            if _content_key(memory) in held:
                present.append(f"item {item.get('_where', n)}: {ALREADY} as "
                               f"{held[_content_key(memory)]} (same text and scope)")
                continue
            taken.add(memory.id)
            memories.append(memory)
            touched[memory.id] = memory
            for old in olds:
                touched[old.id] = old.evolve(status="superseded", superseded_by=memory.id)
        return memories, touched, problems + present

    def _holds(self, item: dict, source: str, taken) -> bool:
        """Whether the vault holds this item under its own id, with the same text and scope: importing a file
        whose items carry ids a second time skips them (issue 29, item 6). The same id with other text is
        still refused as taken."""
        if not (isinstance(item.get("id"), str) and taken.held(item["id"])):
            return False
        try:
            held, given = self.get(item["id"]), self._import_item({**item, "id": None}, source, taken)
        except HafizaError:
            return False  # the item's own error is reported where it is imported
        return _content_key(held) == _content_key(given)

    def _import_item(self, item: dict, source: str, taken: set) -> Memory:
        memory = self.new_memory(
            item.get("text", ""), title=item.get("title"), type=item.get("type"), tags=item.get("tags") or (),
            scope=item.get("scope"), id=item.get("id"), aliases=item.get("aliases") or (),
            supersedes=item.get("supersedes") or (), source=item.get("source") or source,
            created=item.get("created"), taken=taken, claims=item.get("claims"))
        if item.get("last_used"):
            try:
                memory.last_used = model.as_date(item["last_used"], "last_used")
            except ValueError as exc:
                raise HafizaError(str(exc), field="last_used") from None
        return memory

    def record_use(self, ids, session: str | None = None) -> list[str]:
        """Log a use of each id (the only upward usefulness signal); unknown ids raise."""
        missing = self.unknown(ids)
        if missing:
            raise MemoryNotFound(f"no memory with id {missing[0]!r}", field="ids",
                                 near=near(missing[0], (m.id for m in self.load_all()[0])))
        usage.append(self.sidecar, "used", ids, session)
        return list(ids)

    def unknown(self, ids) -> list[str]:
        """Those of `ids` that name neither a memory of this vault nor an attribute of one of its fact notes."""
        from hafiza.vault.facts import note_of

        # A recalled fact's use is logged like a memory's (folding passes it by: its note has no counters).
        missing = [i for i in ids if not (is_valid_id(i) and os.path.isfile(layout.existing(self.memories_dir, i) or ""))
                   and not ((note := note_of(i)) and (self.root / note).is_file())]
        if missing:  # only then ask which file declares it, for hand-made files named otherwise
            taken = self.taken()
            missing = [i for i in missing if i not in taken]
        return missing

    def fold(self) -> int:
        """Write pending usage counts into frontmatter as one commit; returns memories touched."""
        with self.transaction():
            return self._fold_locked()

    def _fold_locked(self) -> int:
        counts = usage.begin_fold(self.sidecar)
        if counts:  # the folded log goes only once the counts are committed, even if this process dies
            if self._looked is not None:  # one look at all the files, not one git process per file
                self._spot_check(filter(None, (layout.existing(self.memories_dir, i) for i in counts if is_valid_id(i))))
            self.track([], after=(usage.FOLDING,))
        paths = []
        for memory_id, delta in counts.items():
            try:
                memory = self.get(memory_id)
            except (MemoryNotFound, FrontmatterError):
                continue  # a log line for a memory that no longer parses is dropped with the log
            folded = usage.total(memory.shown, memory.used, memory.last_used, delta)
            paths.append(self.write_file(memory.evolve(shown=folded.shown, used=folded.used,
                                                       last_used=folded.last_used)))
        if paths:
            self.commit(paths, f"fold usage of {plural(len(paths), 'memory')}", "fold")
        elif counts:
            self._journal.end()  # only lines for memories that are gone: nothing written, nothing to roll back
        usage.end_fold(self.sidecar)
        return len(paths)

    def _latest(self, redo: bool):
        """The newest hafiza change not already undone (or, for `redo`, the newest undo not redone); the
        person's own edits it merely recorded, and the commits this very call made on its way in, excluded."""
        undone: set[str] = set()
        for commit in self.git.log(UNDO_HORIZON):
            if commit.sha in self._implicit or not commit.is_hafiza or commit.action in ("init", "manual-edits"):
                continue
            reverted = (commit.trailers.get("Hafiza-Reason") or "").removeprefix("reverts ").strip()
            if commit.action in ("undo", "redo"):
                if commit.sha not in undone:
                    undone.add(reverted)
                    if redo and commit.action == "undo":
                        return commit
                continue
            if commit.sha not in undone and not redo:
                return commit
        raise HafizaError("there is nothing to redo" if redo else "there is no hafiza commit to undo")

    def undo(self, rev: str | None = None, redo: bool = False) -> tuple[str, str]:
        """Revert one hafiza commit: the latest change not yet undone (so repeated undos walk back), the
        one named, or with `redo` the latest undo. Refuses commits hafiza did not make."""
        from hafiza.vault.git import message

        with self.transaction(thorough=True):
            if rev is None:
                target = self._latest(redo)
            else:
                try:
                    target = self.git.get(rev)  # resolved first: a name like `--output=x` never reaches git
                except GitError:
                    raise HafizaError(f"no commit {rev!r} in the vault's history", field="commit") from None
                if not target.is_hafiza:
                    raise HafizaError(f"{target.sha[:10]} is not a hafiza commit ({target.subject!r}); "
                                      "use git revert for your own commits")
                if target.action == "init":
                    raise HafizaError("the vault's first commit cannot be undone")
            what = target.subject.removeprefix("hafiza: ")
            action = "redo" if redo and rev is None else "undo"
            touched = self.git.changed_paths(target.sha)
            self.track([self.root / p for p in touched])
            sha = self.git.revert(target.sha, message(f"{action} {what}", action, self.actor, f"reverts {target.sha}"))
            self._landed(touched, sha)
        return target.sha, sha


class Taken:
    """The ids in use, asked one at a time: a file by that name exists, or a file named otherwise declares
    it (a hand-made `notes.md` saying `id: deploy`), which the index knows. Taking an id so costs a stat,
    not a read of every header. Ids added here are held for the rest of the caller's plan (an import)."""

    def __init__(self, vault: Vault):
        self.vault = vault
        self.added: set[str] = set()
        self._declared: set[str] | None = None

    def __contains__(self, memory_id: str) -> bool:
        if memory_id in self.added or layout.existing(self.vault.memories_dir, memory_id):
            return True
        if self._declared is None:  # asked once: without an index, every header is read
            self._declared = self.vault.misnamed() if self.vault.misnamed else self.vault.taken_ids()
        return memory_id in self._declared

    def add(self, memory_id: str) -> None:
        self.added.add(memory_id)

    def held(self, memory_id: str) -> bool:
        """In use by the vault, not by an id this plan took."""
        return memory_id not in self.added and memory_id in self


def _read(path: Path) -> Memory:
    """A memory file, parsed; Quarantined when it holds a secret (a sync brought it in, or a hand edit): every
    reader of memories (get, load_all: show, MCP, the UI, the curator) sees that instead of its text."""
    from hafiza.vault.guard import quarantine

    return model.parse(quarantine.check(model.read_note(path), path), path)


def _superseded_first(items: list[dict]) -> list[tuple[int, dict]]:
    """(its place in the file, item), each item another one supersedes (by the id it gives) placed before that one:
    a file may list a newer memory before the older one it replaces. Otherwise in file order; a cycle is left in
    file order, where the supersede it names is refused as before."""
    by_id = {item["id"]: n for n, item in enumerate(items) if isinstance(item, dict) and isinstance(item.get("id"), str)}

    def olds(n: int) -> list[int]:
        given = items[n].get("supersedes") if isinstance(items[n], dict) else None
        given = [given] if isinstance(given, str) else given if isinstance(given, (list, tuple)) else []
        return [by_id[o] for o in given if isinstance(o, str) and o in by_id]

    order, seen = [], set()
    for start in range(len(items)):
        if start in seen:
            continue
        seen.add(start)
        stack = [(start, iter(olds(start)))]
        while stack:  # depth first without recursion: a long chain of supersedes in one file
            n, pending = stack[-1]
            old = next(pending, None)
            if old is None:
                stack.pop()
                order.append(n)
            elif old not in seen:
                seen.add(old)
                stack.append((old, iter(olds(old))))
    return [(n + 1, items[n]) for n in order]

