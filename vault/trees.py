"""git trees edited in memory: a commit of a few files made from its parent's trees, without git's index.

`git write-tree` reads and rewrites git's whole index to find the trees of a commit. At 100,000
memories that index is 13 MB and write-tree took ~100 ms of every write, whatever changed. A commit
that changes a few files needs only the trees on their paths: the parent's are read, edited here and
written back. git's own object format is fixed (gitformat-tree(5)): entries "<mode> <name>\\0<id>",
ordered by name, a folder's name compared as if it ended in "/".
"""

from __future__ import annotations

import hashlib

FOLDER = b"40000"
FILE = b"100644"
SUBMODULE = b"160000"  # a commit of another repository, not a blob


def parse(body: bytes, id_size: int) -> dict[bytes, tuple[bytes, bytes]]:
    """A tree object's entries: name -> (mode, raw id)."""
    entries, at = {}, 0
    while at < len(body):
        space = body.index(b" ", at)
        nul = body.index(b"\0", space)
        entries[body[space + 1:nul]] = (body[at:space], body[nul + 1:nul + 1 + id_size])
        at = nul + 1 + id_size
    return entries


def serialize(entries: dict[bytes, tuple[bytes, bytes]]) -> bytes:
    """The tree object holding `entries`, in git's order."""
    order = sorted(entries, key=lambda name: name + b"/" if entries[name][0] == FOLDER else name)
    return b"".join(entries[name][0] + b" " + name + b"\0" + entries[name][1] for name in order)


def object_id(body: bytes, id_size: int, kind: bytes = b"tree") -> bytes:
    """The raw id git gives an object of `kind` holding `body` (SHA-1, or SHA-256 in a repository that
    uses it)."""
    digest = hashlib.sha256 if id_size == 32 else hashlib.sha1
    return digest(b"%s %d\0" % (kind, len(body)) + body).digest()


def folders(paths: list[str]) -> list[str]:
    """Every folder on `paths` ("" the root), deepest first: the order a commit's trees are rebuilt in."""
    found = {""}
    for path in paths:
        parts = path.split("/")[:-1]
        found.update("/".join(parts[:n]) for n in range(1, len(parts) + 1))
    return sorted(found, key=lambda f: (-f.count("/") - bool(f), f))


def edit(trees: dict[str, dict | None], changes: dict[str, bytes | None],
         id_size: int) -> tuple[bytes, dict[bytes, bytes]]:
    """Apply `changes` (path -> raw blob id, or None to remove) to the parent's `trees` (folder -> entries,
    None where the parent has no such folder). Returns the new root tree's raw id and every new tree
    object (raw id -> body) that must be written. A folder left empty disappears, as in git."""
    work = {folder: dict(entries or {}) for folder, entries in trees.items()}
    for path, blob in changes.items():
        folder, _, name = path.rpartition("/")
        if blob is None:
            work[folder].pop(name.encode("utf-8", "surrogateescape"), None)
        else:
            work[folder][name.encode("utf-8", "surrogateescape")] = (FILE, blob)
    written: dict[bytes, bytes] = {}
    root = b""
    for folder in folders(list(changes)):
        entries = work[folder]
        parent, _, name = folder.rpartition("/")
        key = name.encode("utf-8", "surrogateescape")
        if not entries and folder:
            work[parent].pop(key, None)
            continue
        body = serialize(entries)
        sha = object_id(body, id_size)
        written[sha] = body
        if folder:
            work[parent][key] = (FOLDER, sha)
        else:
            root = sha
    return root, written
