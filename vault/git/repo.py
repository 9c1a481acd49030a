"""The vault's repository (`GitStore`): reading its history and trees, and the look for a stale lock.

Its writes (vault/git/commit.py), branches (branches.py), remotes and merges (remotes.py) are GitStore's too;
every command runs through vault/git/run.py."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from hafiza.vault.errors import GitError
from .branches import Branches
from .commit import Committing, _plain_rel
from .commits import LOG_FORMAT, Commit, _entries
from .remotes import Remotes
from .run import _OWN_IDENTITY, PATHSPEC, Runner, _git, _require_git

_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
STALE_LOCK_SECONDS = 600


class GitStore(Committing, Branches, Remotes, Runner):
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
        gone = "0 " + "0" * len(self.head() or "0" * 40)  # mode 0: drop the entry; an id as long as the repo's
        self._run("update-index", "-z", "--index-info", stdin=[f"{held.get(p, gone)}\t{p}" for p in paths])

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


    def changed_paths(self, sha: str) -> list[str]:
        out = self._run("show", "--name-only", "-z", "--format=", "--no-renames", sha)
        return [p for p in out.strip("\n").split("\0") if p.strip()]

    # ---- branches other than the one checked out: written without touching the work tree

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


