"""Committing files: staged and committed as one change, the branch moved only from the commit it was made on.

A write's few files are committed from HEAD's trees edited in memory (vault/git/trees.py) and git's index
brought level for those paths only (vault/git/index.py); anything else through git's own index."""

from __future__ import annotations

import datetime as dt
import os
import stat
import threading
from functools import partial

from hafiza.vault.errors import GitError
from .run import PATHSPEC


class StagedElsewhere(GitError):
    """git's index held changes besides a commit's own paths (a `git add` by hand): nothing was committed."""

    def __init__(self, paths: list[str]):
        super().__init__(f"git's index holds other changes: {', '.join(paths[:3])}")
        self.paths = paths



class Committing:
    """GitStore's writes of the checked-out branch."""

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
        carry): the caller takes the index's way."""
        parent = self.head()
        present = self._plain_files(rels) if parent is not None and rels else None
        if present is None:
            return None
        sha, staged = self._commit_from_trees(parent, rels, present, msg, env)
        if sha is not None:
            self._publish(parent, sha, msg, rels, staged)
        return sha

    def _commit_from_trees(self, parent: str, rels: list[str], present: dict, msg: str, env: dict | None):
        """(the commit of `rels` made from `parent`'s trees, on no branch yet; git's index for it, written whole
        to its lock file and held there, or None where git must bring the index level). (None, None), and
        nothing left behind, where a path's kind changes (see `_commit_trees`).

        Two steps, each doing two things at once: git makes the blobs (in a thread) while another git reads
        the parent's trees; then git's index is written (in a thread) while the commit is made from the trees.
        The index is started only in the second step, not sooner: its thread holds Python's lock for whole
        milliseconds, which the trees' read waited out."""
        from . import trees

        folders = trees.folders(rels)
        blobs = Background(self._make_blobs, present)
        try:
            found = self._trees_of(parent, folders)
        except BaseException:
            blobs.join()  # no git left writing blobs behind the error
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
        return sha, staged if sha is not None else None

    def _publish(self, parent: str, sha: str, msg: str, rels: list[str], staged) -> None:
        """git's index brought level with the commit `sha` for `rels`, and the branch moved to it from `parent`:
        by `git update-index` where `staged` is None, else by putting the index `staged` holds in place (the old
        index's pages are freed while git moves the branch)."""
        if staged is None:
            self._run("update-index", "--add", "--remove", "-z", "--stdin", stdin=rels)
            self._move_head(parent, sha, msg)
            return
        try:
            staged.publish()
        except BaseException:
            staged.abandon()
            raise
        moving = Background(self._move_head, parent, sha, msg)
        staged.release()
        moving.result()

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

        try:
            return gitindex.prepare(self.git_dir, {rel: rel in present for rel in rels}, partial(_entries, present, blobs))
        except (gitindex.Unsupported, OSError, GitError):  # GitError: no blobs, which the commit says too
            return None

    def _move_head(self, parent: str, sha: str, msg: str) -> None:
        """The checked-out branch to `sha`, only from `parent` ("": a branch with no commit yet; git's all-zeros id
        would name SHA-1's length, which a SHA-256 repository refuses)."""
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
        self._move_head(parent or "", sha, msg)  # "": the branch must not exist yet, whatever git's hash
        return sha


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



def _plain_rel(rel: str) -> bool:
    """A path inside the work tree that git's line-based input can carry: no `..`, `.`, empty or `.git`
    part, no backslash or newline, not absolute (anything else is left to `git update-index`, which refuses
    what it must)."""
    parts = rel.split("/")
    return ("\n" not in rel and "\\" not in rel and "\r" not in rel
            and all(part not in ("", ".", "..") and part.lower() != ".git" for part in parts))


class Background(threading.Thread):
    """`work(*args)` run in a thread from now on; `result()` waits for it and returns what it returned, or raises
    what it raised. For git processes, which wait on their pipes, and file work, which lets go of Python's lock
    while the kernel works. Not concurrent.futures: its import (logging, queue) would cost every write ~6 ms
    (threading is imported by subprocess already)."""

    def __init__(self, work, *args):
        super().__init__(daemon=True)
        self._work, self._args = work, args
        self._returned = self._raised = None
        self.start()

    def run(self) -> None:
        try:
            self._returned = self._work(*self._args)
        except BaseException as exc:  # raised in the caller's thread, by `result`
            self._raised = exc

    def result(self):
        self.join()
        if self._raised is not None:
            raise self._raised
        return self._returned


def _entries(present: dict, blobs: Background) -> dict:
    """Each present path's stat and its blob's raw id, as git's index lists them (waits for git's blobs)."""
    made = blobs.result()
    return {rel: (info, made[rel]) for rel, info in present.items()}
