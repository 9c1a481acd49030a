"""Review branches: proposals as commits off main, accepted or rejected by a person, with real git."""

from __future__ import annotations


import pytest
from conftest import git, git_subjects

from hafiza.vault.format import model
from hafiza.vault.errors import HafizaError, SecretRefused
from hafiza.vault.sync.merge import Conflict, merge
from hafiza.vault.review import RULINGS, Action, Review


def _archive(vault, memory_id: str, why: str = "unused") -> Action:
    memory = vault.get(memory_id).evolve(status="archived", archived_reason=why)
    return Action("archive", f"archive {memory_id}", f"archive:{memory_id}",
                  {f"memories/{memory_id}.md": model.dump(memory).encode()}, why,
                  evidence="never used", confidence=0.9, guards=("not-a-rule",), ids=(memory_id,))


@pytest.fixture
def three(vault):
    for n in (1, 2, 3):
        vault.remember(f"note number {n} about the build", id=f"note-{n}")
    return vault


def test_proposals_land_on_a_branch_and_main_is_untouched(three):
    review = Review(three)
    head, status = three.git.head(), git(three.root, "status", "--porcelain")
    name = review.start("curate")
    for n in (1, 2):
        review.propose(name, _archive(three, f"note-{n}"))
    assert three.git.head() == head and git(three.root, "status", "--porcelain") == status
    assert three.get("note-1").status == "active"
    branch = review.branch()
    assert branch.name == name and [p.state for p in branch.proposals] == ["open", "open"]
    log = git(three.root, "log", "--format=%s%n%b", name, "-n1")
    assert "hafiza: archive note-2" in log and "Hafiza-Evidence: never used" in log
    assert "Hafiza-Proposal: archive:note-2" in log and review.open_keys() == {"archive:note-1", "archive:note-2"}


def test_accepting_some_actions_makes_one_commit_each_and_undo_reverts_one(three):
    review = Review(three)
    name = review.start("curate")
    for n in (1, 2, 3):
        review.propose(name, _archive(three, f"note-{n}"))
    results = review.accept(review.branch(name), only=[1, 3])
    assert [p.number for p, _ in results] == [1, 3]
    assert three.get("note-1").status == "archived" and three.get("note-2").status == "active"
    assert git_subjects(three.root)[:2] == ["hafiza: archive note-3", "hafiza: archive note-1"]
    assert [p.state for p in review.branch(name).proposals] == ["accepted", "open", "accepted"]
    three.undo()
    assert three.get("note-3").status == "active" and three.get("note-1").status == "archived"


def test_rejecting_records_a_committed_ruling_and_removes_the_decided_branch(three):
    review = Review(three)
    name = review.start("curate")
    review.propose(name, _archive(three, "note-1"))
    review.propose(name, _archive(three, "note-2"))
    review.accept(review.branch(name), only=[1])
    review.reject(review.branch(name), why="I still need it")
    assert three.git.branch_tip(name) is None  # nothing left to decide
    assert review.rulings()["archive:note-2"]["why"] == "I still need it"
    assert RULINGS in git(three.root, "ls-files")
    assert git_subjects(three.root)[0] == f"hafiza: reject 1 proposal of {name}"
    with pytest.raises(HafizaError, match="no review branch has open proposals"):
        review.branch()


def test_accept_merges_with_what_main_did_since(three):
    review = Review(three)
    name = review.start("curate")
    review.propose(name, _archive(three, "note-1"))
    three.add_aliases("note-1", ["derleme notu"])  # main moves on the same file, another field
    [(proposal, sha)] = review.accept(review.branch(name))
    memory = three.get("note-1")
    assert memory.status == "archived" and memory.aliases == ["derleme notu"] and len(sha) == 40


def test_a_conflicting_action_is_left_open_with_the_reason(three):
    review = Review(three)
    name = review.start("curate")
    review.propose(name, _archive(three, "note-1", why="unused"))
    three.forget("note-1", reason="gone")  # main archived it for another reason
    [(proposal, outcome)] = review.accept(review.branch(name))
    assert outcome.startswith("not applied") and "archived_reason" in outcome
    assert review.branch(name).proposals[0].state == "open"


def test_a_branch_merged_on_the_server_is_done_and_tidied_away(three):
    review = Review(three)
    name = review.start("curate")
    review.propose(name, _archive(three, "note-1"))
    review.propose(name, _archive(three, "note-2"))
    git(three.root, "merge", "--no-ff", "-q", "-m", "merge pull request", name)  # as a pull brings it
    assert review.branches() == [] and three.git.branch_tip(name) is None
    assert review.open_keys() == set() and three.get("note-2").status == "archived"


