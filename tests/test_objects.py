"""git's object store as hafiza reads and writes it (vault/objects.py), checked against git itself on real
repositories: loose objects, packs, deltas on an offset and on an id, and what it leaves to git."""

from __future__ import annotations

import os
import subprocess

import pytest

from conftest import git
from hafiza.vault.git import GitStore
from hafiza.vault.objects import Objects


def _history(root, commits: int = 40, hash: str = "sha1"):
    """A repository whose files change a little in each commit: packed, most objects are deltas."""
    root.mkdir()
    git(root, "init", "-q", "--initial-branch=main", f"--object-format={hash}")
    for n in range(commits):
        for folder in ("memories", "memories/3f", "notes"):
            (root / folder).mkdir(parents=True, exist_ok=True)
            lines = "".join(f"line {k} of the file, kept from commit to commit\n" for k in range(200))
            (root / folder / f"big-{n % 3}.md").write_text(lines + f"changed in commit {n}\n")
            (root / folder / f"small-{n}.md").write_text(f"small {n}\n")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"commit {n}")
    return root


def _all_objects(root) -> list[tuple[str, str]]:
    out = git(root, "cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(deltabase)")
    return [tuple(line.split()) for line in out.splitlines()]


def _as_git_reads(root, ids: list[str]) -> list[tuple[bytes, bytes]]:
    out = subprocess.run(["git", "-C", str(root), "cat-file", "--batch"], input="".join(f"{i}\n" for i in ids).encode(),
                         capture_output=True, check=True).stdout
    found, at = [], 0
    for _ in ids:
        end = out.index(b"\n", at)
        _, kind, size = out[at:end].split()
        found.append((kind, out[end + 1:end + 1 + int(size)]))
        at = end + 2 + int(size)
    return found


@pytest.mark.parametrize("hash", ["sha1", "sha256"])
@pytest.mark.parametrize("packing", [None, ["gc", "--aggressive", "--quiet"],
                                     ["-c", "repack.useDeltaBaseOffset=false", "repack", "-adfq"]],
                         ids=["loose", "deltas on offsets", "deltas on ids"])
def test_every_object_reads_as_git_reads_it(tmp_path, packing, hash):
    root = _history(tmp_path / "r", hash=hash)
    if packing:
        git(root, *packing)
    objects = _all_objects(root)
    size = len(objects[0][0]) // 2
    if packing:
        assert sum(base.strip("0") != "" for _, base in objects) > len(objects) // 4  # mostly deltas
        assert not [p for p in (root / ".git" / "objects").iterdir() if len(p.name) == 2]  # none loose
    ids = [oid for oid, _ in objects]
    with Objects(root / ".git", size) as store:
        assert [store.read(bytes.fromhex(oid)) for oid in ids] == _as_git_reads(root, ids)
        assert store.read(bytes(size)) is None
    (root / "memories" / "3f" / "new.md").write_text("new\n")
    before = GitStore(root)._trees_read(git(root, "rev-parse", "HEAD").strip(), ["", "memories", "memories/3f"])
    assert [body for _, body in before] == [body for _, body in _as_git_reads(
        root, ["HEAD^{tree}", "HEAD:memories", "HEAD:memories/3f"])]
    GitStore(root).commit(["memories/3f/new.md"], "hafiza: one\n")
    assert git(root, "status", "--porcelain") == ""
    git(root, "fsck", "--strict", "--no-progress")


def test_objects_it_writes_are_git_s_own(tmp_path):
    from hafiza.vault import trees

    root = tmp_path / "r"
    root.mkdir()
    git(root, "init", "-q")
    body = b"100644 a.md\0" + bytes.fromhex(git(root, "hash-object", "-w", "--stdin", input="a\n").strip())
    oid = trees.object_id(body, 20)
    with Objects(root / ".git") as store:
        store.write({oid: body})
        path = root / ".git" / "objects" / oid.hex()[:2] / oid.hex()[2:]
        assert git(root, "cat-file", "-p", oid.hex()).startswith("100644 blob ")
        assert git(root, "rev-parse", f"{oid.hex()}^{{tree}}").strip() == oid.hex()
        assert path.stat().st_mode & 0o777 == 0o400
        os.utime(path, (1, 1))
        store.write({oid: body})  # there already: kept, its time renewed against a `git gc --prune`
        assert path.stat().st_mtime > 1
        assert store.read(oid) == (b"tree", body)
    git(root, "fsck", "--strict", "--no-progress")
    assert not list((root / ".git" / "objects").glob("*/tmp_*"))


