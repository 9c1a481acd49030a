"""A vault kept open in Obsidian: its per-device files (open panes, recent files, caches) and its trash never
reach git, through the real write path, while a hand edit made in Obsidian is committed as one.

Obsidian writes `.obsidian/workspace.json` (and `workspace-mobile.json` on a phone) on every click, keeps a
cache, and moves deleted notes to `.trash/`; its shared settings (`app.json`) may be committed.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys

import pytest

import obsidian_rules
from conftest import git, project_repo, run_cli
from hafiza.vault.format import model
from hafiza.vault.sync.merge import merge, reconcile


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


# ---- what Obsidian's Properties view, graph and tag pane make of the files (tests/obsidian_rules.py)

def _meta(root, rel: str) -> dict:
    return obsidian_rules.frontmatter((root / rel).read_text())[0]


def test_a_day_in_a_vault_open_in_obsidian_leaves_notes_by_obsidians_rules(vault, tmp_path):
    """remember, supersede, verify labelling a memory, facts, tags as people type them: every note's properties
    are types the Properties view shows and edits, every link names one note, every tag is valid, a supersede
    is a link both ways, and hafiza reads it all back as it wrote it."""
    from hafiza.indexer.refresh import writable
    from hafiza.skills import capture

    app = project_repo(tmp_path / "app", {"infra/deploy.sh": "#!/bin/sh\n", "README.md": "app\n"})
    obsidian_day(vault.root)
    run_cli("remember", "Deploys run `infra/deploy.sh` from main.", "--id", "deploys", "--scope", "project:app",
            "--tag", "#deploy", "--tag", "iki kelime", "--tag", "2026", "--alias", "canlıya çıkmak")
    run_cli("remember", "The staging db listens on 5433.", "--id", "staging-db", "--tag", "db")
    run_cli("remember", "The staging db listens on 5434 since the move.", "--id", "staging-db-new",
            "--supersedes", "staging-db")
    run_cli("remember", "Deploy from any branch.", "--id", "deploy-any")
    run_cli("supersede", "deploy-any", "deploys")
    run_cli("verify", "--extract", "--apply", "--project", f"app={app}")
    git(app, "mv", "infra/deploy.sh", "deploy.sh")
    git(app, "commit", "-qm", "move deploy.sh")
    run_cli("verify", "--project", f"app={app}")
    writer = writable(vault.root)
    old = writer.remember("Acme A.Ş. is based in Ankara; invoices go there.", type="fact", title="Acme's office",
                          created="2026-01-05")
    writer.set_fact("Acme A.Ş.", "based in", "Ankara", since="2024-02")
    writer.set_fact("Acme A.Ş.", "based in", "İzmir", since="2026-11-03")
    capture.file(writer, [], auto=True)
    capture.decide(writer, [1], accept=True)
    obsidian_day(vault.root)
    run_cli("used", "deploys")
    run_cli("fold")

    assert obsidian_rules.problems(vault.root) == []
    deploys = _meta(vault.root, "memories/deploys.md")
    assert deploys["claims"] == ["path infra/deploy.sh"]
    assert deploys["verified"] == "failed" and deploys["verified_at"] == dt.date.today()
    assert "infra/deploy.sh" in deploys["verified_note"] and deploys["verified_by"] == "verify"
    assert all(obsidian_rules.property_type(v) in ("text", "list", "number", "date") for v in deploys.values())
    assert deploys["tags"] == ["deploy", "iki-kelime", "_2026"] and deploys["aliases"] == ["canlıya çıkmak"]
    assert deploys["supersedes"] == ["[[deploy-any]]"]
    assert _meta(vault.root, "memories/deploy-any.md")["superseded_by"] == "[[deploys]]"
    assert _meta(vault.root, "memories/staging-db.md")["superseded_by"] == "[[staging-db-new]]"
    assert obsidian_rules.links(vault.root / "memories/staging-db-new.md") == ["staging-db"]
    assert _meta(vault.root, f"memories/{old.id}.md")["superseded_by"] == "[[facts/acme-a-s#based-in]]"
    # hafiza reads back what it wrote: ids, the fact's doc id, the label
    assert vault.get("staging-db").superseded_by == "staging-db-new" and vault.get("deploys").supersedes == ["deploy-any"]
    assert vault.get(old.id).superseded_by == "fact:acme-a-s/based-in"
    assert vault.get("deploys").verified["status"] == "failed"
    found = json.loads(run_cli("search", "canlıya çıkmak", "--project", "app", "--json").stdout)
    assert found and found[0]["id"] == "deploys"  # an alias is still a phrase search finds
    assert "workspace" not in ever_committed(vault.root)


OLD_FORM = """---
id: {id}
type: rule
title: {title}
scope: project:app
created: 2026-10-01
updated: 2026-10-02
tags: [deploy, 2026, '#ops']
supersedes: [{supersedes}]
{extra}status: active
claims:
  - {{probe: path, args: {{path: infra/deploy.sh}}, verified: {{status: failed, at: 2026-10-02, detail: gone}}}}
  - {{probe: contains, args: {{path: README.md, text: make deploy}}}}
