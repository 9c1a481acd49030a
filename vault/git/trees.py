"""git trees edited in memory: a commit of a few files made from its parent's trees, without git's index.

`git write-tree` reads and rewrites git's whole index to find the trees of a commit. At 100,000
memories that index is 13 MB and write-tree took ~100 ms of every write, whatever changed. A commit
that changes a few files needs only the trees on their paths: the parent's are read, edited here and
written back. git's own object format is fixed (gitformat-tree(5)): entries "<mode> <name>\\0<id>",
ordered by name, a folder's name compared as if it ended in "/".

A tree is edited as bytes, entry by entry, never parsed whole: memories/ of a large vault lists its
2,000 first memories and 256 subfolders (156 KB), and parsing it into a dict and writing it out again
cost ~3 ms of every write, where finding the one entry that changes costs a fraction of that.
"""

from __future__ import annotations

import hashlib

FOLDER = b"40000"
FILE = b"100644"
SUBMODULE = b"160000"  # a commit of another repository, not a blob


class Unfit(Exception):
    """A change that is not a file's content: a path becomes a file where the tree holds a folder, a link
    or an executable, or the reverse. git's index knows how; the caller takes its way."""


def find(body: bytes, name: bytes, id_size: int, folder: bool = False) -> tuple[int, int, bytes | None]:
    """Where the entry `name` is in the tree object `body`: (start, end, mode); where a new entry of that name
    would go, if none: (at, at, None), `at` as for a file, or for a folder with `folder` (entries such as
    "name-x" and "name.md" sort between the two)."""
    at, size, slot = 0, len(body), None
    folder_key = name + b"/"  # no entry named `name`, of either kind, sorts after this
    while at < size:
        space = body.index(b" ", at)
        nul = body.index(b"\0", space)
        entry = body[space + 1:nul]
        if entry == name:
            return at, nul + 1 + id_size, body[at:space]
        key = entry + b"/" if body[at:space] == FOLDER else entry
        if slot is None and key > name:
            slot = at
        if key > folder_key:
            break
        at = nul + 1 + id_size
    if folder or slot is None:
        slot = at  # the first entry past `name/`, or the end
    return slot, slot, None


def put(body: bytes, name: bytes, mode: bytes, oid: bytes | None, id_size: int) -> bytes:
    """`body` with the entry `name` set to (`mode`, `oid`), or removed (`oid` None). Unfit where an entry of
    that name has another mode."""
    start, end, was = find(body, name, id_size, folder=mode == FOLDER)
    if was is not None and was != mode:
        raise Unfit(name.decode("utf-8", "surrogateescape"))
    if oid is None:
        return body[:start] + body[end:]
    return body[:start] + mode + b" " + name + b"\0" + oid + body[end:]


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


def edit(trees: dict[str, bytes | None], changes: dict[str, bytes | None],
         id_size: int) -> tuple[bytes, dict[bytes, bytes]]:
    """Apply `changes` (path -> raw blob id, or None to remove) to the parent's `trees` (folder -> tree object,
    None where the parent has no such folder). Returns the new root tree's raw id and every new tree
    object (raw id -> body) that must be written. A folder left empty disappears, as in git. Unfit where a
    path changes kind."""
    due: dict[str, list[tuple[bytes, bytes, bytes | None]]] = {}  # folder -> (name, mode, id) to set
    for path, blob in changes.items():
        folder, _, name = path.rpartition("/")
        due.setdefault(folder, []).append((name.encode("utf-8", "surrogateescape"), FILE, blob))
    written: dict[bytes, bytes] = {}
    root = b""
    for folder in folders(list(changes)):
        body = trees[folder] or b""
        for name, mode, oid in due.get(folder, ()):
            body = put(body, name, mode, oid, id_size)
        parent, _, name = folder.rpartition("/")
        if not folder:
            root = object_id(body, id_size)
            written[root] = body
        elif body:
            sha = object_id(body, id_size)
            written[sha] = body
            due.setdefault(parent, []).append((name.encode("utf-8", "surrogateescape"), FOLDER, sha))
        else:
            due.setdefault(parent, []).append((name.encode("utf-8", "surrogateescape"), FOLDER, None))
    return root, written
