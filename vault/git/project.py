"""A project's own repository (not the vault's), read only: what the curator and verifier ask of a codebase."""

from __future__ import annotations

from pathlib import Path

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


