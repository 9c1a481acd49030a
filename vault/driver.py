"""git's merge driver for vault files: `python -m hafiza.vault.driver %O %A %B %P`.

Registered in the vault's own .git/config by `hafiza init` and `hafiza sync` (vault/sync/machines.py), chosen by
the committed .gitattributes. git hands it the ancestor (%O), our version (%A, where the result goes) and
theirs (%B) as temp files; it merges them by the file's nature (vault/sync/merge.py `reconcile`) and exits 0,
so a merge never stops inside YAML. Any failure exits 1 with our file untouched: git then records a
conflict, which `hafiza sync` settles from the index's stages with the same rules.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .files import atomic_write


def run(base: Path, ours: Path, theirs: Path, path: str, machine: str | None = None) -> str | None:
    """Merge into `ours` on `machine` (this one's name, recorded where both texts are kept); what a person may
    want to know, or None."""
    from .sync.merge import reconcile

    found = reconcile(path, base.read_bytes() or None, ours.read_bytes(), theirs.read_bytes(), machine=machine)
    atomic_write(ours, found.data or b"", mode=None)
    return found.note


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print("usage: python -m hafiza.vault.driver ANCESTOR OURS THEIRS PATH", file=sys.stderr)
        return 2
    base, ours, theirs, path = argv
    try:
        note = run(Path(base), Path(ours), Path(theirs), path, _machine())
    except Exception as exc:  # git must see a conflict, never a half-written file or a traceback
        print(f"hafiza: {path}: not merged ({exc.__class__.__name__}: {exc}); `hafiza sync` settles it",
              file=sys.stderr)
        return 1
    if note:
        print(f"hafiza: {path}: {note}", file=sys.stderr)
    return 0


def _machine() -> str | None:
    """This machine's name as `hafiza init` and `hafiza sync` recorded it in the vault's git config (git runs a
    driver at the top of the work tree); None where it was never recorded."""
    from .errors import GitError
    from .git import GitStore
    from .sync.machines import MACHINE

    try:
        return GitStore(Path.cwd()).config(*MACHINE)
    except GitError:
        return None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
