"""Sync across machines with real git: a bare repository in tmp_path is the remote, clones are the machines,
and merges run through the registered driver (a real `python -m hafiza.vault.driver` process)."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys

import anyio
import pytest

from conftest import git, git_subjects, run_cli
from hafiza.vault.format import conflicts, model
from hafiza.vault import episodes
from hafiza.vault.errors import HafizaError
from hafiza.vault.sync.merge import reconcile
from hafiza.vault.review import RULINGS
from hafiza.vault.store.vault import Vault
from hafiza.vault.sync.machines import clone, conflicted, resolve, set_remote, sync, this_machine

TODAY = dt.date.today()


@pytest.fixture
def remote(tmp_path):
    path = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(path))
    return path


def machine(tmp_path, remote, name: str) -> Vault:
    """A second machine, started from the remote as `hafiza init --from` does."""
    clone(str(remote), tmp_path / name)
    # Its own actor: two machines' commits of the same change in the same second would otherwise be one commit.
    return Vault.init(tmp_path / name, actor=f"cli-{name}")


@pytest.fixture
def pair(tmp_path, remote):
    """Two machines holding one memory `note` (shown 3, used 1, tags a b), synced."""
    a = Vault.init(tmp_path / "a")
    a.remember("line one\nline two\nline three", id="note", title="Note", tags=["a", "b"])
    _edit(a, "note", shown=3, used=1)
    set_remote(a, str(remote))
    sync(a)
    return a, machine(tmp_path, remote, "b")


def _edit(vault, memory_id, **changes):
    memory = vault.get(memory_id)
    return vault.rewrite(memory_id, model.dump(memory.evolve(**changes)))


def _hand_delete(vault, memory_id):
    os.remove(vault.memories_dir / f"{memory_id}.md")


def _settle(a, b):
    """A syncs, B syncs, A syncs: both hold the same tree."""
    reports = [sync(a), sync(b), sync(a)]
    assert git(a.root, "rev-parse", "HEAD^{tree}") == git(b.root, "rev-parse", "HEAD^{tree}")
    for vault in (a, b):
        _, errors = vault.load_all()
        assert errors == []
        for path in vault.root.rglob("*"):
            if ".git" not in path.parts and path.is_file():
                assert not conflicts.has_markers(path.read_text(encoding="utf-8", errors="replace")), path
    return reports


def _all_text(vault) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(vault.memories_dir.glob("*.md")))


# ---- the scenario table: divergent histories, each merged by the driver


def _use(n):
    def act(vault):
        vault.record_use(["note"] * 1)
        for _ in range(n - 1):
            vault.record_use(["note"])
    return act


def _supersede(vault):
    vault.remember("the new way", id="newer", supersedes=["note"])


def _archive(vault):
    vault.forget("note", reason="old")


SCENARIOS = {
    # name: (what A does, what B does, check(memory note, vault, notes))
    "both used it": (_use(2), _use(3), lambda m, v, r: (m.used, m.shown) == (6, 3)
                     and TODAY <= m.last_used <= dt.date.today()),  # the day of the use, across midnight too
    "both used it once, the same day": (_use(1), _use(1), lambda m, v, r: m.used == 3),  # the same bytes twice
    "both used it once and tagged it alike": (
        lambda v: (_use(1)(v), _edit(v, "note", tags=["a", "b", "z"])),
        lambda v: (_use(1)(v), _edit(v, "note", tags=["a", "b", "z"])), lambda m, v, r: m.used == 3),
    "one superseded, the other edited": (
        _supersede, lambda v: v.update("note", "line one\nline two edited on b\nline three"),
        lambda m, v, r: m.status == "superseded" and m.superseded_by == "newer" and "edited on b" in m.body),
    "both added tags": (lambda v: _edit(v, "note", tags=["a", "b", "x"]), lambda v: _edit(v, "note", tags=["a", "b", "y"]),
                        lambda m, v, r: set(m.tags) == {"a", "b", "x", "y"}),
    "one removed a tag, the other added one": (
        lambda v: _edit(v, "note", tags=["a"]), lambda v: _edit(v, "note", tags=["a", "b", "c"]),
        lambda m, v, r: set(m.tags) == {"a", "c"}),
    "both added aliases": (lambda v: v.add_aliases("note", ["not"]), lambda v: v.add_aliases("note", ["notiz"]),
                           lambda m, v, r: set(m.aliases) == {"not", "notiz"}),
    "both edited the same line": (
        lambda v: v.update("note", "line one\nline TWO from a\nline three"),
        lambda v: v.update("note", "line one\nline 2 from b\nline three"),
        lambda m, v, r: "TWO from a" in m.body and "2 from b" in m.body and conflicted(v) == {"note": ["body"]}),
    "both edited different lines": (
        lambda v: v.update("note", "line ONE\nline two\nline three"),
        lambda v: v.update("note", "line one\nline two\nline THREE"),
        lambda m, v, r: m.body == "line ONE\nline two\nline THREE" and not conflicted(v)),
    "one archived, the other used": (_archive, _use(2), lambda m, v, r: m.status == "archived" and m.used == 3),
    "one hand-deleted, the other edited": (
        lambda v: _hand_delete(v, "note"), lambda v: v.update("note", "line one\nkept edit\nline three"),
        lambda m, v, r: "kept edit" in m.body),
    "one edited the body, the other folded usage": (
        lambda v: v.update("note", "line one\nline two\nline 3"), _use(4),
        lambda m, v, r: m.body.endswith("line 3") and m.used == 5),
    "both changed the title": (
        lambda v: _edit(v, "note", title="Title A"), lambda v: _edit(v, "note", title="Title B"),
        lambda m, v, r: m.title in {"Title A", "Title B"} and not m.aliases),  # a title is not an alias
    "both superseded it by different memories": (
        _supersede, lambda v: v.remember("another way", id="other", supersedes=["note"]),
        lambda m, v, r: m.status == "superseded" and m.superseded_by in ("newer", "other")
        and v.get("newer") and v.get("other")),
    "one archived, the other superseded": (
        _archive, _supersede, lambda m, v, r: m.status == "superseded" and m.superseded_by == "newer"),
    "both verified, the later check wins": (
        lambda v: _edit(v, "note", verified={"at": "2026-11-01", "status": "failed"}),
        lambda v: _edit(v, "note", verified={"at": "2026-11-20", "status": "ok"}),
        lambda m, v, r: m.verified["status"] == "ok"),
    "both added claims": (
        lambda v: _edit(v, "note", claims=[{"probe": "path", "args": {"path": "a.txt"}, "expect": "exists"}]),
        lambda v: _edit(v, "note", claims=[{"probe": "path", "args": {"path": "b.txt"}, "expect": "exists"}]),
        lambda m, v, r: len(m.claims) == 2),
    "the same new id with different texts": (
        lambda v: v.remember("made on a", id="twin"), lambda v: v.remember("made on b", id="twin"),
        lambda m, v, r: {v.get("twin").body, v.get("twin-2").body} == {"made on a", "made on b"}
        and any("twin-2" in n for n in r)),
    "the same new id with the same text": (
        lambda v: v.remember("made twice", id="twin"), lambda v: v.remember("made twice", id="twin"),
        lambda m, v, r: v.get("twin").body == "made twice" and not (v.memories_dir / "twin-2.md").exists()),
    "both logged episodes": (
        lambda v: episodes.record(v, "deploy", "success", "went fine on a"),
        lambda v: episodes.record(v, "deploy", "failure", "broke on b"),
        lambda m, v, r: {e["what_happened"] for e in episodes.read(v.root)} == {"went fine on a", "broke on b"}),
    "both appended rulings": (
        lambda v: _append(v, RULINGS, '{"key": "k1"}'), lambda v: _append(v, RULINGS, '{"key": "k2"}'),
        lambda m, v, r: (v.root / RULINGS).read_text().splitlines() == ['{"key": "k0"}', '{"key": "k1"}', '{"key": "k2"}']
        or sorted((v.root / RULINGS).read_text().splitlines()) == ['{"key": "k0"}', '{"key": "k1"}', '{"key": "k2"}']),
    "one restored, the other used": (
        lambda v: v.restore("note"), _use(1), lambda m, v, r: m.status == "active" and m.used == 2),
    "a hand edit on each side": (
        lambda v: _hand_write(v, "line zero\nline one\nline two\nline three"),
        lambda v: _hand_write(v, "line one\nline two\nline three\nline four"),
        lambda m, v, r: m.body == "line zero\nline one\nline two\nline three\nline four"),
}


def _append(vault, name, line):
    with vault.transaction():
        path = vault.root / name
        data = path.read_bytes() if path.exists() else b""
        vault.write_bytes(path, data + line.encode() + b"\n")
        vault.commit([path], f"append to {name}", "test")


def _hand_write(vault, body):
    memory = vault.get("note")
    (vault.memories_dir / "note.md").write_text(model.dump(memory.evolve(body=body)))


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_divergent_histories_merge_field_by_field(pair, name):
    a, b = pair
    if name == "one restored, the other used":  # starts from an archived memory
        _archive(a)
        sync(a), sync(b)
    if name == "both appended rulings":
        _append(a, RULINGS, '{"key": "k0"}')
        sync(a), sync(b)
    do_a, do_b, check = SCENARIOS[name]
    do_a(a)
    do_b(b)
    reports = _settle(a, b)
    notes = [n for r in reports for n in r.notes]
    for vault in (a, b):
        assert check(vault.get("note"), vault, notes), (name, vault.get("note"), notes)
    assert git(a.root, "status", "--porcelain") == ""


# ---- the round trip


def test_first_push_to_an_empty_remote_and_what_came_in(tmp_path, remote):
    a = Vault.init(tmp_path / "a")
    a.remember("deploy only from main", id="deploy")
    set_remote(a, str(remote))
    report = sync(a)
    assert report.first_push and report.went_out["added"] == ["deploy"] and report.pushed == 2
    assert git(remote, "log", "--format=%s", "main").splitlines()[0] == "hafiza: remember deploy"
    b = machine(tmp_path, remote, "b")
    b.remember("tests run with pytest", id="tests")
    a.remember("deploy from main after CI", id="deploy-ci", supersedes=["deploy"])
    sync(b)
    report = sync(a)
    assert report.came_in == {"added": ["tests"], "changed": [], "superseded": []}
    assert report.went_out["added"] == ["deploy-ci"] and report.went_out["superseded"] == ["deploy"]
    assert sync(b).came_in == {"added": ["deploy-ci"], "changed": [], "superseded": ["deploy"]}
    again = sync(b)
    assert again.came_in == {"added": [], "changed": [], "superseded": []} and again.pushed == 0


def test_init_from_a_bare_repository_whose_head_names_another_branch_checks_out_main(tmp_path):
    """`git init --bare` names master as HEAD where git is not told otherwise; hafiza pushes main. The clone
    must start from main, not from an empty master on which init writes a second, unrelated history."""
    remote = tmp_path / "plain.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "master", str(remote))
    a = Vault.init(tmp_path / "a")
    a.remember("the staging db listens on 5433", id="staging-db")
    set_remote(a, str(remote))
    sync(a)
    b = machine(tmp_path, remote, "b")
    assert b.get("staging-db").body.strip() == "the staging db listens on 5433"
    assert git(b.root, "rev-parse", "--abbrev-ref", "main@{upstream}").strip() == "origin/main"
    assert sync(b).pushed == 0 and git_subjects(b.root) == git_subjects(a.root)


def test_sync_registers_the_driver_and_commits_gitattributes(tmp_path, remote):
    a = Vault.init(tmp_path / "a")
    assert "merge=hafiza" in (a.root / ".gitattributes").read_text()
    assert ".gitattributes" in git(a.root, "ls-files")
    assert "hafiza.vault.driver" in git(a.root, "config", "merge.hafiza.driver")
    git(a.root, "config", "--remove-section", "merge.hafiza")  # a clone made by plain git
    set_remote(a, str(remote))
    sync(a)
    assert "hafiza.vault.driver %O %A %B %P" in git(a.root, "config", "merge.hafiza.driver")


def test_an_unreachable_remote_is_one_clear_error_and_nothing_is_lost(tmp_path):
    a = Vault.init(tmp_path / "a")
    set_remote(a, str(tmp_path / "nowhere.git"))
    a.remember("kept while offline", id="offline")
    (a.memories_dir / "hand.md").write_text("---\nid: hand\n---\nwritten by hand\n")
    with pytest.raises(HafizaError, match=r"cannot reach origin .*Nothing was lost") as exc:
        sync(a)
    assert "\n" not in exc.value.message
    assert git(a.root, "status", "--porcelain") == ""  # the hand edit is committed locally
    assert git_subjects(a.root)[:2] == ["hafiza: record manual edits", "hafiza: remember offline"]
    proc = run_cli("--vault", str(a.root), "sync", check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("Error: cannot reach origin")


def test_no_remote_says_how_to_set_one(vault):
    with pytest.raises(HafizaError, match="hafiza remote set URL"):
        sync(vault)
    with pytest.raises(HafizaError, match="not a remote URL"):
        set_remote(vault, "--upload-pack=touch pwned")
    with pytest.raises(HafizaError, match="not a remote's name"):
        set_remote(vault, "/tmp/x.git", "-v")
    with pytest.raises(HafizaError, match="not a remote's name"):
        sync(vault, "--upload-pack=touch pwned")
    assert not (vault.root / "pwned").exists() and vault.git.remote_url("origin") is None


def test_two_vaults_started_apart_join_one_remote(tmp_path, remote):
    a, b = Vault.init(tmp_path / "a"), Vault.init(tmp_path / "b")
    a.remember("from a", id="from-a")
    b.remember("from b", id="from-b")
    for vault in (a, b):
        set_remote(vault, str(remote))
    _settle(a, b)
    assert {m.id for m in b.load_all()[0]} == {"from-a", "from-b"}


def test_both_machines_wrote_then_each_syncs(pair, remote):
    a, b = pair
    a.remember("a's new one", id="from-a")
    b.remember("b's new one", id="from-b")
    sync(b)
    report = sync(a)
    assert report.came_in["added"] == ["from-b"] and report.went_out["added"] == ["from-a"]
    assert "a's new one" in git(remote, "show", "main:memories/from-a.md")


def test_a_concurrent_writer_loses_nothing(pair):
    a, b = pair
    b.remember("b's work", id="b-work")
    for n in range(3):
        b.update("note", f"line one\nline two\nb edit {n}")
    sync(b)
    code = ("import sys; from hafiza.vault.store.vault import Vault\n"
            "v = Vault(sys.argv[1])\n"
            "for n in range(6): v.remember(f'written meanwhile {n}', id=f'meanwhile-{n}')\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(a.root)])
    sync(a)
    assert proc.wait(timeout=120) == 0
    sync(a)
    ids = {m.id for m in a.load_all()[0]}
    assert {f"meanwhile-{n}" for n in range(6)} | {"b-work", "note"} <= ids
    assert git(a.root, "status", "--porcelain") == ""


# ---- conflicts a person settles


def test_resolve_keeps_ours_theirs_or_both(pair):
    a, b = pair
    a.update("note", "line one\nfrom a\nline three")
    b.update("note", "line one\nfrom b\nline three")
    _settle(a, b)
    proc = run_cli("--vault", str(a.root), "doctor", check=False)
    assert "note" in proc.stdout and "hafiza resolve" in proc.stdout
    assert "note: body" in run_cli("--vault", str(a.root), "resolve").stdout
    with pytest.raises(HafizaError, match="--keep"):
        resolve(a, "note")
    body = a.get("note").body
    assert conflicts.pick(body, "ours") == "line one\nfrom b\nline three"  # B merged A's push: B's text is ours
    resolve(a, "note", "both")
    memory = a.get("note")
    assert "from a" in memory.body and "from b" in memory.body and not conflicts.fences(memory.body)
    assert git_subjects(a.root)[0] == "hafiza: resolve note (keep both)"
    assert conflicted(a) == {}
    with pytest.raises(HafizaError, match="holds no merge conflict"):
        resolve(a, "note", "ours")


def test_ours_is_this_machines_text_on_the_machine_that_fast_forwarded_too(pair):
    """A syncs its edit, B merges a conflicting one and pushes, A fast-forwards: on A `--keep ours` kept B's text,
    and B's title had become an alias of A's (issue 30, item 5)."""
    a, b = pair
    a.update("note", "Never push to main after 14:00.", title="Never push after 14:00")
    sync(a)
    b.update("note", "Never push to main after 15:00.", title="Never push after 15:00")
    sync(b)  # B merges A's edit: its own text stays the body, A's is fenced
    sync(a)  # A takes B's merge as it is: a fast-forward
    body = a.get("note").body
    assert a.git.head() == b.git.head() and conflicted(a) == {"note": ["body"]}
    assert conflicts.sides(body, this_machine(a.git)) == ("Never push to main after 14:00.",
                                                           "Never push to main after 15:00.")
    assert conflicts.sides(body, this_machine(b.git)) == ("Never push to main after 15:00.",
                                                           "Never push to main after 14:00.")
    assert not any("push" in alias for alias in a.get("note").aliases)  # a title is not an alias
    proc = run_cli("--vault", str(a.root), "resolve", "note", "--keep", "ours")
    assert "this machine's text" in proc.stdout
    memory = a.get("note")
    assert (memory.title, memory.body, memory.aliases) == ("Never push after 14:00", "Never push to main after 14:00.", [])
    sync(a)
    sync(b)
    assert b.get("note").body == "Never push to main after 14:00." and conflicted(b) == {}


def test_resolve_json_lists_the_conflicts_as_json_alone(pair):
    """`resolve --json` printed the human lines after the JSON, so no script could parse it (found by the
    week in tests/test_week.py)."""
    a, b = pair
    a.update("note", "line one\nfrom a\nline three")
    b.update("note", "line one\nfrom b\nline three")
    _settle(a, b)
    assert json.loads(run_cli("--vault", str(a.root), "resolve", "--json").stdout) == {"note": ["body"]}


def test_pick_settles_every_body_fence():
    body = "mine\n" + conflicts.fence("body", "theirs", "m")
    assert conflicts.pick(body, "ours") == "mine"
    assert conflicts.pick(body, "theirs") == "theirs"
    assert conflicts.pick(body, "both") == "mine\n\ntheirs"
    assert conflicts.fences(conflicts.fence("body", "x -->", "m"))[0].text == "x -->"


def test_reconcile_never_leaves_markers_and_keeps_both_sides_of_a_text_file():
    found = reconcile("profile.md", b"one\ntwo\n", b"one\nTWO a\n", b"one\ntwo b\n")
    assert found.note and b"TWO a" in found.data and b"two b" in found.data and b"<<<<<<<" not in found.data
    assert reconcile("episodes/2026-12.jsonl", None, b'{"a": 1}\n', b'{"b": 2}\n').data == b'{"a": 1}\n{"b": 2}\n'
    kept = reconcile("memories/x.md", b"---\nid: x\n---\nold\n", None, b"---\nid: x\n---\nnew\n")
    assert kept.data.endswith(b"new\n") and "deleted" in kept.note


# ---- merges made without the driver


def test_a_plain_git_pull_that_stopped_is_finished_by_sync(pair, tmp_path):
    a, b = pair
    a.remember("used once on each machine", id="other")
    sync(a), sync(b)
    git(b.root, "config", "--remove-section", "merge.hafiza")  # as if this clone never ran hafiza
    a.update("note", "line one from a\nline two\nline three")
    _use(2)(a)
    a.record_use(["other"])
    sync(a)
    b.record_use(["other"])
    b.fold()
    b.update("note", "line one\nline two\nline three b")
    _edit(b, "note", shown=7)
    proc = subprocess.run(["git", "-C", str(b.root), "pull", "--no-rebase", "-q", "origin", "main"],
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "CONFLICT" in proc.stdout + proc.stderr
    with pytest.raises(HafizaError, match="git merge is under way"):
        b.remember("blocked while merging")
    report = sync(b)
    memory = b.get("note")
    assert memory.body == "line one from a\nline two\nline three b" and memory.shown == 7 and memory.used == 3
    assert not b.git.merging() and len(git(b.root, "log", "-1", "--format=%P").split()) == 2
    assert b.get("other").used == 2  # the same bytes on both sides, which git took without a conflict
    assert report.pushed


def test_markers_committed_by_a_web_merge_are_repaired(pair, tmp_path, remote):
    a, b = pair
    server = tmp_path / "server"
    git(tmp_path, "clone", "-q", str(remote), str(server))  # a clone that never ran hafiza: no driver
    git(server, "config", "user.name", "Web"), git(server, "config", "user.email", "web@example.com")
    git(server, "checkout", "-q", "-b", "feature")
    text = (server / "memories/note.md").read_text().replace("shown: 3", "shown: 5").replace("line two", "line 2 web")
    (server / "memories/note.md").write_text(text)
    git(server, "commit", "-qam", "edit on a branch")
    git(server, "checkout", "-q", "main")
    a.update("note", "line one\nline two from a\nline three")
    _edit(a, "note", shown=4)
    sync(a)
    git(server, "pull", "-q", "origin", "main")
    proc = subprocess.run(["git", "-C", str(server), "merge", "feature"], capture_output=True, text=True)
    assert proc.returncode != 0
    git(server, "commit", "-qam", "merge pull request (markers and all)")
    git(server, "push", "-q", "origin", "main")
    proc = run_cli("--vault", str(b.root), "sync", "--json")
    report = json.loads(proc.stdout)
    assert any("merged again" in n for n in report["notes"]), report
    memory = b.get("note")
    assert memory.shown == 6  # 3 + 2 on the branch + 1 on a
    assert "line 2 web" in memory.body and "line two from a" in memory.body
    doctor = json.loads(run_cli("--vault", str(b.root), "doctor", "--json", check=False).stdout)
    assert [c for c in doctor if c["name"] == "sync"][0]["level"] in ("ok", "warn")
    _settle(a, b)


def test_doctor_names_conflict_markers(vault):
    (vault.memories_dir / "bad.md").write_text("---\nid: bad\n<<<<<<< ours\nshown: 1\n=======\nshown: 2\n>>>>>>> theirs\n---\nx\n")
    checks = json.loads(run_cli("--vault", str(vault.root), "doctor", "--json", check=False).stdout)
    found = [c for c in checks if c["name"] == "sync"][0]
    assert found["level"] == "fail" and any("bad.md" in d for d in found["details"])


# ---- the command line


def test_remote_init_from_and_sync_on_the_command_line(tmp_path, remote):
    a = tmp_path / "a"
    run_cli("--vault", str(a), "init")
    run_cli("--vault", str(a), "remember", "first memory from a", "--id", "first")
    assert "no remote" in run_cli("--vault", str(a), "remote").stdout
    run_cli("--vault", str(a), "remote", "set", str(remote))
    assert run_cli("--vault", str(a), "remote").stdout.strip() == str(remote)
    out = run_cli("--vault", str(a), "sync").stdout
    assert "out 1 added" in out and "first push" in out
    b = tmp_path / "b"
    out = run_cli("--vault", str(b), "init", "--from", str(remote)).stdout
    assert "1 memory indexed" in out
    hits = json.loads(run_cli("--vault", str(b), "search", "--json", "--mode", "keyword", "first memory").stdout)
    assert hits and hits[0]["id"] == "first"
    run_cli("--vault", str(b), "remember", "second from b", "--id", "second")
    run_cli("--vault", str(b), "sync")
    report = json.loads(run_cli("--vault", str(a), "sync", "--json").stdout)
    assert report["in"]["added"] == ["second"]
    hits = json.loads(run_cli("--vault", str(a), "search", "--json", "--mode", "keyword", "second").stdout)
    assert hits and hits[0]["id"] == "second"  # the index followed the merge
    proc = run_cli("--vault", str(tmp_path / "c"), "init", "--from", str(tmp_path / "missing.git"), check=False)
    assert proc.returncode == 1 and proc.stderr.startswith("Error: cannot clone")
    proc = run_cli("--vault", str(a), "init", "--from", str(remote), check=False)
    assert "not empty" in proc.stderr
    for args in (["sync"], ["remote"], ["remote", "set"], ["resolve"]):
        assert "Usage:" in run_cli(*args, "--help").stdout


def test_init_from_an_empty_remote_then_sync(tmp_path, remote):
    b = tmp_path / "b"
    run_cli("--vault", str(b), "init", "--from", str(remote))
    run_cli("--vault", str(b), "remember", "from an empty start", "--id", "start")
    assert "first push" in run_cli("--vault", str(b), "sync").stdout
    assert "start" in git(remote, "ls-tree", "-r", "--name-only", "main")


def test_markers_alone_are_not_a_conflict():
    assert conflicts.has_markers("a\n<<<<<<< ours\nx\n=======\ny\n>>>>>>> theirs\n")
    assert not conflicts.has_markers("git shows\n<<<<<<< HEAD\nwhere it stopped")


def test_a_push_that_lost_a_race_is_merged_and_pushed_again(pair, tmp_path, remote):
    a, b = pair
    b.remember("pushed while a was pushing", id="racer")
    a.remember("a's own", id="mine")
    hook = a.root / ".git" / "hooks" / "pre-push"
    flag = tmp_path / "raced"
    hook.write_text(f"#!/bin/sh\n[ -e {flag} ] && exit 0\ntouch {flag}\n"
                    f"env -u GIT_DIR -u GIT_INDEX_FILE git -C {b.root} push -q origin HEAD:main\n")
    hook.chmod(0o755)
    report = sync(a)
    assert flag.exists() and report.came_in["added"] == ["racer"]
    assert {"racer", "mine"} <= set(git(remote, "ls-tree", "--name-only", "main", "memories/").replace(
        "memories/", "").replace(".md", "").split())


def test_machines_editing_at_random_converge_and_keep_every_write(tmp_path, remote):
    """A property in the small: three machines make random changes and sync in random order; at the end all
    hold the same files, every memory made anywhere is there, every text written is somewhere, and the use
    counts are the sum of the uses recorded on every machine."""
    import random

    rng = random.Random(15)
    first = Vault.init(tmp_path / "m0")
    first.remember("seed memory", id="seed")
    set_remote(first, str(remote))
    sync(first)
    machines = [first] + [machine(tmp_path, remote, f"m{n}") for n in (1, 2)]
    made, texts, uses = {"seed"}, {"seed memory"}, 0
    for step in range(18):
        vault = rng.choice(machines)
        ids = sorted(m.id for m in vault.load_all()[0] if m.active)
        move = rng.choice(("remember", "update", "tag", "use", "use", "sync"))
        if move == "remember":
            memory = vault.remember(f"note {step} from {vault.root.name}", id=f"n{step}")
            made.add(memory.id)
            texts.add(memory.body)
        elif move == "update" and ids:
            text = f"{vault.get(ids[0]).body}\nline {step} from {vault.root.name}"
            vault.update(ids[0], text)
            texts.add(f"line {step} from {vault.root.name}")
        elif move == "tag" and ids:
            target = rng.choice(ids)
            _edit(vault, target, tags=[*vault.get(target).tags, f"t{step}"])
        elif move == "use" and ids:
            vault.record_use([rng.choice(ids)])
            uses += 1
        else:
            sync(vault)
    for _ in range(2):
        for vault in machines:
            sync(vault)
    trees = {git(v.root, "rev-parse", "HEAD^{tree}") for v in machines}
    assert len(trees) == 1
    memories, errors = machines[0].load_all()
    assert errors == [] and made <= {m.id for m in memories}
    everything = _all_text(machines[0])
    assert all(text in everything for text in texts)
    assert sum(m.used for m in memories) == uses


def test_sync_refuses_another_branch_checked_out(pair):
    a, _ = pair
    git(a.root, "checkout", "-q", "-b", "experiment")
    with pytest.raises(HafizaError, match="experiment checked out"):
        sync(a)


def test_keeping_the_other_text_takes_its_title_and_twins_are_reported_once(pair):
    a, b = pair
    a.update("note", "Alpha text from a", title="Alpha text from a")
    b.update("note", "Beta text from b", title="Beta text from b")
    a.remember("twin made on a", id="twin")
    b.remember("twin made on b", id="twin")
    sync(a)
    report = sync(b)
    assert report.came_in == {"added": [], "changed": ["note", "twin"], "superseded": []}
    assert report.went_out["added"] == ["twin-2"] and any("now twin-2" in n for n in report.notes)
    memory = b.get("note")
    assert memory.title == "Beta text from b" and memory.aliases == []  # a title is not an alias
    resolve(b, "note", "theirs")
    memory = b.get("note")
    assert (memory.title, memory.body) == ("Alpha text from a", "Alpha text from a")
    assert b.get("twin").body == "twin made on a" and b.get("twin-2").body == "twin made on b"


def test_a_plain_git_pull_goes_through_the_registered_driver(pair):
    a, b = pair
    _use(2)(a)
    a.update("note", "line one from a\nline two\nline three")
    a.remember("twin made on a", id="twin")
    sync(a)
    _use(3)(b)
    b.fold()
    b.update("note", "line one\nline two\nline three from b")
    b.remember("twin made on b", id="twin")
    proc = subprocess.run(["git", "-C", str(b.root), "pull", "--no-rebase", "--no-edit", "-q", "origin", "main"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr  # no conflict: the driver merged both files
    assert "twin was created on two machines" in proc.stderr
    memory = b.get("note")
    assert (memory.used, memory.body) == (6, "line one from a\nline two\nline three from b")
    assert conflicted(b) == {"twin": ["same-id"]} and b.get("twin").body.startswith("twin made on a")
    assert resolve(b, "twin") == ["twin was created on two machines with different texts: both kept, the one "
                                  "from this side is now twin-2"]
    assert b.get("twin-2").body == "twin made on b" and conflicted(b) == {}


def test_the_driver_names_the_machine_that_merged_a_plain_git_pull(pair):
    a, b = pair
    a.update("note", "line one\nline two from a\nline three")
    sync(a)
    b.update("note", "line one\nline two from b\nline three")
    proc = subprocess.run(["git", "-C", str(b.root), "pull", "--no-rebase", "--no-edit", "-q", "origin", "main"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr  # both texts kept by the driver
    [fence] = conflicts.fences(b.get("note").body)
    assert fence.info["merged_on"] == this_machine(b.git) != this_machine(a.git)
    sync(b)
    sync(a)
    assert conflicts.sides(a.get("note").body, this_machine(a.git))[0] == "line one\nline two from a\nline three"


def test_search_sees_both_texts_of_a_conflict_but_not_its_fence():
    from hafiza.indexer.index import document

    memory = model.Memory(id="m", title="T", body="kept here\n" + conflicts.fence("body", "kept there", "m"))
    fields = document(memory, "digest")
    assert "kept here" in fields["body"] and "kept there" in fields["body"]
    assert conflicts.START not in fields["body"] + fields["snippet"] and "machines" not in fields["body"]


def test_an_open_conflict_is_recalled_as_two_texts_labelled_in_conflict(tmp_path, remote):
    """Issue 30, item 6: while both texts are kept, the prompt hook shows each apart and says they
    disagree, instead of one line gluing "after 14:00 ... after 15:00"."""
    from test_hooks import CLAUDE_PROMPT, context_of, hook

    a = Vault.init(tmp_path / "a")
    a.remember("Never push to main on Fridays after 14:00.", id="friday-push", type="rule")
    set_remote(a, str(remote))
    sync(a)
    b = machine(tmp_path, remote, "b")
    a.update("friday-push", "Never push to main on Fridays after 15:00.")
    b.update("friday-push", "Never push to main on Fridays after 16:00.")
    _settle(a, b)
    prompt = {**CLAUDE_PROMPT, "prompt": "can I push to main on friday afternoon?"}
    text = context_of(hook("claude-code", "UserPromptSubmit", prompt, {"HAFIZA_VAULT": str(a.root)}))
    [line] = [line for line in text.splitlines() if "friday-push" in line]
    assert "in conflict: 2 texts disagree" in line and text.startswith("<hafiza-recall>")
    assert "text 1: Never push to main on Fridays after 1" in line and " / text 2: Never push" in line
    assert "15:00" in line and "16:00" in line
    out = run_cli("--vault", str(a.root), "search", "push to main on fridays", "--mode", "keyword").stdout
    assert "friday-push  (rule) [in conflict: 2 texts]" in out

    async def recall():
        from test_mcp import inproc, ok

        async with inproc(a.root) as client:
            return (await ok(client, "recall", query="can I push to main on friday afternoon?"))["hits"]

    [hit] = [h for h in anyio.run(recall) if h["id"] == "friday-push"]
    assert "in conflict: 2 texts disagree, none chosen yet" in hit["labels"]
    assert hit["snippet"].startswith("text 1: Never push") and " / text 2: Never push" in hit["snippet"]
    resolve(a, "friday-push", "ours")
    text = context_of(hook("claude-code", "UserPromptSubmit", {**prompt, "session_id": "s-2"},
                           {"HAFIZA_VAULT": str(a.root)}))
    assert "in conflict" not in text and "friday-push" in text


def test_init_from_shows_its_embedding_on_a_terminal_from_the_start(tmp_path, remote):
    """Issue 30, item 10: `init --from` sat silent while the model loaded; on a terminal a bar shows from
    0%, before the first batch (which loads the model); on a pipe nothing is drawn."""
    import pty

    a = Vault.init(tmp_path / "a")
    a.import_many([{"text": f"Note {n} about the build, kept for the team."} for n in range(20)], "test")
    set_remote(a, str(remote))
    sync(a)
    argv = [sys.executable, "-m", "hafiza.cli.main", "--vault", str(tmp_path / "b"), "init", "--from", str(remote)]
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=follower, text=True,
                              timeout=120)
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal's other end closed and all of it was read
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(leader)
    assert proc.returncode == 0 and "20 memories indexed" in proc.stdout
    assert "embedding [" in shown.decode() and "  0%  0/" in shown.decode()
    piped = run_cli("--vault", str(tmp_path / "c"), "init", "--from", str(remote))
    assert piped.stderr == ""
