"""The git store: one commit per change with trailers, manual edits recorded, undo as revert."""

import datetime as dt
import json
import subprocess

import pytest

from conftest import git_subjects, run_cli
from hafiza.vault.format import model
from hafiza.vault.store import usage
from hafiza.vault.errors import GitError, HafizaError
from hafiza.vault.git import GitStore, message


def git(root, *args) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


def trailer(root, key, rev="HEAD") -> str:
    return git(root, "log", "-1", f"--format=%(trailers:key={key},valueonly)", rev).strip()


def search_ids(*args) -> list[str]:
    return [hit["id"] for hit in json.loads(run_cli("search", "--json", *args).stdout)]


def test_commits_carry_the_trailers_git_itself_parses(vault):
    vault.remember("We use pnpm.", id="pnpm", reason="the team switched in May")
    assert git_subjects(vault.root)[0] == "hafiza: remember pnpm"
    assert trailer(vault.root, "Hafiza-Action") == "remember"
    assert trailer(vault.root, "Hafiza-Actor") == "cli"
    assert trailer(vault.root, "Hafiza-Reason") == "the team switched in May"
    assert git(vault.root, "show", "--name-only", "--format=", "HEAD").split() == ["memories/pnpm.md"]


def test_the_actor_is_whoever_opened_the_vault(vault):
    from hafiza.vault.store.vault import Vault

    Vault(vault.root, actor="curator").remember("We use pnpm.", id="pnpm")
    assert trailer(vault.root, "Hafiza-Actor") == "curator"


def test_a_multiline_reason_stays_one_trailer(vault):
    vault.remember("x", id="x", reason="first line\nsecond line")
    assert trailer(vault.root, "Hafiza-Reason") == "first line second line"


def test_the_git_store_commits_at_a_given_time_and_returns_the_sha(vault):
    store = GitStore(vault.root)
    (vault.memories_dir / "a.md").write_text("---\nid: a\n---\nA\n")
    when = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
    sha = store.commit(["memories/a.md"], message("remember a", "remember", "test", "because"), when=when)
    assert sha == git(vault.root, "rev-parse", "HEAD").strip()
    assert git(vault.root, "log", "-1", "--format=%aI|%cI").strip() == "2026-01-02T03:04:05+00:00|2026-01-02T03:04:05+00:00"
    commit = store.log(1)[0]
    assert (commit.sha, commit.subject, commit.action, commit.is_hafiza) == (sha, "hafiza: remember a", "remember", True)
    assert commit.trailers == {"Hafiza-Action": "remember", "Hafiza-Actor": "test", "Hafiza-Reason": "because"}


def test_a_commit_without_a_user_identity_still_works(tmp_path, monkeypatch):
    from hafiza.vault.store.vault import Vault

    for key in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(key)
    monkeypatch.setenv("EMAIL", "")
    vault = Vault.init(tmp_path / "fresh")
    vault.remember("x", id="x")
    assert git(vault.root, "log", "-1", "--format=%an <%ae>").strip() == "hafiza <hafiza@localhost>"


@pytest.mark.parametrize("configured, expected", [
    ({"user.name": "Ayşe Yılmaz", "user.email": "ayse@example.com"}, "Ayşe Yılmaz <ayse@example.com>"),
    ({"user.name": "Ayşe Yılmaz"}, "hafiza <hafiza@localhost>"),  # half an identity: git would guess the rest
])
def test_commits_carry_the_users_git_identity_or_else_hafizas(tmp_path, monkeypatch, configured, expected):
    from hafiza.vault.store.vault import Vault

    for key in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(key)
    vault = Vault.init(tmp_path / "fresh")
    for key, value in configured.items():
        git(vault.root, "config", key, value)
    vault = Vault(vault.root)
    vault.remember("x", id="x")
    vault.remember("y", id="y")
    assert git(vault.root, "log", "-2", "--format=%an <%ae>|%cn <%ce>").split("\n")[:2] == [f"{expected}|{expected}"] * 2


def test_paths_outside_the_change_are_not_swept_into_the_commit(vault):
    vault.remember("We use pnpm.", id="pnpm")
    store = GitStore(vault.root)
    (vault.memories_dir / "a.md").write_text("---\nid: a\n---\nA\n")
    (vault.memories_dir / "b.md").write_text("---\nid: b\n---\nB\n")
    store.commit(["memories/a.md"], message("remember a", "remember", "test"))
    assert git(vault.root, "show", "--name-only", "--format=", "HEAD").split() == ["memories/a.md"]
    assert store.dirty()  # b.md is still the user's, uncommitted


def test_a_non_repository_is_a_git_error(tmp_path):
    with pytest.raises(GitError, match="not a git repository"):
        GitStore(tmp_path)


# ---- hand edits

def test_hand_edits_are_recorded_before_the_cli_change(vault):
    vault.remember("We use pnpm.", id="pnpm")
    path = vault.memories_dir / "pnpm.md"
    path.write_text(path.read_text().replace("We use pnpm.", "We use pnpm 9, with corepack."))
    run_cli("remember", "Deploy from main.", "--id", "deploy")
    assert git_subjects(vault.root)[:3] == ["hafiza: remember deploy", "hafiza: record manual edits",
                                            "hafiza: remember pnpm"]
    assert trailer(vault.root, "Hafiza-Action", "HEAD~1") == "manual-edits"
    assert "corepack" in git(vault.root, "show", "HEAD~1")
    assert git(vault.root, "status", "--porcelain") == ""


