"""`--json` on the commands that change the vault, for a script that drives hafiza: one JSON object on stdout
and nothing else, checked here against the vault itself (the commit is `git rev-parse HEAD`, the file says
archived); a failure is what it is without --json, one `Error: ...` line on stderr, and stdout stays empty."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from conftest import git, git_head, git_subjects, run_cli
from test_cli import editor, error_line  # noqa: F401 - editor is a fixture
from hafiza.vault.store.vault import Vault
from hafiza.vault.sync.machines import set_remote, sync


def as_json(*args, **options) -> dict:
    """`hafiza ARGS --json`, its stdout parsed: anything printed beside the object fails the parse."""
    return json.loads(run_cli(*args, "--json", **options).stdout)


def bare(path: Path) -> Path:
    git(path.parent, "init", "-q", "--bare", "-b", "main", str(path))
    return path


def memory_json(vault: Vault, memory_id: str) -> dict:
    """A memory as the write commands print it, read from its file."""
    memory = vault.get(memory_id)
    return {"id": memory.id, "title": memory.title, "type": memory.type, "scope": memory.scope,
            "status": memory.status, "path": f"memories/{memory.id}.md"}


# ---- memories: edit, forget, restore, supersede, undo

def test_edit_json_is_the_memory_and_its_commit(vault, editor):
    vault.remember("Staging is on port 8080.", id="staging")
    data = as_json("edit", "staging", "--text", "Staging is on port 9090.")
    assert data == {**memory_json(vault, "staging"), "commit": git_head(vault.root), "draft": None}
    assert vault.get("staging").body == "Staging is on port 9090."
    assert git_subjects(vault.root)[0] == "hafiza: update staging"
    data = as_json("edit", "staging", env=editor("port 9090", "port 7070"))
    assert data["commit"] == git_head(vault.root) and git_subjects(vault.root)[0] == "hafiza: edit staging"
    before = git_head(vault.root)
    data = as_json("edit", "staging", env={"EDITOR": "true", "VISUAL": ""})  # saved nothing
    assert data == {**memory_json(vault, "staging"), "commit": None, "draft": None} and git_head(vault.root) == before


def test_a_refused_edit_under_json_is_one_error_line_and_names_the_draft(vault, editor):
    vault.remember("Staging is on port 8080.", id="staging")
    before = git_head(vault.root)
    proc = run_cli("edit", "staging", "--json", env=editor("type: knowledge", "type: memo"), check=False)
    assert proc.stdout == "" and proc.returncode == 1
    draft = next((vault.sidecar / "drafts").glob("staging-*.md"))
    assert str(draft) in error_line(proc) and git_head(vault.root) == before


def test_forget_and_restore_json_say_the_status_the_file_has(vault):
    vault.remember("Staging is on port 8080.", id="staging")
    data = as_json("forget", "staging", "--reason", "server gone")
    assert data == {**memory_json(vault, "staging"), "commit": git_head(vault.root)}
    assert data["status"] == vault.get("staging").status == "archived"
    assert "status: archived" in (vault.root / data["path"]).read_text()
    data = as_json("restore", "staging")
    assert data == {**memory_json(vault, "staging"), "commit": git_head(vault.root)} and data["status"] == "active"
    assert git_subjects(vault.root)[:2] == ["hafiza: restore staging", "hafiza: forget staging"]


def test_supersede_json_is_both_memories_and_the_commit(vault):
    vault.remember("Staging is on port 8080.", id="staging-old")
    vault.remember("Staging is on port 9090.", id="staging-new")
    data = as_json("supersede", "staging-old", "staging-new")
    assert data == {"old": memory_json(vault, "staging-old"), "new": memory_json(vault, "staging-new"),
                    "commit": git_head(vault.root)}
    assert (data["old"]["status"], data["new"]["status"]) == ("superseded", "active")
    assert vault.get("staging-old").superseded_by == "staging-new"


def test_undo_and_redo_json_name_both_commits_and_the_files(vault):
    vault.remember("Staging is on port 8080.", id="staging")
    vault.forget("staging")
    forgotten = git_head(vault.root)
    data = as_json("undo")
    assert data == {"action": "undo", "reverted": forgotten, "commit": git_head(vault.root),
                    "paths": ["memories/staging.md"]}
    assert vault.get("staging").status == "active"
    undone = git_head(vault.root)
    data = as_json("undo", "--redo")
    assert data == {"action": "redo", "reverted": undone, "commit": git_head(vault.root),
                    "paths": ["memories/staging.md"]}
    assert vault.get("staging").status == "archived"


def test_remember_import_and_alias_json_carry_the_commit_or_null(vault, tmp_path):
    data = as_json("remember", "Deploy only from main.")
    assert data["commit"] == git_head(vault.root)
    again = as_json("remember", "deploy  only from MAIN.")  # already remembered: nothing committed
    assert again == {**data, "commit": None, "duplicate": True}
    source = tmp_path / "memories.jsonl"
    source.write_text('{"text": "We use pnpm.", "id": "pnpm"}\n')
    assert as_json("import", str(source)) == {"imported": ["pnpm"], "skipped": [], "commit": git_head(vault.root)}
    assert as_json("import", str(source), "--dry-run")["commit"] is None
    assert as_json("alias", "pnpm", "paket yöneticisi")["commit"] == git_head(vault.root)
    assert as_json("alias", "pnpm", "paket yöneticisi")["commit"] is None


# ---- usage: used, fold

def test_used_then_fold_json(vault):
    vault.remember("We use pnpm.", id="pnpm")
    vault.remember("Deploy only from main.", id="deploy")
    before = git_head(vault.root)
    data = as_json("used", "pnpm", "deploy", "pnpm")  # each id once
    assert data == {"recorded": ["pnpm", "deploy"], "vaults": {"personal": ["pnpm", "deploy"]}, "unknown": []}
    assert git_head(vault.root) == before  # logged, not committed
    data = as_json("fold")
    assert data == {"folded": 2, "commit": git_head(vault.root)} and git_head(vault.root) != before
    assert (vault.get("pnpm").used, vault.get("deploy").used) == (1, 1)
    assert as_json("fold") == {"folded": 0, "commit": None}


# ---- the vault: init, reindex, remote, fact

def test_init_json_is_the_folder_and_the_commit_that_made_it(tmp_path):
    root = tmp_path / "vault"
    data = as_json("init")
    assert data == {"path": str(root), "commit": git_head(root), "from": None, "indexed": None, "skipped": {}}
    assert git_subjects(root) == ["hafiza: init vault"]
    assert as_json("init")["commit"] is None  # there already: nothing committed


def test_init_from_json_says_what_was_indexed(tmp_path):
    first = Vault.init(tmp_path / "a")
    first.remember("Deploy only from main.", id="deploy")
    remote = bare(tmp_path / "remote.git")
    set_remote(first, str(remote))
    sync(first)
    data = as_json("--vault", str(tmp_path / "b"), "init", "--from", str(remote))
    assert data == {"path": str(tmp_path / "b"), "commit": None, "from": str(remote), "indexed": 1, "skipped": {}}
    assert git_head(tmp_path / "b") == git_head(first.root)


def test_reindex_json_counts_and_names_what_it_left_out(vault):
    vault.remember("We use pnpm.", id="pnpm")
    vault.remember("Deploy only from main.", id="deploy")
    (vault.memories_dir / "broken.md").write_text("---\nid: broken\ntags: [a\n---\nbody\n")
    proc = run_cli("reindex", "--json")
    data = json.loads(proc.stdout)
    assert data["indexed"] == 2 and list(data["skipped"]) == ["memories/broken.md"]
    assert "skipped" not in proc.stderr  # said once, in the JSON
    assert [h["id"] for h in as_json("search", "--mode", "keyword", "pnpm")] == ["pnpm"]


def test_remote_set_json_is_what_git_now_has(vault, tmp_path):
    assert as_json("remote") == {"name": "origin", "url": None}
    remote = bare(tmp_path / "remote.git")
    assert as_json("remote", "set", str(remote)) == {"name": "origin", "url": str(remote)}
    assert git(vault.root, "config", "remote.origin.url").strip() == str(remote)
    assert as_json("remote") == {"name": "origin", "url": str(remote)}


def test_fact_set_json_carries_the_commit_or_null(vault):
    data = as_json("fact", "set", "ACME", "based in", "Izmir")
    assert data["changed"] and data["commit"] == git_head(vault.root)
    assert git_subjects(vault.root)[0] == f"hafiza: fact {Path(data['path']).stem}: based in = Izmir"
    assert (vault.root / data["path"]).is_file()
    again = as_json("fact", "set", "acme", "based in", "Izmir")
    assert (again["changed"], again["commit"]) == (False, None)


# ---- what lives beside the vault: team vaults, users

def team_folder() -> Path:
    return Path(os.environ["XDG_DATA_HOME"]) / "hafiza" / "teams" / "team"


def test_vault_add_and_remove_json(vault, tmp_path):
    remote = bare(tmp_path / "team.git")
    data = as_json("vault", "add", "team", str(remote))
    assert data == {"name": "team", "path": str(team_folder()), "url": str(remote), "indexed": 0, "skipped": {}}
    assert [t["name"] for t in as_json("vault", "list")] == ["team"]
    assert as_json("vault", "remove", "team") == {"name": "team", "path": str(team_folder()), "url": str(remote)}
    assert as_json("vault", "list") == [] and team_folder().is_dir()  # its folder stays


def test_token_add_and_revoke_json(vault):
    proc = run_cli("token", "add", "alice", "--json")
    data = json.loads(proc.stdout)
    assert proc.stderr == ""  # the lines that tell a person what to do with the token are not printed
    token = data.pop("token")
    assert data == as_json("token", "list")[0] and data["user"] == "alice"
    users = (Path(os.environ["XDG_CONFIG_HOME"]) / "hafiza" / "users.json").read_text()
    assert hashlib.sha256(token.encode()).hexdigest() in users and token not in users
    proc = run_cli("token", "add", "alice", "--json", check=False)  # one token a user: revoke first
    assert proc.stdout == "" and "Error: the user 'alice' exists" in error_line(proc)
    assert as_json("token", "revoke", "alice") == data
    assert as_json("token", "list") == []


# ---- a failure under --json

@pytest.mark.parametrize("args, code, message", [
    (("edit", "nope", "--text", "x"), 3, "Error: no memory with id 'nope'"),
    (("forget", "staging"), 1, "Error: staging is already archived"),
    (("restore", "deploy"), 1, "Error: deploy is active; only an archived memory is restored"),
    (("supersede", "deploy", "staging"), 1, "Error: staging is archived; only an active memory can supersede"),
    (("undo", "0000000000"), 1, "Error: no commit '0000000000' in the vault's history"),
    (("used", "nope"), 3, "Error: no memory with id 'nope'"),
    (("init", "--from", "missing.git"), 1, "exists and is not empty; `--from` starts a new vault"),
    (("remote", "set", ""), 1, "Error: '' is not a remote URL"),
    (("fact", "set", "acme", "", "x"), 1, "Error: attribute is empty"),
    (("vault", "add", "Bad Name", "x"), 1, "Error: 'Bad Name' is not a vault name"),
    (("vault", "remove", "nope"), 1, "Error: no vault named 'nope'"),
    (("token", "revoke", "nope"), 1, "Error: no user 'nope'"),
])
def test_a_failed_write_under_json_is_one_error_line_and_nothing_on_stdout(vault, args, code, message):
    vault.remember("Deploy only from main.", id="deploy")
    vault.remember("Staging is on port 8080.", id="staging")
    vault.forget("staging")
    before = git_head(vault.root)
    proc = run_cli(*args, "--json", check=False)
    assert (proc.returncode, proc.stdout) == (code, ""), proc.stderr
    assert message in error_line(proc)
    assert git_head(vault.root) == before and not vault.git.dirty()


@pytest.mark.parametrize("command", ["fold", "reindex"])
def test_no_vault_under_json_is_one_error_line(tmp_path, command):
    proc = run_cli("--vault", str(tmp_path / "nowhere"), command, "--json", check=False)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert error_line(proc).startswith(f"Error: no vault at {tmp_path / 'nowhere'}")
