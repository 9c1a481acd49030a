"""git's object store read and written by hafiza itself, for the few objects a write needs.

A write at 100,000 memories spent ~30 of its ~110 ms in five git processes, two of them only to read
HEAD's trees on the written paths (`cat-file`) and store the new ones (`hash-object`). Both are a file
away: a loose object is one zlib stream ("<type> <size>\\0<body>") at objects/<2 hex>/<rest>, and a packed
one is found through its pack's index (gitformat-pack(5)), whole or as a delta on another object.
Anything else (an index or pack version not known here, objects borrowed from another repository, an
object that does not hash to its id) reads as None, and the caller asks git.
"""

from __future__ import annotations

import mmap
import os
import zlib

from .trees import object_id

KINDS = {1: b"commit", 2: b"tree", 3: b"blob", 4: b"tag"}
OFS_DELTA, REF_DELTA = 6, 7
_INDEX_MAGIC = b"\377tOc"
_CHUNK = 1 << 16
_MAX_DEPTH = 100  # delta chains longer than git's own limit (--depth 50, at most 4095) are left to git
MAX_OBJECT = 64 << 20  # bytes: a larger object (or one that says so) is left to git, never inflated here


class Objects:
    """The objects of one repository (its .git folder), SHA-1 or SHA-256 by `id_size`, read and written.
    Used for one write and closed (`with`): a pack a `git gc` deletes stays on disk while it is mapped."""

    def __init__(self, git_dir, id_size: int = 20):
        self.dir = os.path.join(git_dir, "objects")
        self.id_size = id_size
        self._packs: list[_Pack] | None = None

    def __enter__(self) -> Objects:
        return self

    def __exit__(self, *exc) -> None:
        for pack in self._packs or ():
            pack.close()
        self._packs = None

    def read(self, oid: bytes, depth: int = 0) -> tuple[bytes, bytes] | None:
        """(type, body) of the object `oid`; None where it is not found here (git may still know it), or what
        is found does not hash to `oid` (a damaged file: git says what is wrong)."""
        found = self._loose(oid)
        if found is None:
            for pack in self.packs():
                at = pack.find(oid)
                if at is not None:
                    found = pack.read(at, self, depth)
                    break
        if found is None or object_id(found[1], self.id_size, found[0]) != oid:
            return None
        return found

    def packs(self) -> list[_Pack]:
        if self._packs is None:
            self._packs = []
            folder = os.path.join(self.dir, "pack")
            try:
                names = sorted(os.listdir(folder))
            except OSError:
                names = []
            for name in names:
                if name.endswith(".idx") and name[:-4] + ".pack" in names:
                    try:
                        self._packs.append(_Pack(os.path.join(folder, name[:-4]), self.id_size))
                    except (OSError, ValueError):
                        continue  # being written or removed by a `git gc`, or a format not known here
        return self._packs

    def _loose(self, oid: bytes) -> tuple[bytes, bytes] | None:
        name = oid.hex()
        stream = zlib.decompressobj()
        try:
            with open(os.path.join(self.dir, name[:2], name[2:]), "rb") as f:
                data = stream.decompress(f.read(MAX_OBJECT), MAX_OBJECT + 64)
        except (OSError, zlib.error):
            return None
        if not stream.eof:
            return None  # cut short, or larger than MAX_OBJECT
        header, _, body = data.partition(b"\0")
        kind, _, size = header.partition(b" ")
        return (kind, body) if size.isdigit() and int(size) == len(body) else None

    def write(self, written: dict[bytes, bytes], kind: bytes = b"tree") -> None:
        """Store objects (raw id -> body) as git's own loose objects are, for a private vault
        (core.sharedRepository 0600: files 0400, folders 0700): zlib at git's loose level (1), a temp file
        linked into place, an object already there kept and only its time renewed (so a `git gc` running
        meanwhile does not prune it as unused). OSError where a folder or file cannot be made."""
        for oid, body in written.items():
            name = oid.hex()
            folder = os.path.join(self.dir, name[:2])
            final = os.path.join(folder, name[2:])
            try:
                os.utime(final)
                continue
            except FileNotFoundError:
                pass
            try:
                os.mkdir(folder, 0o700)
            except FileExistsError:
                pass
            temp = os.path.join(folder, f"tmp_obj_hafiza_{os.getpid()}_{name[2:10]}")
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o400)
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(zlib.compress(b"%s %d\0" % (kind, len(body)) + body, 1))
                try:
                    os.link(temp, final)
                except FileExistsError:  # another writer stored the same object meanwhile
                    pass
            finally:
                os.unlink(temp)