verified: {{status: failed, at: 2026-10-02, by: verify, detail: infra/deploy.sh is gone, commit: abc1234def}}
---
{title}.
"""


def test_a_vault_written_before_reads_in_full_and_each_memory_migrates_at_its_next_write(vault):
    """Nested `verified` and claims, plain ids and tags Obsidian refuses, as an earlier hafiza wrote them: read
    as they were meant, and each memory rewritten in the new form by its own next write, no other."""
    files = {
        "old-deploy": OLD_FORM.format(id="old-deploy", title="Deploy from any branch", supersedes="", extra=""),
        "deploy": OLD_FORM.format(id="deploy", title="Deploy from main", supersedes="old-deploy", extra=""),
        "other": OLD_FORM.format(id="other", title="Deploy on Fridays", supersedes="", extra=""),
    }
    files["old-deploy"] = files["old-deploy"].replace("status: active\n", "status: superseded\nsuperseded_by: deploy\n")
    for memory_id, text in files.items():
        (vault.memories_dir / f"{memory_id}.md").write_text(text)
    git(vault.root, "add", "-A")
    git(vault.root, "commit", "-qm", "an earlier hafiza's files")
    assert obsidian_rules.problems(vault.root)  # what Obsidian could not show

    memory = vault.get("deploy")
    assert memory.supersedes == ["old-deploy"] and vault.get("old-deploy").superseded_by == "deploy"
    assert memory.tags == ["deploy", "_2026", "ops"]
    assert memory.claims == [{"probe": "path", "args": {"path": "infra/deploy.sh"}},
                             {"probe": "contains", "args": {"path": "README.md", "text": "make deploy"}}]
    assert memory.verified == {"status": "failed", "at": dt.date(2026, 10, 2), "by": "verify",
                               "detail": "infra/deploy.sh is gone", "commit": "abc1234def"}
    hit = json.loads(run_cli("search", "deploy from main", "--project", "app", "--json").stdout)[0]
    assert hit["verified"] == "failed" and hit["verified_note"].startswith("since 2026-10-02")  # labelled as before

    run_cli("alias", "deploy", "canlıya çıkmak")
    assert (vault.memories_dir / "other.md").read_text() == files["other"]  # no mass rewrite
    assert (vault.memories_dir / "old-deploy.md").read_text() == files["old-deploy"]
    migrated = _meta(vault.root, "memories/deploy.md")
    assert migrated["supersedes"] == ["[[old-deploy]]"] and migrated["tags"] == ["deploy", "_2026", "ops"]
    assert migrated["claims"] == ["path infra/deploy.sh", "contains README.md | make deploy"]
    assert (migrated["verified"], migrated["verified_at"], migrated["verified_note"], migrated["verified_commit"]) == (
        "failed", dt.date(2026, 10, 2), "infra/deploy.sh is gone", "abc1234def")
    assert vault.get("deploy").verified == memory.verified and vault.get("deploy").claims == memory.claims

    # said again, a supersession writes nothing (an empty commit was what `undo` took back); a superseded memory
    # takes no other write, so it keeps the form it was written in, read in full
    assert run_cli("supersede", "old-deploy", "deploy", check=False).returncode == 1
    assert (vault.memories_dir / "old-deploy.md").read_text() == files["old-deploy"]
    run_cli("alias", "other", "cuma")
    assert {p.split(":")[0] for p in obsidian_rules.problems(vault.root)} <= {"memories/old-deploy.md"}


@pytest.mark.parametrize("new_side", ["ours", "theirs"])
def test_sync_merges_a_side_written_before_with_a_side_written_now(tmp_path, new_side):
    """One machine still has the old form (and changed the tags and a count), the other rewrote the memory in
    the new form (an alias, a later check): both changes kept, nothing twice, through `merge`, `reconcile` and
    git's merge driver run as git runs it."""
    base = OLD_FORM.format(id="deploy", title="Deploy from main", supersedes="old-deploy", extra="")
    old = base.replace("tags: [deploy, 2026, '#ops']", "tags: [deploy, 2026, '#ops', prod]").replace(
        "status: active\n", "shown: 4\nstatus: active\n").replace("detail: gone}", "detail: gone again}")
    check = {"status": "ok", "at": dt.date(2026, 12, 1), "by": "verify", "detail": "2 ok"}
    new = model.dump(model.parse(base).evolve(aliases=["canlıya çıkmak"], verified=check))
    ours, theirs = (new, old) if new_side == "ours" else (old, new)
    sides = [s.encode() for s in (base, ours, theirs)]
    for name, text in zip(("base", "ours", "theirs"), sides):
        (tmp_path / name).write_bytes(text)
    proc = subprocess.run([sys.executable, "-m", "hafiza.vault.driver", *(str(tmp_path / n) for n in ("base", "ours", "theirs")),
                           "memories/deploy.md"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    for data in (merge("memories/deploy.md", *sides), reconcile("memories/deploy.md", *sides).data,
                 (tmp_path / "ours").read_bytes()):
        memory = model.parse(data.decode())
        assert memory.supersedes == ["old-deploy"] and memory.tags == ["deploy", "_2026", "ops", "prod"]
        assert memory.aliases == ["canlıya çıkmak"] and memory.shown == 4 and memory.verified == check
        assert len(memory.claims) == 2 and all(isinstance(c, dict) for c in memory.claims)
        assert "supersedes: ['[[old-deploy]]']" in data.decode() and "verified: ok\n" in data.decode()


def test_init_in_a_folder_already_open_in_obsidian_commits_none_of_its_device_files(tmp_path):
    root = tmp_path / "notes"
    root.mkdir()
    obsidian_day(root)
    (root / "note.md").write_text("# a note of mine\n")
    run_cli("init", env={"HAFIZA_VAULT": str(root)})
    run_cli("remember", "Deploys only from main.", env={"HAFIZA_VAULT": str(root)})
    history = ever_committed(root)
    assert "workspace" not in history and ".trash" not in history and ".obsidian/cache" not in history
    assert {".obsidian/app.json", "note.md"} <= committed(root)
