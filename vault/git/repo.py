"""The git store: every git call hafiza makes goes through this module.

Plain `git` processes, not GitPython: importing GitPython cost every write ~130 ms (four times the
interpreter's own start), and each call here is one git process either way."""

from __future__ import annotations

import datetime as dt
import os
import re
import stat
import time
from pathlib import Path
from typing import NamedTuple

from hafiza.vault.errors import GitError

TRAILERS = ("Hafiza-Action", "Hafiza-Actor", "Hafiza-Reason")
_TRAILER = re.compile(r"^(Hafiza-[A-Za-z-]+): ?(.*)$", re.MULTILINE)
_FALLBACK_IDENTITY = ("hafiza", "hafiza@localhost")
# The user's identity from git's config or environment, never one git makes up from the host name; when
# there is none, hafiza commits as _FALLBACK_IDENTITY.
_OWN_IDENTITY = ["-c", "user.useConfigOnly=true"]
_FALLBACK_ARGS = [*_OWN_IDENTITY, "-c", f"user.name={_FALLBACK_IDENTITY[0]}", "-c", f"user.email={_FALLBACK_IDENTITY[1]}"]
_MAKES_OBJECTS = ("commit-tree", "var")  # fail on a missing identity before writing anything: tried, then again
_COMMITS_IN_PLACE = ("revert", "merge", "commit", "cherry-pick", "rebase", "stash", "tag", "pull")  # asked first
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


class StagedElsewhere(GitError):
    """git's index held changes besides a commit's own paths (a `git add` by hand): nothing was committed."""

    def __init__(self, paths: list[str]):
        super().__init__(f"git's index holds other changes: {', '.join(paths[:3])}")
        self.paths = paths


