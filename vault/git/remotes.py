"""Remotes and merges: what a sync between machines and a team's shared vault asks of git (vault/sync/)."""

from __future__ import annotations

from pathlib import Path

from hafiza.vault.errors import GitError
from .run import OFFLINE, _git, _reason, _require_git


class Remotes:
    """GitStore's remote and merge operations."""

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


    def commit_merge(self, msg: str) -> str:
        """Commit the merge under way (all of the index), hooks skipped; the new sha."""
        self._exec(("commit", "--quiet", "--no-verify", "-F", "-"), None, msg.encode("utf-8"))
        return self.head()


    def incoming(self, tip: str, have: list[str]) -> bytes:
        """What the commits reachable from `tip` and from none of `have` change, oldest first: each commit's id
        then its raw `diff-tree -r -c -z` entries (against its parent; a merge's only where it differs from
        every parent). Read from the object store alone, before any of it reaches the work tree."""
        revs = self._bytes("rev-list", "--reverse", "--topo-order", tip, *[f"^{sha}" for sha in have])
        if not revs.strip():
            return b""
        return self._bytes("diff-tree", "--stdin", "-r", "-c", "--root", "--no-renames", "-z", input=revs)

    @classmethod
    def clone(cls, url: str, root: Path):
        """Clone `url` into `root` without checking anything out (the caller looks at what came first)."""
        _require_git()
        proc = _git(["clone", "--quiet", "--no-tags", "--no-checkout", "--end-of-options", url, str(root)], Path.cwd(),
                    OFFLINE)
        if proc.returncode != 0:
            raise GitError(f"cannot clone {url}: {_reason(proc.stdout, proc.stderr, proc.returncode)}")
        return cls(root)



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


