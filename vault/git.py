"""The git store: every git call hafiza makes goes through this module."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path

import git

from .errors import GitError

TRAILERS = ("Hafiza-Action", "Hafiza-Actor", "Hafiza-Reason")
_TRAILER = re.compile(r"^(Hafiza-[A-Za-z]+): ?(.*)$", re.MULTILINE)
_FALLBACK_IDENTITY = ("hafiza", "hafiza@localhost")


@dataclass
class Commit:
    sha: str
    date: str
    author: str
    subject: str
    trailers: dict[str, str] = field(default_factory=dict)

    @property
    def is_hafiza(self) -> bool:
        return self.subject.startswith("hafiza:") and "Hafiza-Action" in self.trailers

    @property
    def action(self) -> str | None:
        return self.trailers.get("Hafiza-Action")


def message(subject: str, action: str, actor: str, reason: str | None = None) -> str:
    """A commit message: `hafiza: <subject>` plus the structured trailers."""
    lines = [f"hafiza: {subject}", "", f"Hafiza-Action: {action}", f"Hafiza-Actor: {actor}"]
    if reason:
        lines.append("Hafiza-Reason: " + " ".join(reason.split()))
    return "\n".join(lines) + "\n"


class GitStore:
    """A vault's git repository."""

    def __init__(self, root: Path):
        self.root = Path(root)
        try:
            self.repo = git.Repo(self.root)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise GitError(f"{self.root} is not a git repository") from None
        self._identity: list[str] | None = None

    @classmethod
    def init(cls, root: Path) -> "GitStore":
        git.Repo.init(root, initial_branch="main")
        return cls(root)

    def _run(self, *args, env: dict | None = None) -> str:
        try:
            return self.repo.git.execute(["git", *self._identity_args(), *args], env=env, strip_newline_in_stdout=False)
        except git.GitCommandError as exc:
            raise GitError(f"git {args[0]} failed: {_reason(exc)}") from None

    def _identity_args(self) -> list[str]:
        # Commit as the user where git knows them; a fresh machine without an identity still works.
        if self._identity is None:
            reader = self.repo.config_reader()
            has_identity = reader.has_option("user", "name") and reader.has_option("user", "email")
            self._identity = [] if has_identity else [
                "-c", f"user.name={_FALLBACK_IDENTITY[0]}", "-c", f"user.email={_FALLBACK_IDENTITY[1]}"]
        return self._identity

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
            self._run("add", "-A", "--", *[str(p) for p in paths])
        env = None
        if when is not None:
            stamp = when.isoformat()
            env = {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
        self._run("commit", "--quiet", "--no-verify", "--allow-empty", "-m", msg, env=env)
        return self.head()

    def log(self, limit: int | None = 50, path: str | None = None) -> list[Commit]:
        args = ["log", "--format=%H%x1f%aI%x1f%an%x1f%s%x1f%b%x1e"]
        if limit:
            args.append(f"-n{limit}")
        if self.head() is None:
            return []
        if path:
            args += ["--", path]
        out = self._run(*args)
        return [_parse_entry(chunk) for chunk in out.split("\x1e") if chunk.strip()]

    def get(self, rev: str) -> Commit:
        out = self._run("log", "-n1", "--format=%H%x1f%aI%x1f%an%x1f%s%x1f%b%x1e", rev, "--")
        return _parse_entry(out.split("\x1e")[0])

    def revert(self, sha: str, msg: str) -> str:
        """Revert `sha` as one new commit with message `msg`; a conflict leaves nothing behind."""
        try:
            self._run("revert", "--no-commit", sha)
        except GitError as exc:
            try:
                self._run("revert", "--abort")
            except GitError:
                pass
            raise GitError(f"cannot undo {sha[:10]} cleanly ({exc.message}); later changes touch the same lines") from None
        self._run("commit", "--quiet", "--no-verify", "--allow-empty", "-m", msg)
        return self.head()

    def changed_paths(self, sha: str) -> list[str]:
        out = self._run("show", "--name-only", "--format=", sha)
        return [line for line in out.splitlines() if line.strip()]


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


def _parse_entry(chunk: str) -> Commit:
    sha, date, author, subject, body = (chunk.strip("\n").split("\x1f") + [""] * 5)[:5]
    trailers = {k: v.strip() for k, v in _TRAILER.findall(body)}
    return Commit(sha=sha, date=date, author=author, subject=subject, trailers=trailers)