# ---- undo

def test_undo_reverts_the_latest_hafiza_commit(vault):
    vault.remember("We use pnpm.", id="pnpm")
    vault.remember("Deploy from main.", id="deploy")
    target, sha = vault.undo()
    assert target == git(vault.root, "rev-parse", "HEAD~1").strip()
    assert git_subjects(vault.root)[0] == "hafiza: undo remember deploy"
    assert trailer(vault.root, "Hafiza-Action") == "undo"
    assert trailer(vault.root, "Hafiza-Reason") == f"reverts {target}"
    assert not (vault.memories_dir / "deploy.md").exists() and (vault.memories_dir / "pnpm.md").exists()


def test_undo_of_a_named_older_commit(vault):
    vault.remember("We use pnpm.", id="pnpm")
    first = vault.git.head()
    vault.remember("Deploy from main.", id="deploy")
    run_cli("undo", first[:10])
    assert not (vault.memories_dir / "pnpm.md").exists() and (vault.memories_dir / "deploy.md").exists()


def test_undo_refuses_a_commit_hafiza_did_not_make(vault):
    vault.remember("We use pnpm.", id="pnpm")
    (vault.root / "README.md").write_text("my vault\n")
    git(vault.root, "add", "README.md")
    git(vault.root, "commit", "-q", "-m", "my own change")
    mine = git(vault.root, "rev-parse", "HEAD").strip()
    proc = run_cli("undo", mine, check=False)
    assert proc.returncode == 1
    assert proc.stderr.strip() == (f"Error: {mine[:10]} is not a hafiza commit ('my own change'); "
                                   "use git revert for your own commits")
    assert git(vault.root, "rev-parse", "HEAD").strip() == mine
    assert (vault.root / "README.md").exists()


def test_a_commit_that_only_looks_like_hafiza_is_refused(vault):
    (vault.root / "notes.txt").write_text("x\n")
    git(vault.root, "add", "notes.txt")
    git(vault.root, "commit", "-q", "-m", "hafiza: remember fake")  # no trailers
    with pytest.raises(HafizaError, match="not a hafiza commit"):
        vault.undo("HEAD")


def test_undo_refuses_the_first_commit_and_an_empty_history(vault):
    with pytest.raises(HafizaError, match="no hafiza commit to undo"):
        vault.undo()
    with pytest.raises(HafizaError, match="first commit cannot be undone"):
        vault.undo("HEAD")


def test_undo_skips_past_the_users_own_commits(vault):
    vault.remember("We use pnpm.", id="pnpm")
    (vault.root / "README.md").write_text("my vault\n")
    git(vault.root, "add", "README.md")
    git(vault.root, "commit", "-q", "-m", "my own change")
    vault.undo()
    assert not (vault.memories_dir / "pnpm.md").exists()
    assert (vault.root / "README.md").exists()


def test_an_undo_that_conflicts_leaves_nothing_behind(vault):
    vault.remember("We use pnpm.", id="pnpm")
    created = vault.git.head()
    vault.rewrite("pnpm", model.dump(vault.get("pnpm").evolve(body="We use pnpm 9.")))
    head = vault.git.head()
    with pytest.raises(GitError, match=r"cannot undo .* cleanly \(git revert failed: CONFLICT \(modify/delete\): "
                                       r"memories/pnpm.md deleted"):
        vault.undo(created)
    assert vault.git.head() == head
    assert git(vault.root, "status", "--porcelain") == ""
    assert vault.get("pnpm").body == "We use pnpm 9."


def test_a_second_undo_walks_back_and_redo_undoes_the_undo(vault):
    vault.remember("We use pnpm.", id="pnpm")
    vault.undo()
    with pytest.raises(HafizaError, match="no hafiza commit to undo"):  # nothing older than it to walk back to
        vault.undo()
    vault.undo(redo=True)
    assert vault.get("pnpm").body == "We use pnpm."
    assert git_subjects(vault.root)[:2] == ["hafiza: redo undo remember pnpm", "hafiza: undo remember pnpm"]
    with pytest.raises(HafizaError, match="nothing to redo"):
        vault.undo(redo=True)


def test_an_unknown_revision_is_one_error_line(vault):
    proc = run_cli("undo", "deadbeef", check=False)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == "Error: no commit 'deadbeef' in the vault's history\n"


def test_git_errors_name_the_reason_not_a_hint(vault):
    with pytest.raises(GitError) as err:
        vault.git.revert("deadbeef", "msg")
    assert err.value.message == "git revert failed: fatal: bad revision 'deadbeef'"