class _Pack:
    """One pack and its index (version 2), memory-mapped: an object found by a binary search of the
    index's sorted ids, read at its offset in the pack."""

    def __init__(self, base: str, id_size: int):
        with open(base + ".idx", "rb") as f:
            self.index = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        with open(base + ".pack", "rb") as f:
            self.data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        if self.index[:8] != _INDEX_MAGIC + b"\0\0\0\2" or self.data[:4] != b"PACK":
            self.close()
            raise ValueError("not a version 2 pack index")
        self.id_size = id_size
        self.count = int.from_bytes(self.index[8 + 255 * 4:8 + 256 * 4], "big")
        self.ids = 8 + 256 * 4
        self.offsets = self.ids + self.count * (id_size + 4)  # after the ids and their CRCs
        if len(self.index) < self.offsets + self.count * 4 + 2 * id_size:
            self.close()
            raise ValueError("a pack index cut short")

    def close(self) -> None:
        self.index.close()
        self.data.close()

    def find(self, oid: bytes) -> int | None:
        """The offset of `oid` in the pack, or None."""
        first = oid[0]
        low = int.from_bytes(self.index[8 + (first - 1) * 4:8 + first * 4], "big") if first else 0
        high = int.from_bytes(self.index[8 + first * 4:12 + first * 4], "big")
        size, ids = self.id_size, self.ids
        while low < high:
            middle = (low + high) // 2
            here = self.index[ids + middle * size:ids + (middle + 1) * size]
            if here == oid:
                return self._offset(middle)
            if here < oid:
                low = middle + 1
            else:
                high = middle
        return None

    def _offset(self, n: int) -> int:
        at = self.offsets + n * 4
        offset = int.from_bytes(self.index[at:at + 4], "big")
        if offset & 0x80000000:  # in the table of 8-byte offsets, for packs past 2 GB
            at = self.offsets + self.count * 4 + (offset & 0x7FFFFFFF) * 8
            offset = int.from_bytes(self.index[at:at + 8], "big")
        return offset

    def read(self, start: int, store: Objects, depth: int) -> tuple[bytes, bytes] | None:
        """(type, body) of the object at offset `start`, a delta applied to its base; None if it does not
        read as one (a pack being replaced under us is left to git)."""
        data = self.data
        try:
            byte = data[start]
            kind, size, shift, at = (byte >> 4) & 7, byte & 15, 4, start + 1
            while byte & 0x80:
                byte = data[at]
                size |= (byte & 0x7F) << shift
                shift, at = shift + 7, at + 1
            if size > MAX_OBJECT:
                return None
            if kind in KINDS:
                body = _inflate(data, at, size)
                return None if body is None else (KINDS[kind], body)
            if depth >= _MAX_DEPTH:
                return None
            if kind == OFS_DELTA:  # on the object `back` bytes before this one
                byte = data[at]
                back, at = byte & 0x7F, at + 1
                while byte & 0x80:
                    byte = data[at]
                    back, at = ((back + 1) << 7) | (byte & 0x7F), at + 1
                base = self.read(start - back, store, depth + 1) if 0 < back <= start else None
            elif kind == REF_DELTA:  # on the object of that id, wherever it is
                base = store.read(data[at:at + self.id_size], depth + 1)
                at += self.id_size
            else:
                return None
        except IndexError:
            return None
        delta = _inflate(data, at, size) if base is not None else None
        body = _patch(base[1], delta) if delta is not None else None
        return None if body is None else (base[0], body)


def _inflate(data, at: int, size: int) -> bytes | None:
    """The zlib stream starting at `at`, None unless it holds exactly `size` bytes."""
    stream, out = zlib.decompressobj(), []
    try:
        while not stream.eof and at < len(data):
            out.append(stream.decompress(data[at:at + _CHUNK], size + 1))
            if stream.unconsumed_tail:
                return None  # more than `size`
            at += _CHUNK
    except zlib.error:
        return None
    body = b"".join(out)
    return body if stream.eof and len(body) == size else None


def _patch(base: bytes, delta: bytes) -> bytes | None:
    """`base` changed by a git delta: the two sizes, then copies from the base and literal inserts."""
    try:
        base_size, at = _varint(delta, 0)
        result_size, at = _varint(delta, at)
        if base_size != len(base) or result_size > MAX_OBJECT:
            return None
        out = bytearray()
        while at < len(delta):
            op = delta[at]
            at += 1
            if op & 0x80:  # copy: which offset and size bytes follow is in the op's low seven bits
                offset = size = 0
                for bit in range(4):
                    if op & (1 << bit):
                        offset, at = offset | delta[at] << (8 * bit), at + 1
                for bit in range(3):
                    if op & (0x10 << bit):
                        size, at = size | delta[at] << (8 * bit), at + 1
                size = size or 0x10000
                if offset + size > len(base):
                    return None
                out += base[offset:offset + size]
            elif op:  # insert the next `op` bytes
                if at + op > len(delta):
                    return None
                out += delta[at:at + op]
                at += op
            else:
                return None  # reserved
    except IndexError:
        return None
    return bytes(out) if len(out) == result_size else None


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        value, shift, at = value | (byte & 0x7F) << shift, shift + 7, at + 1
        if not byte & 0x80:
            return value, at