def blob_id(data: bytes, like: str) -> str:
    """The id git gives a file holding `data`, in the hash of the id `like` (SHA-1, or SHA-256)."""
    from .trees import object_id

    return object_id(data, len(like) // 2, b"blob").hex()


class Commit(NamedTuple):
    """One commit as `log` reads it. A named tuple, not a dataclass: importing dataclasses (inspect, ast)
    cost every write ~5 ms."""

    sha: str
    date: str
    author: str
    subject: str
    trailers: dict[str, str] = {}  # never changed in place
    body: str = ""

    @property
    def is_hafiza(self) -> bool:
        return self.subject.startswith("hafiza:") and "Hafiza-Action" in self.trailers

    @property
    def action(self) -> str | None:
        return self.trailers.get("Hafiza-Action")


def message(subject: str, action: str, actor: str, reason: str | None = None, *, body: str = "",
            trailers: dict[str, str] | None = None) -> str:
    """A commit message: `hafiza: <subject>`, an optional paragraph, then the structured trailers
    (each value on one line: a trailer that wraps is read back cut)."""
    lines = [f"hafiza: {subject}", ""]
    if body.strip():
        lines += [body.strip(), ""]
    lines += [f"Hafiza-Action: {action}", f"Hafiza-Actor: {actor}"]
    if reason:
        lines.append("Hafiza-Reason: " + " ".join(reason.split()))
    for key, value in (trailers or {}).items():
        lines.append(f"{key}: " + " ".join(str(value).split()))
    return "\n".join(lines) + "\n"


class GitStore:
    """A vault's git repository."""

    def __init__(self, root: Path):
        self.root = Path(root)  # a missing git is found by the first command (_exec): no PATH scan per write
        self.git_dir = self.root / ".git"
        if not self.git_dir.is_dir():
            raise GitError(f"{self.root} is not a git repository")
        self._identity, self._identity_asked = _OWN_IDENTITY, False
        self._read: tuple[str, dict] = ("", {})  # (a commit, its folders' trees as read): see `_trees_of`

    @classmethod
    def init(cls, root: Path) -> "GitStore":
        _require_git()
        _git(["init", "--quiet", "--initial-branch=main", str(root)], Path(root))
        return cls(root)

    def private(self) -> None:
        """Objects and refs git writes are the owner's alone (0600), whatever the umask."""
        self._run("config", "--local", "core.sharedRepository", "0600")

    def _run(self, *args, env: dict | None = None, paths=None, stdin=None) -> str:
        """Run git; `paths` go through a pathspec file (any number of them, none read as an option);
        `stdin` (NUL-separated strings) is git's input, for the commands that read paths from it.

        A pathspec is matched against every file git looks at, so a few thousand of them cost
        paths x files (a 100,000-memory import spent minutes in `git add`): many paths go to
        `update-index --stdin` instead (see `stage`)."""
        return self._bytes(*args, env=env, paths=paths, stdin=stdin).decode("utf-8", "surrogateescape")

    def _bytes(self, *args, env: dict | None = None, paths=None, stdin=None, input: bytes | None = None) -> bytes:
        if paths is not None:
            spec = b"".join(os.fsencode(str(p)) + b"\0" for p in paths)
            return self._with_spec(args, env, spec, as_pathspec=True)
        if stdin is not None:
            return self._with_spec(args, env, b"".join(os.fsencode(str(p)) + b"\0" for p in stdin))
        return self._exec(args, env, input)

    def _with_spec(self, args, env, data: bytes, as_pathspec: bool = False) -> bytes:
        """Run git with `data` in a file under .git/: named as its pathspec file, or as its stdin."""
        spec = self.git_dir / f"{PATHSPEC}{os.getpid()}"
        try:
            spec.write_bytes(data)
            if as_pathspec:
                return self._exec((*args, f"--pathspec-from-file={spec}", "--pathspec-file-nul"), env)
            with open(spec, "rb") as stream:
                return self._exec(args, env, stream)
        finally:
            spec.unlink(missing_ok=True)

    def _exec(self, args, env: dict | None, stdin=None) -> bytes:
        try:
            # Commit as the user where git knows them, else as hafiza (a fresh machine). Asking git first cost
            # every write a process: the commands that only make an object try first and learn from failing.
            if args[0] in _COMMITS_IN_PLACE:
                self._settle_identity()
            proc = _git([*self._identity, *args], self.root, env, stdin)
            if proc.returncode != 0 and args[0] in _MAKES_OBJECTS and self._settle_identity():
                if hasattr(stdin, "seek"):
                    stdin.seek(0)
                proc = _git([*self._identity, *args], self.root, env, stdin)
        except FileNotFoundError:
            raise GitError(NO_GIT) from None
        if proc.returncode != 0:
            reason = _reason(proc.stdout, proc.stderr, proc.returncode)
            if any(sign in reason for sign in _DISK_FULL) or _low_space(self.git_dir):
                raise GitError(DISK_FULL, disk_full=True) from None
            raise GitError(f"git {args[0]} failed: {reason}") from None
        return proc.stdout

    def _settle_identity(self) -> bool:
        """Ask git's config, once, whether it names the user (both name and email); if not, commit as hafiza
        from now on. Whether this call switched to hafiza's identity."""
        if self._identity_asked:
            return False
        self._identity_asked = True
        known = _git(["config", "--get-regexp", r"^user\.(name|email)$"], self.root).stdout.decode("utf-8", "replace")
        if {"user.name", "user.email"} <= {line.split(" ", 1)[0].lower() for line in known.splitlines()}:
            return False
        self._identity = _FALLBACK_ARGS
        return True

    def config(self, section: str, key: str) -> str | None:
        """A value of the vault's own git config (never synced: per machine, like a remote's URL)."""
        try:
            value = self._run("config", "--local", "--get", f"{section}.{key}").strip()
        except GitError:  # not set, or a config file git itself refuses
            return None
        return value or None

    def dirty(self) -> bool:
        return bool(self.changed())

    def changed(self) -> list[str]:
        """Paths with uncommitted changes (added, modified or untracked), relative to the root."""
        out = self._run("status", "--porcelain", "-z", "--untracked-files=all")
        entries = out.split("\0")
        paths, skip = [], False
        for entry in entries:
            if skip or len(entry) < 4:
                skip = False
                continue
            paths.append(entry[3:])
            skip = entry[0] in "RC"  # a rename is followed by its source path
        return paths

    def head(self) -> str | None:
        """The checked-out commit, or None before the first. Read from .git's files where they are plain
        (a loose or packed branch ref): every write asks, and a git process costs more than the read."""
        try:
            ref = (self.git_dir / "HEAD").read_text("ascii").strip()
            if _SHA.fullmatch(ref):
                return ref  # detached
            name = ref.removeprefix("ref: ")
            if ref.startswith("ref: refs/") and ".." not in name and not (self.git_dir / "reftable").exists():
                try:
                    sha = (self.git_dir / name).read_text("ascii").strip()
                    if _SHA.fullmatch(sha):
                        return sha
                except FileNotFoundError:
                    packed = (self.git_dir / "packed-refs").read_text("ascii") if (
                        self.git_dir / "packed-refs").exists() else ""
                    for line in packed.splitlines():
                        if line.endswith(f" {name}") and _SHA.fullmatch(line.split(" ", 1)[0]):
                            return line.split(" ", 1)[0]
                    return None  # a branch with no commit yet
        except (OSError, UnicodeDecodeError):
            pass
        proc = _git(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], self.root)
        return proc.stdout.decode().strip() or None if proc.returncode == 0 else None

    def commit(self, paths, msg: str, *, when: dt.datetime | None = None, only: bool = False) -> str:
        """Stage `paths` (all changes when None) and commit them; returns the new sha.

        Through plumbing (write-tree, commit-tree, update-ref), as `git commit --no-verify` would,
        minus its refresh of the whole index, which stats every file: 0.8 of a write's 1.5 s of git
        at 100,000 memories. The ref moves only from the parent this commit was made on.
        `only`: refuse (StagedElsewhere, nothing committed) if git's index held other changes already,
        which a `git add` made by hand leaves: the caller did not look at them first.
        """
        env = None
        if when is not None:
            stamp = when.isoformat()
            env = {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
        if paths is not None:
            sha = self._commit_files([str(p) for p in paths], msg, env)
            if sha is not None:
                return sha
        if paths is None:
            self._run("add", "-A")
        else:
            self.stage(paths)
        return self._commit_staged(msg, env, expect={str(p) for p in paths} if only and paths is not None else None)

    def _commit_files(self, rels: list[str], msg: str, env: dict | None) -> str | None:
        """Commit the files `rels` (as the work tree holds them; deleted where it holds none) on top of
        HEAD, from HEAD's own trees edited in memory (vault/git/trees.py) rather than from git's index, which
        `write-tree` reads and rewrites whole. git's index is then brought level for these paths only, so
        changes staged there by hand stay staged, not committed. None, and nothing done, where this does
        not apply (no commit yet, a folder, a link, an executable, a name git's line-based input cannot
        carry): the caller takes the index's way.

        The work overlaps in two steps: git makes the blobs (`_make_blobs`, in a thread) while another git
        reads HEAD's trees (`_trees_of`); then git's index is written to its lock file (`_ready_index`, in a
        thread) while the commit is made from the trees. The index is started only then, not sooner: its
        thread holds Python's lock for whole milliseconds, which the trees' read waited out."""
        from . import trees

        parent = self.head()
        present = self._plain_files(rels) if parent is not None and rels else None
        if present is None:
            return None
        folders = trees.folders(rels)
        blobs = Background(self._make_blobs, present)
        try:
            found = self._trees_of(parent, folders)
        except BaseException:
            blobs.wait()
            raise
        index = Background(self._ready_index, rels, present, blobs)
        sha = None
        try:
            made = blobs.result()
            sha = self._commit_trees(parent, found, folders, {rel: made.get(rel) for rel in rels}, msg, env)
        finally:
            staged = index.result()  # raises what went wrong unforeseen, having left git's lock free
            if sha is None and staged is not None:
                staged.abandon()
        if sha is None:
            return None
        if staged is None:
            self._run("update-index", "--add", "--remove", "-z", "--stdin", stdin=rels)
            self._move_head(parent, sha, msg)
            return sha
        try:
            staged.publish()
        except BaseException:
            staged.abandon()
            raise
        moving = Background(self._move_head, parent, sha, msg)
        staged.release()  # the old index's pages are freed while git moves the branch
        moving.result()
        return sha

    def _plain_files(self, rels: list[str]) -> dict[str, os.stat_result] | None:
        """Each of `rels` that exists, with its stat (taken before git reads it: a change made after is seen as
        one); None where one is not a plain file (a folder, a link, an executable) or its name one git's
        line-based input cannot carry."""
        if not all(map(_plain_rel, rels)):
            return None
        present = {}
        for rel in rels:
            try:
                info = os.lstat(self.root / rel)
            except FileNotFoundError:
                continue
            except OSError:
                return None
            if not stat.S_ISREG(info.st_mode) or info.st_mode & 0o111:
                return None
            present[rel] = info
        return present

    def _make_blobs(self, present: dict) -> dict[str, bytes]:
        """Each path's raw blob id, the blobs written by git, which applies the vault's attributes (eol,
        filters) as `git add` would."""
        if not present:
            return {}
        asked = "".join(f"{rel}\n" for rel in present).encode("utf-8", "surrogateescape")
        out = self._exec(("hash-object", "-w", "--stdin-paths"), None, asked)
        return dict(zip(present, (bytes.fromhex(line) for line in out.decode("ascii").split())))

    def _ready_index(self, rels: list[str], present: dict, blobs: Background):
        """git's index as it must be after the commit of `rels`, written whole to its lock file and held there
        (vault/git/index.py: a `Staged`); None where git must bring it level itself. The unchanged start of the
        index is written while git still makes the blobs: their ids are waited for only when the first new
        entry is due."""
        from . import index as gitindex

        def entries() -> dict:
            made = blobs.result()
            return {rel: (info, made[rel]) for rel, info in present.items()}

        try:
            return gitindex.prepare(self.git_dir, {rel: rel in present for rel in rels}, entries)
        except (gitindex.Unsupported, OSError, GitError):  # GitError: no blobs, which the commit says too
            return None

    def _move_head(self, parent: str, sha: str, msg: str) -> None:
        """The checked-out branch to `sha`, only from `parent` (all zeros: a branch with no commit yet)."""
        subject = msg.split("\n", 1)[0]
        self._run("update-ref", "-m", f"commit: {subject}", "HEAD", sha, parent)

    def _commit_trees(self, parent: str, found: list, folders: list[str], changes: dict[str, bytes | None],
                      msg: str, env: dict | None) -> str | None:
        """The commit of `changes` (path -> raw blob id, None: removed) made from the parent's trees `found` (of
        `folders`), not yet on any branch; None where a path's kind changes (git's index knows how)."""
        from . import trees

        if any(entry is not None and entry[0] != b"tree" for entry in found):
            return None  # a file where the commit has a folder
        try:
            root, written = trees.edit({folder: entry and entry[1] for folder, entry in zip(folders, found)},
                                       changes, len(parent) // 2)
        except trees.Unfit:
            return None
        if not self._write_trees(written):
            return None
        return self._run("commit-tree", root.hex(), "-p", parent, "-m", msg.strip("\n"), env=env).strip()

    def _write_trees(self, written: dict[bytes, bytes]) -> bool:
        """Store tree objects (raw id -> body) through git, one process for all. False (a tree of
        vault/git/trees.py that git names otherwise: never seen, but the index's way is then taken) if any
        id git gives differs from ours."""
        files = []
        try:
            for n, body in enumerate(written.values()):
                files.append(self.git_dir / f"{PATHSPEC}{os.getpid()}.{n}.tree")
                files[-1].write_bytes(body)
            out = self._exec(("hash-object", "-w", "-t", "tree", "--no-filters", "--stdin-paths"), None,
                             "".join(f"{f}\n" for f in files).encode("utf-8", "surrogateescape"))
        finally:
            for f in files:
                f.unlink(missing_ok=True)
        return out.decode("ascii").split() == [sha.hex() for sha in written]

    def _commit_staged(self, msg: str, env: dict | None = None, expect: set[str] | None = None) -> str:
        """Commit what git's index holds on top of HEAD; the new sha."""
        parent = self.head()
        tree = self._run("write-tree").strip()
        if expect is not None and parent is not None:
            changed = self._run("diff-tree", "-r", "-z", "--name-only", "--no-renames", parent, tree).split("\0")
            extra = sorted({p for p in changed if p} - expect)
            if extra:
                raise StagedElsewhere(extra)
        sha = self._run("commit-tree", tree, *(("-p", parent) if parent else ()), "-m", msg.strip("\n"),
                        env=env).strip()
        self._move_head(parent or "0" * 40, sha, msg)
        return sha

    def tune(self) -> None:
        """Per machine, never synced: git's untracked cache, for a folder of many files: `git status`
        (a write's hand-edit check) then skips re-listing folders that did not change.

        Not a split index or index version 4, though at 100,000 memories a split index cut staging one
        file from 0.15 to 0.04 s: git tools that are not git itself (isomorphic-git in Obsidian's git
        plugin, JGit in Eclipse) refuse such an index, and the vault is meant to be edited anywhere.
        The cache is an optional index extension, which readers that do not know it skip.

        And git's record of where the index's entries end (EOIE, optional too): with it a commit brings
        the index level for its own few paths without git rewriting all of it (vault/git/index.py)."""
        try:
            config = (self.git_dir / "config").read_text("utf-8", "replace").lower()
        except OSError:
            return
        for key in ("core.untrackedCache", "index.recordEndOfIndexEntries"):
            if key.rpartition(".")[2].lower() not in config:  # unset (or set by the user, who knows better)
                self._run("config", "--local", key, "true")

    def log(self, limit: int | None = 50, path: str | None = None, rev: str | None = None,
            first_parent: bool = False) -> list[Commit]:
        """Commits of `rev` (the checked-out branch by default), newest first."""
        args = ["log", LOG_FORMAT]
        if limit:
            args.append(f"-n{limit}")
        if first_parent:
            args.append("--first-parent")
        if self.head() is None:
            return []
        if rev:
            args.append(rev)
        if path:
            args += ["--", path]
        return _entries(self._run(*args))

    def resolve(self, rev: str) -> str:
        """The full sha of the commit `rev` names; GitError if it names none. A name that looks like
        an option (`--output=/tmp/x`) is refused before git sees it."""
        if not rev or rev.startswith("-") or any(c in rev for c in "\0\n\r"):
            raise GitError(f"{rev!r} is not a commit")
        try:
            out = self._run("rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
        except GitError:
            raise GitError(f"no commit {rev!r}") from None
        return out.strip()

    def get(self, rev: str) -> Commit:
        sha = self.resolve(rev)
        return _entries(self._run("log", "-n1", LOG_FORMAT, sha, "--"))[0]

    def tracked(self) -> set[str]:
        """Every path the last commit holds."""
        if self.head() is None:
            return set()
        return {p for p in self._run("ls-tree", "-r", "-z", "--name-only", "HEAD").split("\0") if p}

    def stage(self, paths) -> None:
        """Stage each of `paths` as it is in the work tree: added, changed or deleted. Files only, in time
        linear in their number (git reads them from stdin; no pathspec matching)."""
        paths = [str(p) for p in paths]
        folders = [p for p in paths if os.path.isdir(self.root / p) and not os.path.islink(self.root / p)]
        if folders:
            self._run("add", "-A", paths=folders)
        files = [p for p in paths if p not in folders]
        if files:
            self._run("update-index", "--add", "--remove", "-z", "--stdin", stdin=files)

    def blob_ids(self, rels) -> dict[str, str | None]:
        """Each path's blob id in the last commit (None where it holds none), from its folder's tree: one
        `cat-file` for all, and none more when the commit of this write reads the same trees."""
        from . import trees

        rels = [str(r) for r in rels]
        head = self.head()
        if head is None:
            return dict.fromkeys(rels)
        if not all(map(_plain_rel, rels)):
            asked = "".join(f"HEAD:{rel}\n" for rel in rels).encode("utf-8", "surrogateescape")
            out = self._exec(("cat-file", "--batch-check=%(objectname) %(objecttype)"), None, asked)
            lines = [line.partition(" ") for line in out.decode("utf-8", "surrogateescape").splitlines()]
            return {rel: sha if kind == "blob" else None for rel, (sha, _, kind) in zip(rels, lines)}
        folders = trees.folders(rels)  # every folder on the way, as the commit that follows reads them
        read = dict(zip(folders, self._trees_of(head, folders)))
        found, size = {}, len(head) // 2
        for rel in rels:
            folder, _, name = rel.rpartition("/")
            kind, body = read[folder] or (None, b"")
            _, end, mode = trees.find(body if kind == b"tree" else b"", name.encode("utf-8", "surrogateescape"), size)
            found[rel] = body[end - size:end].hex() if mode not in (None, trees.FOLDER, trees.SUBMODULE) else None
        return found

    def _trees_of(self, commit: str, folders: list[str]) -> list[tuple[bytes, bytes] | None]:
        """(type, bytes) of each of `folders` ("" the root) in `commit`, None where it has none; asked of git
        once per commit and folder (one `cat-file` for all), so a write's look for hand edits and its commit
        share one read. Only the last commit asked about is kept."""
        if self._read[0] != commit:
            self._read = (commit, {})
        kept = self._read[1]
        missing = [folder for folder in folders if folder not in kept]
        if missing:
            kept.update(zip(missing, self._objects([f"{commit}:{folder}" if folder else f"{commit}^{{tree}}"
                                                    for folder in missing])))
        return [kept[folder] for folder in folders]

    def commit_contents(self, files: dict[str, bytes], msg: str) -> str:
        """Commit `files` (path -> bytes) as given rather than as the work tree now holds them; the sha."""
        self._stage_contents(files)
        return self._commit_staged(msg)

    def _stage_contents(self, files: dict[str, bytes], env: dict | None = None) -> None:
        """Put `files` (path -> bytes) in git's index (the one `env` names, if it does) as given."""
        entries = [f"100644 {self._exec(('hash-object', '-w', '--stdin'), None, data).decode().strip()}\t{rel}"
                   for rel, data in files.items()]
        self._run("update-index", "-z", "--index-info", env=env, stdin=entries)

    def untrack(self, paths, changed: str, msg: str) -> str:
        """One commit that stops tracking `paths` (left in the work tree) and records the file `changed`
        (the .gitignore that keeps them out)."""
        if paths:
            self._run("rm", "--cached", "-r", "-q", "--ignore-unmatch", "--", *map(str, paths))
        self.stage([changed])
        return self._commit_staged(msg)

    def unstage(self, paths) -> None:
        """Take `paths` out of git's index again (as the last commit has them, or not at all)."""
        paths = [str(p) for p in paths]
        if self.head() is None:
            self._run("update-index", "--force-remove", "-z", "--stdin", stdin=paths)
            return
        wanted = set(paths)
        held = {}  # path -> "mode sha" in the last commit, read whole: a pathspec per path would be slow
        for entry in self._run("ls-tree", "-r", "-z", "--full-tree", "HEAD").split("\0"):
            if entry:
                meta, path = entry.split("\t", 1)
                if path in wanted:
                    mode, _, sha = meta.split(" ")
                    held[path] = f"{mode} {sha}"
        self._run("update-index", "-z", "--index-info",
                  stdin=[f"{held.get(p, '0 ' + '0' * 40)}\t{p}" for p in paths])

    def restore(self, paths) -> None:
        """Put `paths` (all in the last commit) back as the last commit holds them."""
        self.unstage(paths)
        self._run("checkout-index", "-f", "-z", "--stdin", stdin=[str(p) for p in paths])

    def leftovers(self) -> list[Path]:
        """Pathspec files of hafiza processes that died during a git call."""
        from hafiza.vault.files import alive

        found = []
        for path in self.git_dir.glob(f"{PATHSPEC}*"):
            pid = path.name[len(PATHSPEC):].split(".")[0]  # `<pid>`, `<pid>.index`, `<pid>.<n>.tree`
            if pid.isdigit() and not alive(int(pid)):
                found.append(path)
        return found

    def stale_lock(self) -> Path | None:
        """`.git/index.lock` when no live process owns it, else None.

        git leaves it behind when killed mid-write, and every later git write then fails. It is
        stale when no process has it open and no git process runs in this repository (git
        closes the file while it runs hooks or waits for an editor, so an open file alone is not
        enough); where /proc is missing, when it is older than STALE_LOCK_SECONDS.
        """
        lock = self.git_dir / "index.lock"
        try:
            age = time.time() - lock.stat().st_mtime
        except FileNotFoundError:
            return None
        owners = _lock_owners(lock, self.root)
        if owners is None:
            return lock if age > STALE_LOCK_SECONDS else None
        return None if owners else lock

    def revert(self, sha: str, msg: str) -> str:
        """Revert `sha` as one new commit with message `msg`; a conflict leaves nothing behind."""
        try:
            self._run("revert", "--no-commit", sha)
        except GitError as exc:
            try:
                self._run("revert", "--abort")
            except GitError:
                pass
            if "CONFLICT" not in exc.message and "could not revert" not in exc.message:
                raise  # the disk, a lock: not the history
            raise GitError(f"cannot undo {sha[:10]} cleanly ({exc.message}); later changes touch the same lines") from None
        return self._commit_staged(msg)

    def changed_paths(self, sha: str) -> list[str]:
        out = self._run("show", "--name-only", "-z", "--format=", "--no-renames", sha)
        return [p for p in out.strip("\n").split("\0") if p.strip()]

    # ---- branches other than the one checked out: written without touching the work tree

    def branch_tip(self, name: str) -> str | None:
        try:
            return self._run("rev-parse", "--verify", "--quiet", f"refs/heads/{name}").strip() or None
        except GitError:
            return None

    def branches(self, pattern: str) -> list[str]:
        """Local branch names matching the ref pattern `pattern` (e.g. `curate/*`), oldest tip first."""
        out = self._run("for-each-ref", "--sort=committerdate", "--format=%(refname:short)", f"refs/heads/{pattern}")
        return [line for line in out.splitlines() if line]

    def is_ancestor(self, sha: str, of: str) -> bool:
        try:
            self._run("merge-base", "--is-ancestor", sha, of)
            return True
        except GitError:
            return False

    def blob(self, rev: str, path: str) -> bytes | None:
        """The bytes of `path` in commit `rev`, or None when the commit has no such file."""
        try:
            return self._bytes("cat-file", "blob", f"{rev}:{path}")
        except GitError:
            return None

    def commit_to_branch(self, name: str, parent: str, files: dict[str, bytes], msg: str) -> str:
        """Commit `files` (path -> bytes) on top of `parent` as the new tip of branch `name`, through a
        private index: the work tree, the checked-out branch and git's own index stay as they are.
        `parent` must be the branch's tip (or, for a new branch, where it starts): a branch that moved
        meanwhile (another run writing to it) is refused, not overwritten."""
        old = self.branch_tip(name)
        if old not in (None, parent):
            raise GitError(f"branch {name} moved while this run wrote to it; run again")
        index = self.git_dir / f"{PATHSPEC}{os.getpid()}.index"
        # A whole index of its own, not split: a split one would leave a shared index behind in .git.
        env = {"GIT_INDEX_FILE": str(index), "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.splitIndex",
               "GIT_CONFIG_VALUE_0": "false"}
        try:
            self._run("read-tree", parent, env=env)
            self._stage_contents(files, env)
            tree = self._run("write-tree", env=env).strip()
        finally:
            index.unlink(missing_ok=True)
        sha = self._run("commit-tree", tree, "-p", parent, "-m", msg).strip()
        self._run("update-ref", f"refs/heads/{name}", sha, old or "0" * 40)
        return sha

    def commit_chain(self, name: str, parent: str, commits: list[tuple[dict[str, bytes], str]]) -> list[str]:
        """`commit_to_branch` for several commits at once, each on the one before: one `git fast-import`
        instead of seven processes a commit (capture files a 200-turn session in under 0.5 s with it,
        bench/results/capture-*). fast-import refuses to move a branch that is not its parent's descendant."""
        old = self.branch_tip(name)
        if old not in (None, parent):
            raise GitError(f"branch {name} moved while this run wrote to it; run again")
        author, committer = (self._run("var", f"GIT_{who}_IDENT").strip() for who in ("AUTHOR", "COMMITTER"))
        stream = bytearray()
        for n, (files, msg) in enumerate(commits, 1):
            text = msg.encode("utf-8")
            stream += f"commit refs/heads/{name}\nmark :{n}\nauthor {author}\ncommitter {committer}\n".encode()
            stream += b"data %d\n%s\n" % (len(text), text)
            if n == 1:
                stream += f"from {parent}\n".encode()
            for path, data in files.items():
                stream += f"M 100644 inline {path}\n".encode() + b"data %d\n%s\n" % (len(data), data)
        marks = self.git_dir / f"{PATHSPEC}{os.getpid()}.marks"
        try:
            self._exec(("fast-import", "--quiet", f"--export-marks={marks}"), None, bytes(stream))
            found = dict(line.split(" ", 1) for line in marks.read_text().splitlines())
        finally:
            marks.unlink(missing_ok=True)
        return [found[f":{n}"].strip() for n in range(1, len(commits) + 1)]

    def show(self, sha: str) -> str:
        """A commit's message and patch, as `git show` prints it (no colour, no pager)."""
        return self._run("show", "--no-color", "--format=commit %H%nDate:   %aI%n%n%B", sha, "--")

    def delete_branch(self, name: str) -> None:
        self._run("update-ref", "-d", f"refs/heads/{name}")

    def remote_url(self, remote: str) -> str | None:
        try:
            return self._run("remote", "get-url", remote).strip() or None
        except GitError:
            return None

    def push(self, remote: str, refspec: str, upstream: bool = False) -> None:
        self._run("push", "--quiet", *(["--set-upstream"] if upstream else []), remote, refspec, env=OFFLINE)

    # ---- sync: remotes and merges (vault/sync/machines.py)

    def set_config(self, key: str, value: str) -> None:
        self._run("config", "--local", key, value)

    def set_remote(self, name: str, url: str) -> None:
        self._run("remote", "set-url" if self.remote_url(name) else "add", name, url)

    def fetch(self, remote: str, branch: str) -> str | None:
        """Fetch `branch` of `remote` into refs/remotes/; its tip, or None when the remote has no such branch
        (an empty remote). GitError when the remote cannot be reached."""
        heads = self._run("ls-remote", "--heads", remote, f"refs/heads/{branch}", env=OFFLINE).split()
        if not heads:
            return None
        tracking = f"refs/remotes/{remote}/{branch}"
        try:
            have = self._run("rev-parse", "--verify", "--quiet", tracking).strip()
        except GitError:
            have = None
        if have != heads[0]:  # else fetched already: one network round trip for a sync with nothing new
            self._run("fetch", "--quiet", "--no-tags", remote, f"+refs/heads/{branch}:{tracking}", env=OFFLINE)
        return self.resolve(tracking)

    def check_out(self, sha: str, track: str | None = None) -> None:
        """Point the checked-out branch at `sha` and fill the work tree from it: a fresh clone's first
        checkout, which has nothing to lose. With `track` (remote/branch), the branch follows that."""
        self._run("reset", "--hard", "--quiet", sha)
        if track:
            remote, _, branch = track.partition("/")
            name = self.current_branch()
            self._run("config", f"branch.{name}.remote", remote)
            self._run("config", f"branch.{name}.merge", f"refs/heads/{branch}")

    def set_head(self, branch: str) -> None:
        """Check out `branch` before it has a commit (a clone of an empty remote names whatever it guessed)."""
        self._run("symbolic-ref", "HEAD", f"refs/heads/{branch}")

    def current_branch(self) -> str | None:
        """The checked-out branch's name; None when HEAD is detached."""
        proc = _git(["symbolic-ref", "--quiet", "--short", "HEAD"], self.root)
        return proc.stdout.decode().strip() or None if proc.returncode == 0 else None

    def merge_base(self, a: str, b: str) -> str | None:
        try:
            return self._run("merge-base", a, b).strip() or None
        except GitError:
            return None

    def merging(self) -> bool:
        """A merge is under way: git stopped on a conflict, or a merge was left unfinished."""
        return (self.git_dir / "MERGE_HEAD").exists()

    def merge_bases(self, a: str, b: str) -> list[str]:
        try:
            return self._run("merge-base", "--all", a, b).split()
        except GitError:
            return []

    def merge_start(self, rev: str, driver: str | None = None) -> None:
        """Merge `rev` into the work tree and index without committing; conflicts stay for `unmerged`.
        `driver` replaces the hafiza merge driver's command for this merge only."""
        config = ("-c", f"merge.hafiza.driver={driver}") if driver else ()
        try:
            # Unrelated histories too: two machines that each started a vault, then shared one remote.
            self._run(*config, "merge", "--no-commit", "--no-ff", "--no-edit", "--quiet", "--allow-unrelated-histories", rev)
        except GitError as exc:
            if not self.merging():  # it did not even start (a file in the way): nothing to finish
                raise exc from None

    def merge_abort(self) -> None:
        self._run("merge", "--abort")

    def fast_forward(self, rev: str) -> None:
        self._run("merge", "--ff-only", "--quiet", rev)

    def unmerged(self) -> list[str]:
        out = self._run("diff", "--name-only", "-z", "--diff-filter=U")
        return sorted({p for p in out.split("\0") if p})

    def blobs(self, specs: list[str]) -> list[bytes | None]:
        """The bytes of each `rev:path` (or `:stage:path`) in `specs`, None where there is no such file; one
        git process for all of them (a sync reads hundreds)."""
        return [entry[1] if entry and entry[0] == b"blob" else None for entry in self._objects(specs)]

    def _objects(self, specs: list[str]) -> list[tuple[bytes, bytes] | None]:
        """(type, bytes) of each object `specs` names (`rev:path`, `rev^{tree}`), None where there is none."""
        if not specs:
            return []
        if any("\n" in spec for spec in specs):
            raise GitError("a path with a newline cannot be read in a batch")
        out = self._exec(("cat-file", "--batch"), None, "".join(f"{spec}\n" for spec in specs).encode("utf-8"))
        found, at = [], 0
        for _ in specs:
            end = out.index(b"\n", at)
            header = out[at:end].split()
            if len(header) == 3 and header[2].isdigit():
                size = int(header[2])
                found.append((header[1], out[end + 1:end + 1 + size]))
                at = end + 2 + size
            else:  # `<spec> missing`
                found.append(None)
                at = end + 1
        return found

    def commit_merge(self, msg: str) -> str:
        """Commit the merge under way (all of the index), hooks skipped; the new sha."""
        self._exec(("commit", "--quiet", "--no-verify", "-F", "-"), None, msg.encode("utf-8"))
        return self.head()

    def diff_names(self, old: str | None, new: str, *folders: str) -> list[tuple[str, str]]:
        """(status letter, path) of files under `folders` that differ from `old` (all of them without one) to `new`."""
        if old is None:
            out = self._run("ls-tree", "-r", "-z", "--name-only", new, "--", *folders)
            return [("A", p) for p in out.split("\0") if p]
        out = self._run("diff", "--name-status", "-z", "--no-renames", old, new, "--", *folders)
        parts = [p for p in out.split("\0") if p]
        return list(zip(parts[::2], parts[1::2]))

    def grep(self, patterns: list[str], *paths: str) -> list[str]:
        """Files in the work tree (tracked or not, but not ignored) with a line holding any of the `patterns`."""
        args = ["grep", "-l", "-z", "-F", "--untracked"] + [x for p in patterns for x in ("-e", p)]
        proc = _git([*args, "--", *paths], self.root)
        return [p for p in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if p]

    def last_change(self, path: str) -> list[str]:
        """The newest commit that changed `path` and its parents: [sha, parent, ...] (two parents: a merge)."""
        out = self._run("log", "-n1", "--format=%H %P", "--", path)
        return out.split()

    @staticmethod
    def clone(url: str, root: Path) -> "GitStore":
        _require_git()
        proc = _git(["clone", "--quiet", "--no-tags", "--end-of-options", url, str(root)], Path.cwd(), OFFLINE)
        if proc.returncode != 0:
            raise GitError(f"cannot clone {url}: {_reason(proc.stdout, proc.stderr, proc.returncode)}")
        return GitStore(root)


def merge_text(ours: str, base: str, theirs: str, favor: str | None = None) -> tuple[str, int]:
    """Three-way merge of texts by `git merge-file`: (merged text, conflicting hunks). `favor` (ours, theirs,
    union) settles each conflicting hunk that way instead of leaving markers."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="hafiza-merge-") as tmp:
        names = []
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            (Path(tmp) / name).write_bytes(text.encode("utf-8"))
            names.append(name)
        proc = _git(["merge-file", "-p", *([f"--{favor}"] if favor else []), "-L", "ours", "-L", "ancestor",
                     "-L", "theirs", *names], Path(tmp))
    if proc.returncode > 127:
        raise GitError(f"git merge-file failed: {_reason(proc.stdout, proc.stderr, proc.returncode)}")
    return proc.stdout.decode("utf-8", "replace"), proc.returncode


# A project's own .git/config is not ours to trust: it may name a pager, an fsmonitor or a diff driver
# that runs a program. These switch every such hook off for the read-only queries below.
_SAFE = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.pager=cat",
         "-c", "diff.external=", "-c", "protocol.allow=never", "-c", "core.sshCommand=false",
         "-c", "log.showSignature=false", "-c", "gpg.program=false", "--no-pager",
         "--no-optional-locks")


def read_only(root: Path, *args: str, timeout: float = 30.0) -> str | None:
    """Output of a read-only git command in a project's repository (not the vault's), or None when it
    fails: a project that is not a repository, or git missing, only means less can be said about it.
    Callers pass names after `--` or `--end-of-options`; no shell is involved."""
    import subprocess

    command, *rest = args
    no_drivers = ["--no-ext-diff", "--no-textconv"] if command in ("log", "show") else []
    argv = ["git", *_SAFE, "-C", str(root), command, *no_drivers, *rest]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def renamed(root: Path, path: str, hops: int = 5) -> tuple[str, str] | None:
    """(new path, commit) when the project's history shows `path` (a file, or a folder's files) renamed,
    followed through later renames (at most `hops`) to where it is now.

    Limited to the old path, git shows a rename as a deletion: find the commit that removed it, then
    read that whole commit with rename detection."""
    rel = path.removeprefix("./").rstrip("/")
    if rel.startswith("/"):
        try:
            rel = str(Path(rel).relative_to(root))
        except ValueError:
            return None
    found = None
    for _ in range(hops):
        step = _renamed_once(root, rel)
        if step is None:
            break
        found = step
        rel = step[0]
        if (root / rel).exists():
            break
    return found


def _renamed_once(root: Path, rel: str) -> tuple[str, str] | None:
    deleted = (read_only(root, "log", "--diff-filter=D", "--format=%H", "-n", "1", "--", rel) or "").split()
    if not deleted:
        return None
    out = read_only(root, "show", "-M", "--name-status", "--format=", deleted[0]) or ""
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[0].startswith("R"):
            old, new = parts[1], parts[2]
            if old == rel:
                return new, deleted[0]
            if old.startswith(rel + "/") and new.endswith(old[len(rel):]):  # the folder moved
                return new[: len(new) - len(old) + len(rel)], deleted[0]
    return None


LOG_FORMAT = "--format=%H%x1f%aI%x1f%an%x1f%s%x1f%b%x1e"  # fields and records split by US and RS
STALE_LOCK_SECONDS = 600
DISK_FULL = "the disk is full; nothing was changed. Free some space and try again."
LOW_SPACE = 1 << 20  # a git write that fails with less free than this failed for room, whatever git said
# Remote commands never stop at a terminal prompt for a password (a sync from cron would hang): they fail.
OFFLINE = {"GIT_TERMINAL_PROMPT": "0"}
NO_GIT = "git is not installed or not on PATH; hafiza keeps the vault in git: install git and try again"
PATHSPEC = "hafiza-pathspec-"  # in .git/: the paths of one git call, removed after it
# What git says when a write finds no room (its own wording varies by where it failed).
_DISK_FULL = ("No space left on device", "Out of diskspace", "Disk quota exceeded")


def _plain_rel(rel: str) -> bool:
    """A path inside the work tree that git's line-based input can carry: no `..`, `.`, empty or `.git`
    part, no backslash or newline, not absolute (anything else is left to `git update-index`, which refuses
    what it must)."""
    parts = rel.split("/")
    return ("\n" not in rel and "\\" not in rel and "\r" not in rel
            and all(part not in ("", ".", "..") and part.lower() != ".git" for part in parts))


class Background:
    """`work(*args)` run in a thread from now on; `result()` waits for it and returns what it returned, or raises
    what it raised; `wait()` only waits. For git processes, which wait on their pipes, and file work, which
    lets go of Python's lock while the kernel works. Not concurrent.futures: its import (logging, queue)
    would cost every write ~6 ms."""

    def __init__(self, work, *args):
        import threading

        self._outcome: tuple = (False, None)

        def run() -> None:
            try:
                self._outcome = (True, work(*args))
            except BaseException as exc:  # raised in the caller's thread, by `result`
                self._outcome = (False, exc)

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def wait(self) -> None:
        self._thread.join()

    def result(self):
        self._thread.join()
        done, value = self._outcome
        if not done:
            raise value
        return value


def _require_git() -> None:
    import shutil

    if shutil.which("git") is None:
        raise GitError(NO_GIT)


def _git(args, cwd: Path, env: dict | None = None, stdin=None):
    """One git process in `cwd`: its CompletedProcess (bytes), whatever its exit code.

    Without closing the parent's descriptors in the child (`close_fds`): Python opens every file
    non-inheritable (PEP 446), so there are none to close but the three standard ones, and the
    closing walk cost each of a write's half-dozen git processes ~1.5 ms."""
    import subprocess

    return subprocess.run(["git", *args], cwd=cwd, env=None if env is None else {**os.environ, **env},
                          input=stdin if isinstance(stdin, bytes) else None,
                          stdin=None if isinstance(stdin, bytes) else (stdin or subprocess.DEVNULL),
                          capture_output=True, close_fds=False)


def pack(root: Path, loose: bool = False):
    """Start `git gc --auto` in `root`, detached and niced: git packs the loose objects once there are
    more than its threshold (gc.auto, 6,700) and otherwise returns at once. It takes its own lock and
    leaves objects a concurrent write still needs, so writers need not wait for it. `loose`: pack the
    loose objects now, whatever their number (`git repack -d`: after an import of many files)."""
    import subprocess

    work = ["repack", "-d", "-q"] if loose else ["gc", "--auto", "--quiet"]
    return subprocess.Popen(["nice", "-n", "10", "git", *work], cwd=root,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def _low_space(path) -> bool:
    try:
        st = os.statvfs(path)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < LOW_SPACE


def _lock_owners(lock: Path, root: Path) -> list[int] | None:
    """Pids that hold `lock` open or run git in `root`; None where /proc cannot tell."""
    proc = Path("/proc")
    if not (proc / "self" / "fd").is_dir():
        return None
    lock_s, root_s = str(lock), str(root.resolve())
    owners = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if (entry / "comm").read_text().strip() == "git":
                cwd = os.readlink(entry / "cwd")
                argv = (entry / "cmdline").read_bytes().split(b"\0")
                # A long-lived `git cat-file --batch` reader (an editor's git integration) holds no lock.
                if (cwd == root_s or cwd.startswith(root_s + os.sep)) and b"cat-file" not in argv:
                    owners.append(int(entry.name))
                    continue
            for fd in os.scandir(entry / "fd"):
                if os.readlink(fd.path) == lock_s:
                    owners.append(int(entry.name))
                    break
        except OSError:  # gone meanwhile, or another user's
            continue
    return owners


def _reason(stdout: bytes, stderr: bytes, code: int) -> str:
    """The informative line of git's output: a conflict, else an error, never a `hint:`."""
    lines = [line.strip() for text in (stdout, stderr) for line in text.decode("utf-8", "replace").splitlines()]
    lines = [line for line in lines if line and not line.startswith("hint:")]
    for prefix in ("CONFLICT", "fatal:", "error:"):
        found = [line for line in lines if line.startswith(prefix)]
        if found:
            return found[0]
    return lines[-1] if lines else f"exit status {code}"


def _entries(out: str) -> list[Commit]:
    return [_parse_entry(chunk) for chunk in out.split("\x1e") if chunk.strip()]


def _parse_entry(chunk: str) -> Commit:
    sha, date, author, subject, body = (chunk.strip("\n").split("\x1f") + [""] * 5)[:5]
    trailers = {k: v.strip() for k, v in _TRAILER.findall(body)}
    prose = "\n".join(line for line in body.splitlines() if not _TRAILER.match(line)).strip()
    return Commit(sha=sha, date=date, author=author, subject=subject, trailers=trailers, body=prose)
