"""The Vault: reading memories, and every write as one locked, atomic, committed change."""

from __future__ import annotations

import datetime as dt
from contextlib import contextmanager
from pathlib import Path

from . import model, secrets, usage
from .errors import FrontmatterError, GitError, HafizaError, MemoryNotFound, SecretRefused, VaultNotFound
from .ids import is_valid_id, slugify, unique_id
from .files import atomic_write
from .lock import DEFAULT_TIMEOUT, locked
from .model import Memory
from .paths import MEMORIES, SIDECAR, is_vault
from .text import fold

GITIGNORE = f"{SIDECAR}/\n"
FOLD_AFTER = dt.timedelta(days=1)  # fold the usage log on any commit once it is this old
# Aliases are searched and embedded with the memory, and weighed on every prompt: a few short phrases.
MAX_ALIASES = 16
MAX_ALIAS_CHARS = 100


def _text(value, what: str, numbers: bool = True) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if numbers and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise HafizaError(f"{what}: expected a string, got {value!r}", field=what)


def _strings(value, what: str) -> list[str]:
    """A list of strings from None, one string, or a list/tuple of strings (and numbers)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [_text(v, what) for v in value if v is not None]
    raise HafizaError(f"{what}: expected a string or a list of strings, got {value!r}", field=what)


def _merge_aliases(existing, new) -> tuple[list[str], list[str]]:
    """(all aliases, the new ones among them): spacing collapsed, empty ones dropped, and a phrase
    already there skipped, compared as search compares words ("İzmir" = "izmir", "şifre" = "sifre").
    Raises HafizaError past MAX_ALIASES or MAX_ALIAS_CHARS."""
    kept: list[str] = []
    seen: set[str] = set()

    def take(phrases) -> list[str]:
        taken = []
        for phrase in phrases:
            phrase = " ".join(phrase.split())
            key = fold(phrase)
            if not phrase or key in seen:
                continue
            if len(phrase) > MAX_ALIAS_CHARS:
                raise HafizaError(f"alias {phrase[:40]!r}... has {len(phrase)} characters; at most "
                                  f"{MAX_ALIAS_CHARS} (an alias is a short phrase someone would type)",
                                  field="aliases")
            seen.add(key)
            taken.append(phrase)
        kept.extend(taken)
        return taken

    take(existing)
    added = take(new)
    if len(kept) > MAX_ALIASES:
        raise HafizaError(f"that makes {len(kept)} aliases; at most {MAX_ALIASES} per memory", field="aliases")
    return kept, added


class Vault:
    """A memory vault rooted at `root`: a git repository of markdown files."""

    def __init__(self, root: Path, actor: str = "cli", lock_timeout: float = DEFAULT_TIMEOUT):
        self.root = Path(root)
        self.actor = actor
        self.lock_timeout = lock_timeout  # seconds a writer waits for the lock before VaultLocked
        self._implicit: set[str] = set()  # commits `transaction` made before the caller's change
        self.memories_dir = self.root / MEMORIES
        self.sidecar = self.root / SIDECAR
        self.lock_path = self.sidecar / "write.lock"
        self._git = None

    # ---- setup

    @classmethod
    def init(cls, root: Path, actor: str = "cli") -> "Vault":
        """Create (or adopt) a vault at `root`; idempotent."""
        from .git import GitStore, message

        root = Path(root)
        (root / MEMORIES).mkdir(parents=True, exist_ok=True)
        fresh = not (root / ".git").exists()
        store = GitStore.init(root) if fresh else GitStore(root)
        ignore = root / ".gitignore"
        existing = ignore.read_text() if ignore.exists() else ""
        if GITIGNORE.strip() not in existing.splitlines():
            ignore.write_text(existing + ("" if existing.endswith("\n") or not existing else "\n") + GITIGNORE)
        keep = root / MEMORIES / ".gitkeep"
        if not any((root / MEMORIES).iterdir()):
            keep.touch()
        vault = cls(root, actor)
        if fresh or store.dirty():
            with locked(vault.lock_path):
                store.commit(None, message("init vault", "init", actor))
        return vault

    def exists(self) -> bool:
        return is_vault(self.root)

    def require(self) -> "Vault":
        if not self.exists():
            raise VaultNotFound(f"no vault at {self.root}; create one with `hafiza init`")
        return self

    @property
    def git(self):
        if self._git is None:
            from .git import GitStore

            self._git = GitStore(self.root)
        return self._git

    # ---- reading

    def paths(self) -> list[Path]:
        return sorted(self.memories_dir.glob("*.md"))

    def load_all(self) -> tuple[list[Memory], list[FrontmatterError]]:
        """Every memory that parses, and an error per file that does not (or repeats an id)."""
        memories, errors, seen = [], [], {}
        for path in self.paths():
            try:
                memory = model.read(path)
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
        path = self.memories_dir / f"{memory_id}.md"
        if is_valid_id(memory_id) and path.exists():
            return model.read(path)
        for memory in self.load_all()[0]:  # a hand-made file whose name differs from its id
            if memory.id == memory_id:
                return memory
        raise MemoryNotFound(f"no memory with id {memory_id!r}", field="id")

    def taken_ids(self) -> set[str]:
        """Ids in use: every file's name, and the id a hand-made file declares under another name.

        Without the declared ids a new memory could reuse one, and the index would skip it as
        a duplicate. Only each header's `id:` line is read, not the YAML (~70 ms at 5,000 files).
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
    def transaction(self):
        """Hold the writer lock; commit hand edits first, fold a stale usage log."""
        from .git import message

        self.require()
        with locked(self.lock_path, self.lock_timeout):
            # Commits made on the way in are not what the caller asked for: undo must not pick them.
            self._implicit = set()
            changed = self.git.changed()
            if changed:
                self._check_hand_edits(changed)
                self._implicit.add(self.git.commit(None, message("record manual edits", "manual-edits", "user")))
            first = usage.oldest(self.sidecar)
            if first is not None and dt.datetime.now() - first > FOLD_AFTER:
                before = self.git.head()
                self._fold_locked()
                self._implicit |= {self.git.head()} - {before}
            yield

    def _check_hand_edits(self, paths: list[str]) -> None:
        """Hand edits are committed before hafiza's own change: never with a secret in them."""
        for rel in paths:
            path = self.root / rel
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue  # deleted, a folder, or binary: nothing a secret scan can read
            found = secrets.find_secrets(text)
            if found:
                raise SecretRefused(f"{rel} (a hand edit, not yet committed) contains what looks like a secret "
                                    f"({', '.join(found)}); remove it, then try again. Nothing was committed.",
                                    field="path")

    def write_file(self, memory: Memory, fsync: bool = True) -> Path:
        """Write one memory file atomically (call inside `transaction`, then `commit`)."""
        path = memory.path or self.memories_dir / f"{memory.id}.md"
        atomic_write(path, model.dump(memory), fsync)
        return path

    def commit(self, paths, subject: str, action: str, reason: str | None = None) -> str:
        """Commit `paths` as one hafiza change (call inside `transaction`)."""
        from .git import message

        rel = [Path(p).relative_to(self.root) for p in paths]
        return self.git.commit(rel, message(subject, action, self.actor, reason))

    def new_memory(self, text: str, *, title=None, type=None, tags=(), scope=None, id=None,
                   aliases=(), supersedes=(), source=None, created=None, taken=None) -> Memory:
        """Validate input and build a Memory (not yet written). Raises HafizaError naming the field."""
        # Input may come from JSONL, markdown headers or MCP: a number is text, a lone string a list.
        text, title = _text(text, "text"), _text(title, "title")
        type, scope, id = (_text(v, k, numbers=False) for k, v in (("type", type), ("scope", scope), ("id", id)))
        tags, aliases = _strings(tags, "tags"), _merge_aliases((), _strings(aliases, "aliases"))[0]
        supersedes = _strings(supersedes, "supersedes")
        text = (text or "").strip()
        if not text:
            raise HafizaError("the memory text is empty", field="text")
        type = (type or "knowledge").strip().lower()
        if type not in model.TYPES:
            raise HafizaError(f"unknown type {type!r}; use one of {', '.join(model.TYPES)}", field="type")
        title = (title or model.first_line(text)).strip()
        for what, value in (("text", text), ("title", title), ("tags", " ".join(tags)), ("aliases", " ".join(aliases))):
            secrets.check(value, what)
        taken = self.taken_ids() if taken is None else taken
        if id:
            if not is_valid_id(id):
                raise HafizaError(f"id {id!r} is not valid: use lowercase letters, digits and -", field="id")
            if id in taken:
                raise HafizaError(f"id {id!r} is already taken", field="id")
        else:
            id = unique_id(slugify(title), taken)
        try:
            created = model.as_date(created, "created") or dt.date.today()
            return model.from_metadata(
                {"id": id, "type": type, "title": title, "scope": scope or "global", "created": created,
                 "updated": created, "tags": list(tags), "aliases": list(aliases),
                 "supersedes": list(supersedes), "source": source or "manual"}, text)
        except ValueError as exc:
            field = str(exc).split(":", 1)[0]
            raise HafizaError(str(exc), field=field) from None

    def remember(self, text: str, *, supersedes=(), reason: str | None = None, **fields) -> Memory:
        """Write a new memory; memories it supersedes are marked so in the same commit."""
        with self.transaction():
            memory = self.new_memory(text, supersedes=supersedes, **fields)
            olds = [self._superseded(old_id, memory.id) for old_id in memory.supersedes]
            paths = [self.write_file(memory)] + [self.write_file(old) for old in olds]
            ids = " ".join([memory.id] + [f"(supersedes {o.id})" for o in olds])
            self.commit(paths, f"remember {ids}", "remember", reason)
        return memory.evolve(path=paths[0])

    def _superseded(self, old_id: str, new_id: str) -> Memory:
        if old_id == new_id:
            raise HafizaError("a memory cannot supersede itself", field="supersedes")
        try:
            old = self.get(old_id)
        except MemoryNotFound:
            raise MemoryNotFound(f"cannot supersede {old_id!r}: no such memory", field="supersedes") from None
        if old.status == "superseded" and old.superseded_by not in (None, new_id):
            raise HafizaError(f"{old_id} is already superseded by {old.superseded_by}", field="supersedes")
        return old.evolve(status="superseded", superseded_by=new_id, updated=dt.date.today())

    def supersede(self, old_id: str, new_id: str, reason: str | None = None) -> tuple[Memory, Memory]:
        """Mark `old_id` as replaced by the existing memory `new_id`."""
        with self.transaction():
            new = self.get(new_id)
            old = self._superseded(old_id, new.id)
            if new.status != "active":
                raise HafizaError(f"{new_id} is {new.status}; only an active memory can supersede", field="new_id")
            new = new.evolve(supersedes=list(dict.fromkeys([*new.supersedes, old.id])), updated=dt.date.today())
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

    def add_aliases(self, memory_id: str, aliases, reason: str | None = None) -> tuple[Memory, list[str]]:
        """Add phrases people may type for an active memory; (memory, the ones that were new).

        Phrases it already has are skipped (see `_merge_aliases`); when none
        is new nothing is written or committed.
        """
        phrases = _strings(aliases, "aliases")
        if not any(p.strip() for p in phrases):
            raise HafizaError("give at least one alias", field="aliases")
        secrets.check(" ".join(phrases), "aliases")
        with self.transaction():
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
        with self.transaction():
            old = self.get(memory_id)
            memory = model.parse(text, old.path)
            if memory.id != old.id:
                raise HafizaError(f"the id cannot change in an edit ({old.id} -> {memory.id}); use supersede",
                                  field="id")
            secrets.check(model.dump(memory), "the edited memory", field="text")
            memory = memory.evolve(updated=dt.date.today())
            path = self.write_file(memory)
            self.commit([path], f"{action} {memory.id}", action, reason)
        return memory

    def import_many(self, items: list[dict], source: str, skip_invalid: bool = False) -> tuple[list[Memory], list[str]]:
        """Write many memories as one commit; every item is validated before anything is written.

        An invalid item refuses the whole import, or with `skip_invalid` is left
        out and reported. Returns (imported, problems).
        """
        with self.transaction():
            taken, memories, problems = self.taken_ids(), [], []
            touched: dict[str, Memory] = {}
            for n, item in enumerate(items, 1):
                try:
                    memory = self._import_item(item, source, taken)
                    olds = [touched.get(o) or self._superseded(o, memory.id) for o in memory.supersedes]
                except HafizaError as exc:
                    problem = f"item {item.get('_where', n)}: {exc.message}"
                    if not skip_invalid:
                        exc.message, exc.args = problem, (problem,)  # keeps its class and exit code
                        raise exc from None
                    problems.append(problem)
                    continue
                taken.add(memory.id)
                memories.append(memory)
                touched[memory.id] = memory
                for old in olds:
                    touched[old.id] = old.evolve(status="superseded", superseded_by=memory.id)
            paths = [self.write_file(m, fsync=len(touched) < 20) for m in touched.values()]
            if paths:
                self.commit(paths, f"import {len(memories)} memories", "import", f"from {source}")
        return memories, problems

    def _import_item(self, item: dict, source: str, taken: set) -> Memory:
        memory = self.new_memory(
            item.get("text", ""), title=item.get("title"), type=item.get("type"), tags=item.get("tags") or (),
            scope=item.get("scope"), id=item.get("id"), aliases=item.get("aliases") or (),
            supersedes=item.get("supersedes") or (), source=item.get("source") or source,
            created=item.get("created"), taken=taken)
        if item.get("last_used"):
            try:
                memory.last_used = model.as_date(item["last_used"], "last_used")
            except ValueError as exc:
                raise HafizaError(str(exc), field="last_used") from None
        return memory

    def record_use(self, ids, session: str | None = None) -> list[str]:
        """Log a use of each id (the only upward usefulness signal); unknown ids raise."""
        missing = [i for i in ids if not (is_valid_id(i) and (self.memories_dir / f"{i}.md").is_file())]
        if missing:  # only then read every header, for hand-made files named otherwise
            taken = self.taken_ids()
            missing = [i for i in missing if i not in taken]
        if missing:
            raise MemoryNotFound(f"no memory with id {missing[0]!r}", field="ids")
        usage.append(self.sidecar, "used", ids, session)
        return list(ids)

    def fold(self) -> int:
        """Write pending usage counts into frontmatter as one commit; returns memories touched."""
        with self.transaction():
            return self._fold_locked()

    def _fold_locked(self) -> int:
        counts = usage.begin_fold(self.sidecar)
        paths = []
        for memory_id, delta in counts.items():
            try:
                memory = self.get(memory_id)
            except (MemoryNotFound, FrontmatterError):
                continue  # a log line for a memory that no longer parses is dropped with the log
            last = max(filter(None, [memory.last_used, delta.last_used]), default=None)
            paths.append(self.write_file(memory.evolve(
                shown=memory.shown + delta.shown, used=memory.used + delta.used, last_used=last)))
        if paths:
            self.commit(paths, f"fold usage of {len(paths)} memories", "fold")
        usage.end_fold(self.sidecar)
        return len(paths)

    def undo(self, rev: str | None = None) -> tuple[str, str]:
        """Revert one hafiza commit (the latest by default); refuses commits hafiza did not make."""
        from .git import message

        with self.transaction():
            if rev is None:
                # The latest change hafiza made; a person's own edits it merely recorded are theirs to revert.
                target = next((c for c in self.git.log(200) if c.is_hafiza and c.sha not in self._implicit
                               and c.action not in ("init", "manual-edits")), None)
                if target is None:
                    raise HafizaError("there is no hafiza commit to undo")
            else:
                try:
                    target = self.git.get(rev)
                except GitError:
                    raise HafizaError(f"no commit {rev!r} in the vault's history", field="commit") from None
                if not target.is_hafiza:
                    raise HafizaError(f"{target.sha[:10]} is not a hafiza commit ({target.subject!r}); "
                                      "use git revert for your own commits")
                if target.action == "init":
                    raise HafizaError("the vault's first commit cannot be undone")
            what = target.subject.removeprefix("hafiza: ")
            sha = self.git.revert(target.sha, message(f"undo {what}", "undo", self.actor, f"reverts {target.sha}"))
        return target.sha, sha
