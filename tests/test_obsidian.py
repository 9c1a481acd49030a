"""A vault kept open in Obsidian: its per-device files (open panes, recent files, caches) and its trash never
reach git, through the real write path, while a hand edit made in Obsidian is committed as one.

Obsidian writes `.obsidian/workspace.json` (and `workspace-mobile.json` on a phone) on every click, keeps a
cache, and moves deleted notes to `.trash/`; its shared settings (`app.json`) may be committed.
"""

from __future__ import annotations

import json

from conftest import git, run_cli


def obsidian_day(root) -> None:
    """What a day in Obsidian leaves in the vault folder."""
    settings = root / ".obsidian"
    settings.mkdir(exist_ok=True)
    (settings / "workspace.json").write_text(json.dumps({"main": {"active": "memories/deploys.md"}}))
    (settings / "workspace-mobile.json").write_text("{}")
    (settings / "app.json").write_text(json.dumps({"alwaysUpdateLinks": True}))
    (settings / "cache").write_text("binary-ish cache")
    (root / ".trash").mkdir(exist_ok=True)
    (root / ".trash" / "old-note.md").write_text("a note deleted in Obsidian\n")


def committed(root) -> set[str]:
    return set(git(root, "ls-files").split())


def ever_committed(root) -> str:
    return git(root, "log", "--all", "--name-only", "--format=")


def test_a_new_vault_keeps_obsidians_device_files_out_and_commits_a_hand_edit(vault):
    run_cli("remember", "Deploys only from main.", "--id", "deploys")
    obsidian_day(vault.root)
    note = vault.root / "memories" / "deploys.md"
    note.write_text(note.read_text().replace("Deploys only from main.", "Deploys only from main, after CI."))
    run_cli("remember", "The staging db listens on 5433.")
    run_cli("used", "deploys")
    run_cli("fold")
    obsidian_day(vault.root)  # more clicks
    (vault.root / ".obsidian" / "workspace.json").write_text(json.dumps({"main": {"active": "x"}}))
    run_cli("forget", "deploys", "--reason", "moved to the runbook")

    history = ever_committed(vault.root)
    assert "workspace" not in history and ".trash" not in history and ".obsidian/cache" not in history
    assert ".obsidian/app.json" in committed(vault.root)  # a shared setting may travel
    subjects = git(vault.root, "log", "--format=%s").splitlines()
    assert "hafiza: record manual edits" in subjects
    manual = git(vault.root, "log", "--format=%H", "--grep", "record manual edits").split()
    assert any("memories/deploys.md" in git(vault.root, "show", "--name-only", "--format=", sha) for sha in manual)
    assert (vault.root / ".obsidian" / "workspace.json").exists() and (vault.root / ".trash" / "old-note.md").exists()


def test_a_vault_of_an_earlier_version_stops_tracking_them_at_its_next_write(vault):
    """An earlier hafiza's .gitignore held only .hafiza/, and its "record manual edits" committed Obsidian's
    files: the next write adds the lines and untracks those files (they stay on disk), in a commit of its own."""
    (vault.root / ".gitignore").write_text(".hafiza/\n")
    obsidian_day(vault.root)
    git(vault.root, "add", "-A")
    git(vault.root, "commit", "-qm", "hafiza: record manual edits")
    assert ".obsidian/workspace.json" in committed(vault.root)

    run_cli("remember", "Deploys only from main.")

    ignore = (vault.root / ".gitignore").read_text()
    assert ignore.startswith(".hafiza/\n") and ".obsidian/workspace*.json" in ignore and ".trash/" in ignore
    tracked = committed(vault.root)
    assert not {p for p in tracked if "workspace" in p or p.startswith(".trash/") or p == ".obsidian/cache"}
    assert ".obsidian/app.json" in tracked
    assert (vault.root / ".obsidian" / "workspace.json").exists()
    subjects = git(vault.root, "log", "--format=%s", "-3").splitlines()
    assert subjects[:2] == ["hafiza: remember deploys-only-from-main",
                            "hafiza: keep editors' per-device files out of git"]
    # undo takes back the remember, not the housekeeping commit before it
    run_cli("undo")
    assert ".obsidian/workspace.json" not in committed(vault.root)
    obsidian_day(vault.root)
    run_cli("remember", "The staging db listens on 5433.")
    assert ".obsidian/workspace.json" not in committed(vault.root)
    assert git(vault.root, "status", "--porcelain") == ""
