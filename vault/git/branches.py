"""Branches other than the one checked out (the curator's review branches), written without touching the
work tree or git's index."""

from __future__ import annotations

import os

from hafiza.vault.errors import GitError
from .run import PATHSPEC


class Branches:
    """GitStore's branch operations."""

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
        self._run("update-ref", f"refs/heads/{name}", sha, old or "")  # "": must not exist yet (SHA-1 or SHA-256)
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