def test_a_proposal_with_a_secret_is_refused(three):
    review = Review(three)
    memory = three.get("note-1").evolve(body="token ghp_" + "a1B2" * 9)
    action = Action("edit", "edit note-1", "edit:note-1", {"memories/note-1.md": model.dump(memory).encode()}, "x")
    with pytest.raises(SecretRefused):
        review.propose(review.start("curate"), action)


def test_apply_writes_to_main_with_the_trailers(three):
    sha = Review(three).apply(_archive(three, "note-2"))
    assert three.get("note-2").status == "archived"
    assert three.git.get(sha).trailers["Hafiza-Proposal"] == "archive:note-2"


def test_push_sends_the_branch_to_a_bare_remote(three, tmp_path):
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    review = Review(three)
    name = review.start("curate")
    review.propose(name, _archive(three, "note-1"))
    with pytest.raises(HafizaError, match="no git remote"):
        review.push(review.branch(name))
    for hostile in ("--upload-pack=touch pwned", "-v", "origin main"):
        with pytest.raises(HafizaError, match="not a remote's name"):
            review.push(review.branch(name), hostile)
    assert not (three.root / "pwned").exists()
    git(three.root, "remote", "add", "origin", str(remote))
    assert review.push(review.branch(name)) == str(remote)
    assert name in git(remote, "branch", "--list")


def _memory_bytes(**changes) -> bytes:
    base = model.Memory(id="m", title="T", body="body\n", shown=3, used=1, tags=["a", "b"])
    return model.dump(base.evolve(**changes)).encode()


def test_memory_merge_adds_counters_takes_one_sided_changes_and_merges_sets():
    base = _memory_bytes()
    ours = _memory_bytes(shown=5, tags=["a"])              # two impressions; removed tag b
    theirs = _memory_bytes(shown=4, status="archived", tags=["a", "b", "c"])
    merged = model.parse(merge("memories/m.md", base, ours, theirs).decode())
    assert (merged.shown, merged.status, merged.tags) == (6, "archived", ["a", "c"])


def test_memory_merge_refuses_both_sides_changing_the_body():
    with pytest.raises(Conflict, match="body"):
        merge("memories/m.md", _memory_bytes(), _memory_bytes(body="ours"), _memory_bytes(body="theirs"))


def test_jsonl_merges_as_a_union():
    assert merge(RULINGS, b"a\n", b"a\nb\n", b"a\nc\n") == b"a\nb\nc\n"


def test_doctor_says_when_proposals_wait(three):
    import json

    from conftest import run_cli

    review = Review(three)
    review.propose(review.start("curate"), _archive(three, "note-1"))
    checks = {c["name"]: c for c in json.loads(run_cli("doctor", "--json", check=False).stdout)}
    assert checks["review"]["level"] == "warn" and checks["review"]["summary"].startswith("1 proposal waits")


@pytest.mark.parametrize("kind", ["curate", "capture"])
def test_what_main_decided_is_not_proposed_again_by_a_later_branch(three, kind):
    """Issue 30, item 3: main's accept and reject commits carry the trailer a branch walk looks for; a
    branch begun after them must not take them for its own proposals."""
    import json

    from conftest import run_cli
    from hafiza.skills import capture
    from test_capture import turns

    if kind == "capture":
        capture.file(three, turns("Never push to main on Fridays.", "I prefer small commits with one change each.",
                                  "From now on run the tests with pnpm, not npm."))
        run_cli("inbox", "accept", "1")
        run_cli("inbox", "reject", "3", "--why", "not now")
        capture.file(three, turns("Always squash merge feature branches.", session="s-2"))
        listed = [p.commit.subject for _, p in capture.inbox(three)]
        assert listed == ["hafiza: capture i-prefer-small-commits-with-one-change-each",
                          "hafiza: capture always-squash-merge-feature-branches"]
    else:
        review = Review(three)
        three.remember("note number 4 about the build", id="note-4")
        first = review.start("curate")
        for n in (1, 2, 3):
            review.propose(first, _archive(three, f"note-{n}"))
        review.accept(review.branch(first), only=[1])
        review.reject(review.branch(first), only=[2], why="keep it")
        later = review.start("curate")
        review.propose(later, _archive(three, "note-4"))
        assert [p.key for p in review.branch(later).proposals] == ["archive:note-4"]
        assert review.open_keys() == {"archive:note-3", "archive:note-4"}
        review.accept(review.branch(later))
        assert git_subjects(three.root).count("hafiza: archive note-1") == 1  # not applied a second time
        assert review.open_keys() == {"archive:note-3"}
    checks = {c["name"]: c for c in json.loads(run_cli("doctor", "--json", check=False).stdout)}
    assert checks["review"]["summary"].startswith(("2 proposals wait" if kind == "capture" else "1 proposal waits"))
