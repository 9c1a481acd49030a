"""A commit of a few files made from HEAD's trees (vault/git/trees.py), and git's index brought level for those
paths only (vault/git/index.py): the same commit and the same index git itself makes, checked against git
on real repositories."""

from __future__ import annotations

import shutil
import struct
import subprocess

import pytest

from conftest import git
from hafiza.vault.git import index as gitindex
from hafiza.vault.git import GitStore

FILES = {
    "README.md": "top\n",
    "memories/a.md": "a\n",
    "memories/m.md": "m\n",
    "memories/3f/b.md": "b\n",
    "memories/3f/d.md": "d\n",
    "memories/3f/f.md": "f\n",
    "memories/40/x.md": "x\n",
    "memories/3f-notes/y.md": "y\n",  # sorts between memories/3f/ and memories/40/ in git's index
    "facts/acme.md": "acme\n",
}


def _repo(root, files=FILES, eoie=True, private=False):
    root.mkdir()
    git(root, "init", "-q", "--initial-branch=main")
    if private:  # as a vault's repository is: git then makes every object its owner's alone
        GitStore(root).private()
    git(root, "config", "index.recordEndOfIndexEntries", "true" if eoie else "false")
    git(root, "config", "core.untrackedCache", "true")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    git(root, "status", "--porcelain")  # the untracked cache, as a vault's periodic look leaves it
    return root


def _apply(root, change: dict[str, str | None]) -> None:
    for rel, text in change.items():
        if text is None:
            (root / rel).unlink()
        else:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)


def _state(root) -> tuple[str, str]:
    return git(root, "ls-files", "-s"), git(root, "rev-parse", "HEAD^{tree}")


CHANGES = [
    {"memories/3f/d.md": "d changed\n"},  # a file changed in place
    {"memories/3f/c.md": "new\n"},  # a new file in the middle of its folder
    {"memories/3f/a.md": "first\n", "memories/3f/z.md": "last\n"},  # at either end
    {"memories/3f/e.md": "e\n", "memories/3f/d.md": "d again\n"},  # a new file before a changed one
    {"memories/3f/b.md": None},  # removed
    {"memories/40/x.md": None},  # its folder's last file: the folder goes
    {"memories/m.md": "m changed\n", "memories/b.md": "b\n", "facts/acme.md": "acme moved\n"},
]


def _named(change: dict) -> str:
    return ",".join(f"{k}={'-' if v is None else '+'}" for k, v in change.items())


@pytest.mark.parametrize("private", [True, False], ids=["private", "shared"])
@pytest.mark.parametrize("change", CHANGES, ids=_named)
def test_a_commit_and_the_index_are_what_git_add_and_git_commit_make(tmp_path, change, private):
    ours, theirs = _repo(tmp_path / "ours", private=private), None
    theirs = tmp_path / "theirs"
    shutil.copytree(ours, theirs, symlinks=True)
    for root in (ours, theirs):
        _apply(root, change)
    before = (ours / ".git" / "index").read_bytes()
    sha = GitStore(ours).commit(list(change), "hafiza: a change\n\nbody\n")
    git(theirs, "add", "-A")
    git(theirs, "commit", "-q", "-m", "x")

    after = (ours / ".git" / "index").read_bytes()
    assert b"UNTR" in before and b"UNTR" not in after  # spliced here, not written by git (which keeps it)
    assert _state(ours) == _state(theirs)
    assert git(ours, "rev-parse", "HEAD") == sha + "\n"
    assert git(ours, "diff-files", "--name-only") == ""  # stat data as git would record it: no file looks changed
    assert git(ours, "status", "--porcelain") == ""
    assert git(ours, "write-tree") == git(ours, "rev-parse", "HEAD^{tree}")  # the tree cache was marked out of date
    git(ours, "fsck", "--strict", "--no-progress")
    assert not (ours / ".git" / "index.lock").exists()
    made = [ours / ".git" / "objects" / tree[:2] / tree[2:]
            for tree in git(ours, "rev-parse", "HEAD^{tree}", "HEAD:memories").split()]
    assert {oct(path.stat().st_mode & 0o777) for path in made} == {"0o400" if private else "0o444"}
    assert not list((ours / ".git" / "objects").glob("*/tmp_*"))


