"""A vault in a SHA-256 git repository (`git init --object-format=sha256`; issue 29, item 7): adopted by
`hafiza init` and written, undone and synced as a SHA-1 one is, from the installed command."""

from __future__ import annotations

import pytest

from conftest import git, git_subjects, run_cli


@pytest.fixture
def sha256(tmp_path):
    root = tmp_path / "vault"
    try:
        git(tmp_path, "init", "-q", "-b", "main", "--object-format=sha256", str(root))
    except Exception:
        pytest.skip("this git cannot make SHA-256 repositories")
    return root


def test_init_adopts_a_sha256_repository_and_every_write_commits(sha256, tmp_path):
    run_cli("init")
    run_cli("remember", "Deploy to production only from main, after CI is green.", "--title", "Production deploys")
    run_cli("remember", "Staging deploys go through Argo.", "--title", "Staging deploys")
    (sha256 / "memories" / "by-hand.md").write_text("---\nid: by-hand\ntitle: Written by hand\n---\nA hand edit.\n")
    run_cli("forget", "staging-deploys", "--reason", "moved to Flux")
    run_cli("undo")
    assert "production-deploys" in run_cli("search", "production deploys main").stdout
    assert git(sha256, "rev-parse", "--show-object-format").strip() == "sha256"
    assert len(git(sha256, "rev-parse", "HEAD").strip()) == 64
    subjects = git_subjects(sha256)
    assert "hafiza: remember production-deploys" in subjects and "hafiza: record manual edits" in subjects
    assert git(sha256, "status", "--porcelain") == ""
    git(sha256, "fsck", "--full", "--strict")
    assert "FAIL" not in run_cli("doctor", check=False).stdout

    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", "--object-format=sha256", str(remote))
    run_cli("remote", "set", str(remote))
    run_cli("sync")
    other = tmp_path / "other"
    run_cli("init", "--from", str(remote), env={"HAFIZA_VAULT": str(other)})
    run_cli("remember", "Billing needs a second reviewer.", env={"HAFIZA_VAULT": str(other)})
    run_cli("sync", env={"HAFIZA_VAULT": str(other)})
    assert "added      billing" in run_cli("sync").stdout and list((sha256 / "memories").glob("billing*"))