def test_what_it_cannot_read_is_none_and_git_reads_it_for_the_write(tmp_path):
    """Objects borrowed from another repository (alternates), and a pack index of another version:
    nothing read wrongly, and a write's trees still come right (from git)."""
    lender = _history(tmp_path / "lender", commits=3)
    root = tmp_path / "borrower"
    git(tmp_path, "clone", "-q", "--shared", str(lender), str(root))
    head = git(root, "rev-parse", "HEAD").strip()
    store = GitStore(root)
    with Objects(root / ".git") as objects:
        assert objects.read(bytes.fromhex(head)) is None  # in the lender's store
    assert store._trees_read(head, ["", "memories"]) is None
    assert [entry[1] for entry in store._trees_of(head, ["", "memories"])] == [
        body for _, body in _as_git_reads(root, [f"{head}^{{tree}}", f"{head}:memories"])]

    other = _history(tmp_path / "v1", commits=3)
    git(other, "-c", "pack.indexVersion=1", "repack", "-adq")
    head = git(other, "rev-parse", "HEAD").strip()
    with Objects(other / ".git") as objects:
        assert objects.packs() == [] and objects.read(bytes.fromhex(head)) is None
    (other / "memories" / "3f" / "new.md").write_text("new\n")
    GitStore(other).commit(["memories/3f/new.md"], "hafiza: one\n")
    git(other, "fsck", "--strict", "--no-progress")
    assert git(other, "status", "--porcelain") == ""


def test_a_damaged_pack_reads_as_none_never_as_other_bytes(tmp_path):
    root = _history(tmp_path / "r", commits=5)
    git(root, "gc", "--quiet")
    pack = next((root / ".git" / "objects" / "pack").glob("*.pack"))
    ids = [oid for oid, _ in _all_objects(root)]
    good = dict(zip(ids, _as_git_reads(root, ids)))
    data = bytearray(pack.read_bytes())
    for at in range(12, len(data) - 20, 97):  # flip a byte every so often through the objects
        data[at] ^= 0xFF
    pack.chmod(0o600)
    pack.write_bytes(bytes(data))
    with Objects(root / ".git") as store:
        read = {oid: store.read(bytes.fromhex(oid)) for oid in ids}
    assert all(got in (None, good[oid]) for oid, got in read.items())
    assert list(read.values()).count(None) > len(ids) // 2


def test_an_object_file_holding_another_object_reads_as_none(tmp_path):
    root = _history(tmp_path / "r", commits=2)
    ids = [oid for oid, _ in _all_objects(root)]
    first, second = (root / ".git" / "objects" / oid[:2] / oid[2:] for oid in ids[:2])
    second.chmod(0o600)
    second.write_bytes(first.read_bytes())  # well-formed, but not the object its name says
    with Objects(root / ".git") as store:
        assert store.read(bytes.fromhex(ids[1])) is None
        assert store.read(bytes.fromhex(ids[0])) is not None


def test_an_object_larger_than_the_bound_is_left_to_git_never_inflated(tmp_path, monkeypatch):
    """A loose object that inflates past MAX_OBJECT (a zlib bomb planted in .git), and a packed one whose
    header claims that much, read as None: nothing that size is made in memory."""
    import zlib

    from hafiza.vault import objects

    root = _history(tmp_path / "r", commits=2)
    monkeypatch.setattr(objects, "MAX_OBJECT", 4096)
    bomb = b"blob %d\0" % (1 << 20) + bytes(1 << 20)
    oid = bytes.fromhex(git(root, "hash-object", "--stdin", input="x").strip())  # any id: the name is all
    path = root / ".git" / "objects" / oid.hex()[:2] / oid.hex()[2:]
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(zlib.compress(bomb, 9))  # 1 KB on disk, 1 MB inflated
    with Objects(root / ".git") as store:
        assert store._loose(oid) is None
    path.unlink()
    big = "line of a file that is too large for the bound\n" * 200
    (root / "big.md").write_text(big)
    git(root, "add", "big.md")
    git(root, "commit", "-q", "-m", "big")
    git(root, "gc", "--quiet")
    packed = bytes.fromhex(git(root, "rev-parse", "HEAD:big.md").strip())
    small = bytes.fromhex(git(root, "rev-parse", "HEAD^{tree}").strip())
    with Objects(root / ".git") as store:
        assert store.read(packed) is None
        assert store.read(small) is not None  # under the bound: read as before