def test_the_index_is_spliced_not_rewritten_by_git(tmp_path):
    root = _repo(tmp_path / "v")
    data = (root / ".git" / "index").read_bytes()
    _apply(root, {"memories/3f/c.md": "new\n"})
    info = (root / "memories/3f/c.md").stat()
    blob = bytes.fromhex(git(root, "hash-object", "-w", "memories/3f/c.md").strip())
    change = {"memories/3f/c.md": (info, blob)}
    spliced = b"".join(gitindex._pieces(data, gitindex._plan(data, {"memories/3f/c.md": True}), lambda: change))
    assert struct.unpack(">I", spliced[8:12])[0] == struct.unpack(">I", data[8:12])[0] + 1
    # every entry before and after the new one is byte for byte as it was
    at = spliced.index(b"memories/3f/c.md") - gitindex.FIXED
    assert spliced[12:at] == data[12:at]
    assert b"UNTR" in data and b"UNTR" not in spliced  # git rebuilds its untracked cache on its next look


def test_a_file_changed_after_the_commit_is_seen_changed(tmp_path):
    root = _repo(tmp_path / "v")
    _apply(root, {"memories/3f/d.md": "d changed\n"})
    GitStore(root).commit(["memories/3f/d.md"], "hafiza: one\n")
    (root / "memories/3f/d.md").write_text("d by hand!\n")
    assert git(root, "status", "--porcelain") == " M memories/3f/d.md\n"


@pytest.mark.parametrize("why", ["no end-of-entries record", "index version 4", "a new folder", "a new top file",
                                 "staged by hand", "assume-unchanged"])
def test_an_index_or_change_this_does_not_handle_is_left_to_git(tmp_path, why):
    root = _repo(tmp_path / "v", eoie=why != "no end-of-entries record")
    change = {"memories/3f/c.md": "new\n"}
    if why == "index version 4":
        git(root, "update-index", "--index-version", "4")
    elif why == "a new folder":
        change = {"memories/77/q.md": "q\n"}
    elif why == "a new top file":
        change = {"NOTES.md": "notes\n"}
    elif why == "staged by hand":
        _apply(root, {"memories/m.md": "staged by hand\n"})
        git(root, "add", "memories/m.md")
    elif why == "assume-unchanged":
        git(root, "update-index", "--assume-unchanged", "memories/3f/d.md")
        change = {"memories/3f/d.md": "d changed\n"}
    _apply(root, change)
    data = (root / ".git" / "index").read_bytes()
    if why not in ("staged by hand",):
        with pytest.raises(gitindex.Unsupported):
            gitindex._plan(data, dict.fromkeys(change, True))
    GitStore(root).commit(list(change), "hafiza: one\n")
    if why != "assume-unchanged":  # git is told not to look at that file: its entry stays as the user left it
        assert git(root, "diff", "--cached", "--name-only", "HEAD") == (
            "memories/m.md\n" if why == "staged by hand" else "")  # staged by hand: still staged, not committed
    assert git(root, "show", "--name-only", "--format=", "HEAD") == "".join(f"{rel}\n" for rel in change)
    if why == "index version 4":
        assert (root / ".git" / "index").read_bytes()[4:8] == struct.pack(">I", 4)


def test_a_held_index_lock_is_waited_for_then_left_alone(tmp_path, monkeypatch):
    import threading

    root = _repo(tmp_path / "v")
    lock = root / ".git" / "index.lock"
    lock.write_bytes(b"someone else's")
    _apply(root, {"memories/3f/c.md": "new\n"})
    monkeypatch.setattr(gitindex, "LOCK_WAIT", 0.1)
    with pytest.raises(FileExistsError):
        gitindex.prepare(root / ".git", {"memories/3f/c.md": True},
                         lambda: {"memories/3f/c.md": ((root / "memories/3f/c.md").stat(), b"\1" * 20)})
    assert lock.read_bytes() == b"someone else's"
    monkeypatch.setattr(gitindex, "LOCK_WAIT", 5.0)
    threading.Timer(1.0, lock.unlink).start()  # a `git status` that lets go
    GitStore(root).commit(["memories/3f/c.md"], "hafiza: one\n")
    assert git(root, "status", "--porcelain") == ""


def test_a_corrupt_index_is_not_blessed_with_a_new_checksum(tmp_path):
    root = _repo(tmp_path / "v")
    data = bytearray((root / ".git" / "index").read_bytes())
    data[40] ^= 0xFF
    with pytest.raises(gitindex.Unsupported, match="checksum"):
        gitindex._plan(bytes(data), {})