@pytest.mark.parametrize("rev", ["--output=OUT", "-o", "--help", "HEAD\n--output=OUT", ""])
def test_a_commit_name_is_never_read_as_an_option(vault, tmp_path, rev):
    """`hafiza undo -- --output=/tmp/x` made git write a file outside the vault."""
    out = tmp_path / "written-by-git"
    proc = run_cli("undo", "--", rev.replace("OUT", str(out)), check=False)
    assert proc.returncode == 1 and proc.stderr.startswith("Error: ")
    assert not out.exists()
    with pytest.raises(GitError):
        vault.git.get(rev.replace("OUT", str(out)))
    assert not out.exists()


# ---- the supersede / undo round trip, through the command line

def test_supersede_and_undo_round_trip(vault):
    run_cli("remember", "Paket yöneticisi olarak npm kullanıyoruz.", "--id", "npm-paket", "--title",
            "Paket yöneticisi npm")
    assert search_ids("paket yoneticisi") == ["npm-paket"]

    out = run_cli("remember", "Paket yöneticisi artık pnpm; npm kullanma.", "--id", "pnpm-paket",
                  "--title", "Paket yöneticisi pnpm", "--supersedes", "npm-paket").stdout
    assert "remembered pnpm-paket (supersedes npm-paket)" in out
    old = vault.get("npm-paket")
    assert (old.status, old.superseded_by) == ("superseded", "pnpm-paket")
    assert search_ids("paket yoneticisi") == ["pnpm-paket"]
    assert set(search_ids("paket yoneticisi", "--include-inactive")) == {"npm-paket", "pnpm-paket"}

    log = git(vault.root, "log", "--format=%s")
    assert "hafiza: remember pnpm-paket (supersedes npm-paket)" in log
    assert "hafiza: remember npm-paket" in log
    shown = json.loads(run_cli("log", "--json").stdout)
    assert [c["subject"] for c in shown[:2]] == ["hafiza: remember pnpm-paket (supersedes npm-paket)",
                                                 "hafiza: remember npm-paket"]

    run_cli("undo")
    assert git_subjects(vault.root)[0] == "hafiza: undo remember pnpm-paket (supersedes npm-paket)"
    old = vault.get("npm-paket")
    assert (old.status, old.superseded_by) == ("active", None)
    assert not (vault.memories_dir / "pnpm-paket.md").exists()
    assert search_ids("paket yoneticisi") == ["npm-paket"]


def test_supersede_command_and_its_undo(vault):
    vault.remember("We use npm.", id="npm")
    vault.remember("We use pnpm, never npm.", id="pnpm")
    run_cli("supersede", "npm", "pnpm", "--reason", "switched in May")
    assert git_subjects(vault.root)[0] == "hafiza: supersede npm with pnpm"
    assert trailer(vault.root, "Hafiza-Reason") == "switched in May"
    assert vault.get("pnpm").supersedes == ["npm"]
    assert search_ids("npm", "--mode", "keyword") == ["pnpm"]
    run_cli("undo")
    assert vault.get("npm").active and vault.get("pnpm").supersedes == []
    assert search_ids("npm", "--mode", "keyword") == ["npm", "pnpm"]


def test_undo_after_hand_edits_reverts_hafizas_change_not_the_edits(vault):
    vault.remember("We use pnpm.", id="pnpm")
    vault.remember("Staging is on port 8080.", id="staging")
    path = vault.memories_dir / "pnpm.md"
    path.write_text(path.read_text().replace("We use pnpm.", "We use pnpm 9."))
    run_cli("undo")
    assert git_subjects(vault.root)[:2] == ["hafiza: undo remember staging", "hafiza: record manual edits"]
    assert not (vault.memories_dir / "staging.md").exists()
    assert vault.get("pnpm").body == "We use pnpm 9."  # the person's edit stays


def test_undo_never_picks_a_recorded_hand_edit_by_default(vault):
    vault.remember("We use pnpm.", id="pnpm")
    vault.remember("Staging is on port 8080.", id="staging")
    path = vault.memories_dir / "pnpm.md"
    path.write_text(path.read_text().replace("We use pnpm.", "We use pnpm 9."))
    vault.fold()  # nothing to fold, but the hand edit is recorded
    assert git_subjects(vault.root)[0] == "hafiza: record manual edits"
    vault.undo()
    assert not (vault.memories_dir / "staging.md").exists()  # hafiza's last change was undone
    assert vault.get("pnpm").body == "We use pnpm 9."
    run_cli("undo", git(vault.root, "log", "--format=%H", "--grep=record manual edits").split()[0])
    assert git_subjects(vault.root)[0] == "hafiza: undo record manual edits"  # by name it is allowed


def test_undo_does_not_pick_the_fold_it_triggered(vault):
    vault.remember("We use pnpm.", id="pnpm")
    vault.remember("Staging is on port 8080.", id="staging")
    old = (dt.datetime.now() - dt.timedelta(days=3)).isoformat(timespec="seconds")
    (vault.sidecar / usage.LOG).write_text(f"{old}\tused\tpnpm\t\n")
    vault.undo()
    assert git_subjects(vault.root)[:2] == ["hafiza: undo remember staging", "hafiza: fold usage of 1 memory"]
    assert vault.get("pnpm").used == 1 and not (vault.memories_dir / "staging.md").exists()
