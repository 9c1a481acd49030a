"""The git store: every git call hafiza makes goes through this module."""

from __future__ import annotations

import datetime as dt
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from .errors import GitError

try:
    import git
except ImportError:  # GitPython refuses to import when no git executable is on PATH
    git = None

TRAILERS = ("Hafiza-Action", "Hafiza-Actor", "Hafiza-Reason")
_TRAILER = re.compile(r"^(Hafiza-[A-Za-z-]+): ?(.*)$", re.MULTILINE)
_FALLBACK_IDENTITY = ("hafiza", "hafiza@localhost")


@dataclass
class Commit:
    sha: str
    date: str
    author: str
    subject: str
    trailers: dict[str, str] = field(default_factory=dict)
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
        self.root = Path(root)
        _require_git()
        try:
            self.repo = git.Repo(self.root)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise GitError(f"{self.root} is not a git repository") from None
        self._identity: list[str] | None = None

    @classmethod
    def init(cls, root: Path) -> "GitStore":
        _require_git()
        git.Repo.init(root, initial_branch="main")
        return cls(root)

    def private(self) -> None:
        """Objects and refs git writes are the owner's alone (0600), whatever the umask."""
        with self.repo.config_writer() as config:
            config.set_value("core", "sharedRepository", "0600")

    def _run(self, *args, env: dict | None = None, paths=None) -> str:
        """Run git; `paths` go through a pathspec file (any number of them, none read as an option)."""
        spec = Path(self.repo.git_dir) / f"{PATHSPEC}{os.getpid()}" if paths is not None else None
        try:
            if spec is not None:
                spec.write_bytes(b"".join(os.fsencode(str(p)) + b"\0" for p in paths))
                args = (*args, f"--pathspec-from-file={spec}", "--pathspec-file-nul")
            return self.repo.git.execute(["git", *self._identity_args(), *args], env=env, strip_newline_in_stdout=False)
        except git.GitCommandError as exc:
            reason = _reason(exc)
            if any(sign in reason for sign in _DISK_FULL) or _low_space(self.repo.git_dir):
                raise GitError(DISK_FULL, disk_full=True) from None
            raise GitError(f"git {args[0]} failed: {reason}") from None
        except git.GitCommandNotFound:
            raise GitError(NO_GIT) from None
        finally:
            if spec is not None:
                spec.unlink(missing_ok=True)

    def _identity_args(self) -> list[str]:
        # Commit as the user where git knows them; a fresh machine without an identity still works.
        if self._identity is None:
            reader = self.repo.config_reader()
            has_identity = reader.has_option("user", "name") and reader.has_option("user", "email")
            self._identity = [] if has_identity else [
                "-c", f"user.name={_FALLBACK_IDENTITY[0]}", "-c", f"user.email={_FALLBACK_IDENTITY[1]}"]
        return self._identity

    def config(self, section: str, key: str) -> str | None:
        """A value of the vault's own git config (never synced: per machine, like a remote's URL)."""
        try:
            value = self.repo.config_reader("repository").get_value(section, key, default=None)
        except Exception:  # a config file git itself would refuse
            return None
        return str(value) if value not in (None, "") else None

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
        try:
            return self.repo.head.commit.hexsha
        except ValueError:  # no commits yet
            return None

    def commit(self, paths, msg: str, *, when: dt.datetime | None = None) -> str:
        """Stage `paths` (all changes when None) and commit them; returns the new sha."""
        if paths is None:
            self._run("add", "-A")
        else:
            self._run("add", "-A", paths=paths)
        env = None
        if when is not None:
            stamp = when.isoformat()
            env = {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
        self._run("commit", "--quiet", "--no-verify", "--allow-empty", "-m", msg, env=env)
        return self.head()

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

    def unstage(self, paths) -> None:
        """Take `paths` out of git's index again (as the last commit has them, or not at all)."""
        if self.head() is not None:
            self._run("reset", "-q", "HEAD", paths=paths)

    def restore(self, paths) -> None:
        """Put `paths` (all in the last commit) back as the last commit holds them."""
        self._run("checkout", "HEAD", paths=paths)

    def leftovers(self) -> list[Path]:
        """Pathspec files of hafiza processes that died during a git call."""
        from .files import alive

        found = []
        for path in Path(self.repo.git_dir).glob(f"{PATHSPEC}*"):
            pid = path.name[len(PATHSPEC):].split(".")[0]  # `<pid>` or `<pid>.index`
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
        lock = Path(self.repo.git_dir) / "index.lock"
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
        self._run("commit", "--quiet", "--no-verify", "--allow-empty", "-m", msg)
        return self.head()

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
            entry = self.repo.commit(rev).tree / path
        except KeyError:
            return None
        return entry.data_stream.read()

    def commit_to_branch(self, name: str, parent: str, files: dict[str, bytes], msg: str) -> str:
        """Commit `files` (path -> bytes) on top of `parent` as the new tip of branch `name`, through a
        private index: the work tree, the checked-out branch and git's own index stay as they are.
        `parent` must be the branch's tip (or, for a new branch, where it starts): a branch that moved
        meanwhile (another run writing to it) is refused, not overwritten."""
        from io import BytesIO

        from gitdb import IStream

        old = self.branch_tip(name)
        if old not in (None, parent):
            raise GitError(f"branch {name} moved while this run wrote to it; run again")
        index = Path(self.repo.git_dir) / f"{PATHSPEC}{os.getpid()}.index"
        env = {"GIT_INDEX_FILE": str(index)}
        try:
            self._run("read-tree", parent, env=env)
            entries = []
            for path, data in files.items():
                blob = self.repo.odb.store(IStream("blob", len(data), BytesIO(data))).hexsha.decode()
                entries += ["--cacheinfo", f"100644,{blob},{path}"]
            self._run("update-index", "--add", *entries, env=env)
            tree = self._run("write-tree", env=env).strip()
        finally:
            index.unlink(missing_ok=True)
        sha = self._run("commit-tree", tree, "-p", parent, "-m", msg).strip()
        self._run("update-ref", f"refs/heads/{name}", sha, old or "0" * 40)
        return sha

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

    def push(self, remote: str, refspec: str) -> None:
        self._run("push", "--quiet", remote, refspec)


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
NO_GIT = "git is not installed or not on PATH; hafiza keeps the vault in git: install git and try again"
PATHSPEC = "hafiza-pathspec-"  # in .git/: the paths of one git call, removed after it
# What git says when a write finds no room (its own wording varies by where it failed).
_DISK_FULL = ("No space left on device", "Out of diskspace", "Disk quota exceeded")


def _require_git() -> None:
    if git is None:
        raise GitError(NO_GIT)


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
                # GitPython keeps `git cat-file --batch` readers alive in the repository; they hold no lock.
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


def _unwrap(text) -> str:
    """GitPython quotes captured output as `stderr: '...'`; take the quotes off."""
    text = str(text or "").strip()
    for tag in ("stderr: '", "stdout: '"):
        if text.startswith(tag) and text.endswith("'"):
            return text[len(tag):-1]
    return text


def _reason(exc) -> str:
    """The informative line of git's output: a conflict, else an error, never a `hint:`."""
    lines = [line.strip() for text in (exc.stdout, exc.stderr) for line in _unwrap(text).splitlines()]
    lines = [line for line in lines if line and not line.startswith("hint:")]
    for prefix in ("CONFLICT", "fatal:", "error:"):
        found = [line for line in lines if line.startswith(prefix)]
        if found:
            return found[0]
    return lines[-1] if lines else str(exc)


def _entries(out: str) -> list[Commit]:
    return [_parse_entry(chunk) for chunk in out.split("\x1e") if chunk.strip()]


def _parse_entry(chunk: str) -> Commit:
    sha, date, author, subject, body = (chunk.strip("\n").split("\x1f") + [""] * 5)[:5]
    trailers = {k: v.strip() for k, v in _TRAILER.findall(body)}
    prose = "\n".join(line for line in body.splitlines() if not _TRAILER.match(line)).strip()
    return Commit(sha=sha, date=date, author=author, subject=subject, trailers=trailers, body=prose)