def test_a_commit_made_through_git_index_refuses_what_was_staged_by_hand(tmp_path):
    from hafiza.vault.git import StagedElsewhere

    root = _repo(tmp_path / "v")
    _apply(root, {"memories/m.md": "staged by hand\n", "memories/3f/new/deep.md": "deep\n"})
    git(root, "add", "memories/m.md")
    with pytest.raises(StagedElsewhere):  # a folder is committed through git's index, which holds more
        GitStore(root).commit(["memories/3f/new"], "hafiza: one\n", only=True)
    assert git(root, "log", "--format=%s") == "start\n"


def test_the_checksum_is_verified_unless_the_index_is_the_very_file_hafiza_wrote(tmp_path):
    root = _repo(tmp_path / "v")
    _apply(root, {"memories/3f/c.md": "new\n"})
    GitStore(root).commit(["memories/3f/c.md"], "hafiza: one\n")
    index = root / ".git" / "index"
    assert (root / ".git" / gitindex.STAMP).read_text() == gitindex._stamp(index.stat())
    data = bytearray(index.read_bytes())
    data[40] ^= 0xFF  # damaged afterwards (the file's mtime moves with it)
    index.write_bytes(bytes(data))
    _apply(root, {"memories/3f/e.md": "e\n"})
    with pytest.raises(gitindex.Unsupported, match="checksum"):
        gitindex.prepare(root / ".git", {"memories/3f/e.md": True},
                         lambda: {"memories/3f/e.md": ((root / "memories/3f/e.md").stat(), b"\1" * 20)})
    assert index.read_bytes() == bytes(data) and not (root / ".git" / "index.lock").exists()


def test_many_paths_are_left_to_git(tmp_path):
    root = _repo(tmp_path / "v")
    change = {f"memories/3f/n{n:03d}.md": f"{n}\n" for n in range(gitindex.MAX_PATHS + 1)}
    _apply(root, change)
    with pytest.raises(gitindex.Unsupported, match="many"):
        gitindex.prepare(root / ".git", dict.fromkeys(change, True),
                         lambda: {rel: ((root / rel).stat(), b"\1" * 20) for rel in change})
    GitStore(root).commit(list(change), "hafiza: import\n")
    assert git(root, "status", "--porcelain") == ""
    assert len(git(root, "show", "--name-only", "--format=", "HEAD").split()) == len(change)


@pytest.mark.parametrize("rel", ["memories/../../outside.md", "/etc/passwd", "memories/./x.md", ".git/config",
                                 "memories//x.md", "-x.md\nmemories/y.md"])
def test_a_path_outside_the_work_tree_or_into_git_is_never_committed_from_trees(tmp_path, rel):
    from hafiza.vault.errors import GitError

    root = _repo(tmp_path / "v")
    (tmp_path / "outside.md").write_text("not the vault's\n")
    tracked = git(root, "ls-tree", "-r", "--name-only", "HEAD")
    try:  # left to git's own staging, which refuses such a path or finds no file by it
        GitStore(root).commit([rel], "hafiza: one\n")
    except GitError:
        pass
    assert git(root, "ls-tree", "-r", "--name-only", "HEAD") == tracked
    assert git(root, "ls-files") == tracked
    git(root, "fsck", "--strict", "--no-progress")


def test_a_commit_that_git_refuses_leaves_the_index_it_had_made_ready_unused(tmp_path):
    from hafiza.vault.errors import GitError

    root = _repo(tmp_path / "v")
    _apply(root, {"memories/3f/c.md": "new\n"})
    before, head = (root / ".git" / "index").read_bytes(), git(root, "rev-parse", "HEAD")
    with pytest.raises(GitError, match="commit-tree"):  # made while the index is written to its lock file
        GitStore(root)._commit_files(["memories/3f/c.md"], "hafiza: one\n", {"GIT_AUTHOR_DATE": "not a date"})
    assert (root / ".git" / "index").read_bytes() == before
    assert not (root / ".git" / "index.lock").exists()
    assert git(root, "rev-parse", "HEAD") == head
    assert git(root, "status", "--porcelain") == "?? memories/3f/c.md\n"
    GitStore(root).commit(["memories/3f/c.md"], "hafiza: one\n")
    assert git(root, "status", "--porcelain") == ""


