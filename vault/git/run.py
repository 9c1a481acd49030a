"""Running git: one process per call, as the user where git knows them, else as hafiza, and git's failures
turned into one-line GitErrors (a full disk named as such).

Plain `git` processes, not GitPython: importing GitPython cost every write ~130 ms (four times the
interpreter's own start), and each call here is one git process either way."""

from __future__ import annotations

import os
from pathlib import Path

from hafiza.vault.errors import GitError

_FALLBACK_IDENTITY = ("hafiza", "hafiza@localhost")
# The user's identity from git's config or environment, never one git makes up from the host name; when
# there is none, hafiza commits as _FALLBACK_IDENTITY.
_OWN_IDENTITY = ["-c", "user.useConfigOnly=true"]
_FALLBACK_ARGS = [*_OWN_IDENTITY, "-c", f"user.name={_FALLBACK_IDENTITY[0]}", "-c", f"user.email={_FALLBACK_IDENTITY[1]}"]
_MAKES_OBJECTS = ("commit-tree", "var")  # fail on a missing identity before writing anything: tried, then again
_COMMITS_IN_PLACE = ("revert", "merge", "commit", "cherry-pick", "rebase", "stash", "tag", "pull")  # asked first

DISK_FULL = "the disk is full; nothing was changed. Free some space and try again."
LOW_SPACE = 1 << 20  # a git write that fails with less free than this failed for room, whatever git said
# Remote commands never stop at a terminal prompt for a password (a sync from cron would hang): they fail.
OFFLINE = {"GIT_TERMINAL_PROMPT": "0"}
NO_GIT = "git is not installed or not on PATH; hafiza keeps the vault in git: install git and try again"
PATHSPEC = "hafiza-pathspec-"  # in .git/: the paths of one git call, removed after it
# What git says when a write finds no room (its own wording varies by where it failed).
_DISK_FULL = ("No space left on device", "Out of diskspace", "Disk quota exceeded")


class Runner:
    """How a repository's commands run (GitStore's base): `root`, `git_dir` and the identity are set by GitStore."""

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



def _reason(stdout: bytes, stderr: bytes, code: int) -> str:
    """The informative line of git's output: a conflict, else an error, never a `hint:`."""
    lines = [line.strip() for text in (stdout, stderr) for line in text.decode("utf-8", "replace").splitlines()]
    lines = [line for line in lines if line and not line.startswith("hint:")]
    for prefix in ("CONFLICT", "fatal:", "error:"):
        found = [line for line in lines if line.startswith(prefix)]
        if found:
            return found[0]
    return lines[-1] if lines else f"exit status {code}"


