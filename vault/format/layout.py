"""Where a memory's file lives in memories/: `memories/<id>.md`, or in a large vault `memories/<xx>/<id>.md`.

git stores each folder as one tree object listing every entry, and a commit that changes one file in a
folder writes that folder's tree anew. With every memory in one folder, each commit at 100,000 memories
wrote an 8 MB tree (~0.4 s of `git write-tree`), however little changed. So once memories/ holds
FLAT_LIMIT files, new memories go into one of 256 subfolders named by two hex digits of a checksum of
the id (`memories/3f/deploy-from-main.md`): a commit then writes a tree of a few hundred entries. Files
already in place never move; small vaults stay flat, as people browse them.

The file name is the id in both places, so an editor's file finder finds a memory by its id. Only
these subfolders hold memories: any other folder in memories/ is not read, as before.
"""

from __future__ import annotations

import os
import zlib
from itertools import islice
from pathlib import Path

FLAT_LIMIT = 2_000  # files in memories/ itself before new memories go into subfolders
SHARDS = tuple(f"{n:02x}" for n in range(256))
_SHARD_NAMES = frozenset(SHARDS)


def shard_of(memory_id: str) -> str:
    """The subfolder a new memory goes into in a large vault: the same for an id on every machine."""
    return f"{zlib.crc32(memory_id.encode('utf-8')) & 0xFF:02x}"


def is_shard(name: str) -> bool:
    return name in _SHARD_NAMES


def is_memory_rel(rel: str) -> bool:
    """Whether a path relative to memories/ (`x.md`, `3f/x.md`) names a memory file."""
    head, _, rest = rel.rpartition("/")
    return rest.endswith(".md") and (not head or is_shard(head))


def candidates(folder: Path, memory_id: str) -> tuple[Path, Path]:
    """The two places a memory's file can be, the flat one first."""
    return folder / f"{memory_id}.md", folder / shard_of(memory_id) / f"{memory_id}.md"


def existing(folder: Path, memory_id: str) -> Path | None:
    """The file named for `memory_id`, wherever it is (a symlink by that name counts: it is refused later)."""
    for path in candidates(folder, memory_id):
        if os.path.lexists(path):
            return path
    return None


def shard_folders(folder: Path) -> list[Path]:
    """The subfolders that exist, in order."""
    return [folder / name for name, _ in shard_stats(folder)]


def shard_stats(folder: Path) -> list[tuple[str, os.stat_result]]:
    """(name, stat) of each subfolder that exists, in order: 256 stats relative to the folder (a third of the
    cost of 256 full paths), never a listing of memories/ (which may be large). None at all when the folder's
    link count says it has no subfolder (2 on ext4 and most file systems; btrfs says 1 whatever it holds,
    and is looked at)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return []
    found = []
    try:
        if os.fstat(fd).st_nlink == 2:
            return []
        for name in SHARDS:
            try:
                info = os.stat(name, dir_fd=fd)
            except OSError:
                continue
            if info.st_mode & 0o170000 == 0o040000:
                found.append((name, info))
    finally:
        os.close(fd)
    return found


def memory_files(folder: Path) -> list[Path]:
    """Every memory file's path, sorted: `*.md` in memories/ and in its subfolders."""
    paths = list(folder.glob("*.md"))
    for sub in shard_folders(folder):
        paths += sub.glob("*.md")
    return sorted(paths)


def rel_name(path: Path) -> str:
    """`x.md` or `3f/x.md`: a memory file's name relative to memories/, as the index knows it."""
    return f"{path.parent.name}/{path.name}" if is_shard(path.parent.name) else path.name


def vault_rel(path: Path) -> str:
    """`memories/x.md` or `memories/3f/x.md`: a memory file's path in the vault, as git names it."""
    return f"memories/{rel_name(path)}"


def memory_rel(memory) -> str:
    """`vault_rel` of a memory read from the vault; for one not written yet, where a small vault puts it
    (a writer placing a new file asks `Vault.rel`, which knows the vault's size)."""
    return vault_rel(memory.path) if memory.path else f"memories/{memory.id}.md"


class Placer:
    """Where new memories go during one write: flat while memories/ has room, then in subfolders. Counts
    at most FLAT_LIMIT entries of memories/ (once), so deciding costs the same at any vault size."""

    def __init__(self, folder: Path):
        self.folder = folder
        self._room: int | None = None

    def place(self, memory_id: str) -> Path:
        found = existing(self.folder, memory_id)
        if found is not None:
            return found
        if self._room is None:
            try:
                with os.scandir(self.folder) as it:
                    self._room = FLAT_LIMIT - sum(1 for _ in islice(it, FLAT_LIMIT))
            except FileNotFoundError:
                self._room = FLAT_LIMIT
        if self._room > 0:
            self._room -= 1
            return self.folder / f"{memory_id}.md"
        return self.folder / shard_of(memory_id) / f"{memory_id}.md"