def test_blob_ids_from_trees_are_the_ones_git_names(tmp_path):
    root = _repo(tmp_path / "v")
    git(root, "update-index", "--add", "--cacheinfo", f"160000,{git(root, 'rev-parse', 'HEAD').strip()},memories/sub")
    git(root, "commit", "-q", "-m", "a submodule")
    asked = ["memories/3f/b.md", "README.md", "memories/3f", "memories/sub", "memories/none.md", "none/x.md",
             "README.md/x.md", "memories/3f/../a.md"]
    got = GitStore(root).blob_ids(asked)
    for rel in asked:
        kind = subprocess.run(["git", "-C", str(root), "cat-file", "-t", f"HEAD:{rel}"], capture_output=True, text=True)
        named = git(root, "rev-parse", f"HEAD:{rel}").strip() if kind.stdout.strip() == "blob" else None
        assert got[rel] == named, rel
    assert got["memories/3f/b.md"] is not None and got["memories/sub"] is None and got["memories/3f"] is None


def test_a_write_reads_head_s_trees_once_for_its_look_at_hand_edits_and_its_commit(tmp_path, monkeypatch):
    root = _repo(tmp_path / "v")
    store = GitStore(root)
    reads = []
    original = GitStore._objects
    monkeypatch.setattr(GitStore, "_objects", lambda self, specs: reads.append(specs) or original(self, specs))
    assert store.blob_ids(["memories/3f/d.md"])["memories/3f/d.md"] == git(root, "rev-parse", "HEAD:memories/3f/d.md").strip()
    _apply(root, {"memories/3f/d.md": "d changed\n"})
    store.commit(["memories/3f/d.md"], "hafiza: one\n")
    assert len(reads) == 1 and git(root, "status", "--porcelain") == ""
    store.blob_ids(["memories/3f/d.md"])  # a new HEAD: read anew
    assert len(reads) == 2


def test_the_old_index_file_is_written_over_by_the_write_after_next_never_while_it_is_the_index(tmp_path):
    import os

    root = _repo(tmp_path / "v")
    index, spare = root / ".git" / "index", root / ".git" / gitindex.SPARE
    store = GitStore(root)
    for n in range(3):
        _apply(root, {f"memories/3f/n{n}.md": f"{n}\n"})
        before = index.stat()
        store.commit([f"memories/3f/n{n}.md"], "hafiza: one\n")
        assert os.path.samestat(spare.stat(), before) and not os.path.samestat(index.stat(), before)
        assert git(root, "status", "--porcelain") == "" and git(root, "diff-files", "--name-only") == ""
    # A write that died between publish's two renames leaves the spare naming the index itself: a new file then.
    spare.unlink()
    os.link(index, spare)
    held = tmp_path / "held"
    os.link(index, held)
    was = held.read_bytes()
    _apply(root, {"memories/3f/last.md": "last\n"})
    store.commit(["memories/3f/last.md"], "hafiza: one\n")
    assert held.read_bytes() == was
    assert git(root, "status", "--porcelain") == ""
    git(root, "fsck", "--strict", "--no-progress")


@pytest.mark.parametrize("planted", ["a link to a file outside", "a pipe"])
def test_a_spare_that_is_not_a_plain_file_is_never_written_through(tmp_path, planted):
    import os

    root = _repo(tmp_path / "v")
    spare, outside = root / ".git" / gitindex.SPARE, tmp_path / "outside"
    outside.write_bytes(b"not git's\n")
    if planted == "a pipe":
        os.mkfifo(spare)  # opened for writing, a pipe with no reader would block
    else:
        spare.symlink_to(outside)
    _apply(root, {"memories/3f/c.md": "new\n"})
    GitStore(root).commit(["memories/3f/c.md"], "hafiza: one\n")
    assert outside.read_bytes() == b"not git's\n"
    assert git(root, "status", "--porcelain") == "" and not (root / ".git" / "index.lock").exists()
    assert spare.is_file() and not spare.is_symlink()  # the old index, kept as the spare from now on
    git(root, "fsck", "--strict", "--no-progress")


NAMES = ["a", "a.md", "a-b.md", "a b.md", "ab", "b", "şifre.md", "z~"]


def _tree_case(rng) -> tuple[dict[str, str], dict[str, str | None]]:
    """Files in folders whose names prefix one another ("a", "a.md", "a-b.md": git sorts a folder "a" after
    them), and a change that adds, edits, removes, empties a folder, or turns a file into a folder."""
    files: dict[str, str] = {}
    for _ in range(rng.randrange(3, 12)):
        rel = "/".join(rng.choice(NAMES) for _ in range(rng.randrange(1, 4)))
        if not any(f == rel or f.startswith(rel + "/") or rel.startswith(f + "/") for f in files):
            files[rel] = f"{rel} {rng.random()}\n"
    change: dict[str, str | None] = {}
    for rel in rng.sample(sorted(files), rng.randrange(0, len(files) + 1)):
        change[rel] = rng.choice([None, f"changed {rng.random()}\n"])
    for _ in range(rng.randrange(0, 3)):
        change["/".join(rng.choice(NAMES) for _ in range(rng.randrange(1, 4)))] = f"new {rng.random()}\n"
    return files, change


def test_trees_edited_as_bytes_are_the_trees_git_makes(tmp_path):
    import random

    rng, kept = random.Random(18), 0
    for case in range(60):
        files, change = _tree_case(rng)
        after = {**files}
        for rel, text in change.items():
            if text is None:
                after.pop(rel, None)
            else:
                after = {f: t for f, t in after.items() if not f.startswith(rel + "/") and not rel.startswith(f + "/")}
                after[rel] = text
        if not after or any(f.startswith(rel + "/") for rel in after for f in files):
            continue  # none, or a folder become a file: git's update-index cannot remove the files it held
        ours, theirs = _repo(tmp_path / f"o{case}", files, private=True), tmp_path / f"t{case}"
        shutil.copytree(ours, theirs, symlinks=True)
        for root in (ours, theirs):
            _become(root, files, after)
        paths = sorted(rel for rel in {*files, *after} if files.get(rel) != after.get(rel))
        GitStore(ours).commit(paths, "hafiza: a change\n")
        git(theirs, "add", "-A")
        git(theirs, "commit", "-q", "--allow-empty", "-m", "x")
        assert git(ours, "rev-parse", "HEAD^{tree}") == git(theirs, "rev-parse", "HEAD^{tree}"), (files, change)
        assert git(ours, "status", "--porcelain") == ""
        git(ours, "fsck", "--strict", "--no-progress")
        kept += 1
    assert kept > 30


@pytest.mark.parametrize("name", [b"a", b"a.md", b"ab", b"b", b"0", b"zz"])
def test_finding_an_entry_walks_git_s_order(name):
    from hafiza.vault.git import trees

    body = b"".join(mode + b" " + entry + b"\0" + bytes(20) for mode, entry in [
        (trees.FILE, b"a-b.md"), (trees.FILE, b"a.md"), (trees.FOLDER, b"a"), (trees.FILE, b"a0"),
        (trees.FOLDER, b"ab"), (trees.FILE, b"b")])
    start, end, mode = trees.find(body, name, 20)
    listed = [body[at:body.index(b"\0", at) + 21] for at in _starts(body)]
    names = [entry.split(b" ", 1)[1].split(b"\0")[0] for entry in listed]
    if name in names:
        assert body[start:end] == listed[names.index(name)] and mode == listed[names.index(name)].split(b" ")[0]
    else:
        assert (start, end, mode) == (start, start, None)
        assert trees.put(body, name, trees.FILE, bytes(20), 20) == b"".join(sorted(
            listed + [trees.FILE + b" " + name + b"\0" + bytes(20)], key=_git_key))
        assert trees.put(body, name, trees.FOLDER, bytes(20), 20) == b"".join(sorted(
            listed + [trees.FOLDER + b" " + name + b"\0" + bytes(20)], key=_git_key))


def _become(root, files: dict[str, str], after: dict[str, str]) -> None:
    """The work tree holding `after` where it held `files`: a file may become a folder, or the reverse."""
    for rel in files:
        (root / rel).unlink()
    for folder in sorted({p for rel in files for p in (root / rel).parents if root in p.parents},
                         key=lambda p: -len(p.parts)):
        if not any(folder.iterdir()):
            folder.rmdir()
    _apply(root, after)


def _starts(body: bytes) -> list[int]:
    at, found = 0, []
    while at < len(body):
        found.append(at)
        at = body.index(b"\0", at) + 21
    return found


def _git_key(entry: bytes) -> bytes:
    mode, rest = entry.split(b" ", 1)
    name = rest.split(b"\0", 1)[0]
    return name + b"/" if mode == b"40000" else name
