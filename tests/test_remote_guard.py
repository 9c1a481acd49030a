"""What a remote sends is checked before it lands (issue 29, items 3 and 4): a hostile remote's symlinks,
gitlinks and `.hafiza` are refused before the merge with the vault still working, and a memory holding a
secret that comes in is quarantined: kept, never indexed, recalled, shown or put in the profile."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import git, run_cli
from hafiza.vault.errors import HafizaError
from hafiza.vault.store.vault import Vault
from hafiza.vault.sync.machines import set_remote, sync


@pytest.fixture
def remote(tmp_path):
    path = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(path))
    return path


@pytest.fixture
def mine(tmp_path, remote) -> Vault:
    """This machine's vault, one memory, synced with `remote`."""
    vault = Vault.init(tmp_path / "mine")
    vault.remember("Deploy to production only from main, after CI is green.", title="Production deploys from main")
    set_remote(vault, str(remote))
    sync(vault)
    return vault


def attack(tmp_path: Path, remote: Path, change) -> str:
    """Push a commit made with plain git on another clone of `remote`: `change(work)` edits its work tree
    and index; the commit's id."""
    work = tmp_path / f"attacker-{len(list(tmp_path.glob('attacker-*')))}"
    git(tmp_path, "clone", "-q", str(remote), str(work))
    change(work)
    git(work, "add", "-A", "--force")  # past the .gitignore hafiza wrote, as an attacker would
    git(work, "commit", "-q", "-m", "a change from elsewhere")
    git(work, "push", "-q", "origin", "HEAD:main")
    return git(work, "rev-parse", "HEAD").strip()


def symlink(rel: str, target: str = "/tmp"):
    def change(work: Path):
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).symlink_to(target)
    return change


def regular(rel: str, text: str = "x\n"):
    def change(work: Path):
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(text)
    return change


def gitlink(rel: str):
    def change(work: Path):  # a repository inside the work tree: `git add` records it as a gitlink
        (work / rel).mkdir(parents=True)
        git(work / rel, "init", "-q")
        git(work / rel, "commit", "-q", "--allow-empty", "-m", "inner")
    return change


# ---- item 3: nothing but regular files, nothing of hafiza's or git's own

REFUSED = {
    "sidecar-symlink": (symlink(".hafiza"), ".hafiza"),
    "memory-symlink": (symlink("memories/creds.md", "/etc/passwd"), "memories/creds.md"),
    "sidecar-files": (regular(".hafiza/index/MAIN_1.toc"), ".hafiza/index/MAIN_1.toc"),
    "sidecar-by-case": (regular(".Hafiza./x"), ".Hafiza./x"),
    "gitlink": (gitlink("memories/sub"), "memories/sub"),
    "gitmodules": (regular(".gitmodules", '[submodule "s"]\n\tpath = s\n\turl = ../s\n'), ".gitmodules"),
    "nested-attributes": (regular("memories/.gitattributes", "*.md -text\n"), "memories/.gitattributes"),
    "lfs-filter": (regular(".gitattributes", "memories/*.md merge=hafiza\n*.md filter=lfs diff=lfs\n"),
                   ".gitattributes"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_remote_commit_a_vault_must_not_hold_is_refused_before_the_merge(mine, tmp_path, remote, name):
    change, path = REFUSED[name]
    head, sidecar = git(mine.root, "rev-parse", "HEAD"), sorted(os.listdir(mine.sidecar))
    bad = attack(tmp_path, remote, change)

    with pytest.raises(HafizaError) as refused:
        sync(mine)
    assert bad[:12] in refused.value.message and repr(path) in refused.value.message
    assert "\n" not in refused.value.message and "Nothing was merged" in refused.value.message
    assert git(mine.root, "rev-parse", "HEAD") == head and git(mine.root, "status", "--porcelain") == ""
    assert mine.sidecar.is_dir() and not mine.sidecar.is_symlink() and sorted(os.listdir(mine.sidecar)) == sidecar
    mine.remember("Staging deploys go through Argo.")  # the vault still works
    with pytest.raises(HafizaError):
        sync(mine)  # and the next sync refuses the same commit again


def test_what_a_vault_may_hold_comes_in(mine, tmp_path, remote):
    """Obsidian's shared settings, a picture, a .gitignore, hafiza's own .gitattributes lines."""
    def change(work: Path):
        for rel in (".obsidian/app.json", "pictures/board.png", "notes/.gitignore"):
            regular(rel)(work)
        with open(work / ".gitattributes", "a") as fh:
            fh.write("*.png binary\n")

    attack(tmp_path, remote, change)
    sync(mine)
    assert (mine.root / ".obsidian/app.json").is_file() and (mine.root / "pictures/board.png").is_file()


def test_a_hostile_remote_s_sidecar_symlink_is_refused_on_the_command_line(tmp_path, remote):
    """As a user meets it: `hafiza sync` says one line and the vault keeps working."""
    run_cli("init")
    run_cli("remember", "Deploy to production only from main.", "--title", "Production deploys from main")
    run_cli("remote", "set", str(remote))
    run_cli("sync")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    bad = attack(tmp_path, remote, symlink(".hafiza", str(elsewhere)))

    done = run_cli("sync", check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and bad[:12] in done.stderr and "'.hafiza'" in done.stderr
    vault = tmp_path / "vault"
    assert (vault / ".hafiza").is_dir() and not (vault / ".hafiza").is_symlink()
    run_cli("remember", "Staging deploys go through Argo.", "--title", "Staging deploys")
    assert "production-deploys-from-main" in run_cli("search", "production deploys").stdout
    assert "no problems" in run_cli("doctor", check=False).stdout or "FAIL" not in run_cli("doctor", check=False).stdout
    assert os.listdir(elsewhere) == []


def test_init_from_and_vault_add_refuse_a_hostile_remote_and_leave_nothing(tmp_path, remote, mine):
    attack(tmp_path, remote, symlink(".hafiza"))
    fresh = tmp_path / "fresh"
    done = run_cli("init", "--from", str(remote), env={"HAFIZA_VAULT": str(fresh)}, check=False)
    assert done.returncode == 1 and "'.hafiza'" in done.stderr and "Traceback" not in done.stderr
    assert not fresh.exists()

    run_cli("init")
    added = run_cli("vault", "add", "team", str(remote), check=False)
    assert added.returncode == 1 and "'.hafiza'" in added.stderr
    assert "no team vaults" in run_cli("vault", "list").stdout
    assert not list((tmp_path / "home").rglob("teams/team/.git"))


# ---- item 4: a secret that comes in is quarantined, not recalled, shown or deleted

def token() -> str:
    return "gh" + "p_" + "Zq7Lm2Xc9Vb4Nk1Rt6Yw3Ps8Dh5Gf0Ja2Ue7"  # assembled at run time; not a real token


def hook(prompt: str, event: str = "UserPromptSubmit") -> str:
    """The prompt hook's entry point, as an agent runs it."""
    payload = {"session_id": "q-1", "transcript_path": "", "cwd": "/tmp", "hook_event_name": event, "prompt": prompt}
    proc = subprocess.run([sys.executable, "-m", "hafiza.cli.main", "hook", "claude-code", event],
                          input=json.dumps(payload), capture_output=True, text=True, timeout=60,
                          env={**os.environ, "HAFIZA_DAEMON": "0"})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def leak(work: Path):
    """A teammate commits a memory and a profile line holding a live token, with plain git."""
    (work / "memories" / "deploy-creds.md").write_text(
        "---\nid: deploy-creds\ntype: knowledge\ntitle: Production deploy credentials\nscope: global\n"
        f"created: 2026-12-01\n---\nThe billing deploy bot pushes with {token()} from the CI runner.\n")
    (work / "profile.md").write_text(f"- Always deploy billing with {token()}\n")
    (work / "facts").mkdir(exist_ok=True)
    (work / "facts" / "billing-bot.md").write_text("---\nentity: billing bot\ncreated: 2026-12-01\n"
                                                   f"updated: 2026-12-01\n---\n## token\n- {token()} (since 2026-12-01)\n")


@pytest.fixture
def synced(tmp_path, remote):
    """This machine's vault on the command line, synced with `remote`, recalled and indexed once."""
    run_cli("init")
    run_cli("remember", "Deploy to production only from main, after CI is green.", "--title",
            "Production deploys from main", "--type", "rule")
    run_cli("remote", "set", str(remote))
    run_cli("sync")
    return tmp_path / "vault"


def test_a_secret_from_a_remote_is_quarantined_neither_injected_nor_shown_and_named(synced, tmp_path, remote):
    attack(tmp_path, remote, leak)
    done = run_cli("sync")
    assert "quarantined: memories/deploy-creds.md" in done.stdout and "quarantined: profile.md" in done.stdout
    assert token() not in done.stdout + done.stderr
    kept = (synced / "memories" / "deploy-creds.md").read_text()
    assert token() in kept  # not deleted: the file stays as the remote has it

    recalled = hook("how do we push the production billing deploy credentials from CI?")
    started = hook("", event="SessionStart")
    assert token() not in recalled and "deploy-creds" not in recalled
    assert token() not in started and "Production deploys from main" in started
    shown = run_cli("show", "deploy-creds", check=False)
    assert shown.returncode != 0 and "quarantined" in shown.stderr and token() not in shown.stdout + shown.stderr
    assert "deploy-creds" not in run_cli("search", "billing deploy credentials CI runner").stdout
    assert "deploy-creds" not in run_cli("list").stdout
    fact = run_cli("show", "fact:billing-bot/token", check=False)
    assert fact.returncode != 0 and "quarantined" in fact.stderr and token() not in fact.stdout + fact.stderr
    assert token() not in run_cli("fact", "show", "billing bot", check=False).stdout

    doctor = run_cli("doctor", check=False)
    assert doctor.returncode != 0 and token() not in doctor.stdout
    named = [line for line in doctor.stdout.splitlines() if "memories/deploy-creds.md:" in line]
    assert named and "GitHub" in named[0] and "git filter-repo" in named[0] and "push --force" in named[0]
    assert any(line.strip().startswith("profile.md:") for line in doctor.stdout.splitlines())
    assert any(line.strip().startswith("facts/billing-bot.md:") for line in doctor.stdout.splitlines())
    run_cli("remember", "Staging deploys go through Argo.")  # the vault still takes writes
    assert token() in (synced / "memories" / "deploy-creds.md").read_text()


def test_an_agent_over_mcp_is_given_a_notice_not_a_quarantined_memory(synced, tmp_path, remote):
    import anyio
    from mcp import Client

    from hafiza.hooks.mcp import create_server

    attack(tmp_path, remote, leak)
    run_cli("sync")

    async def main():
        async with Client(create_server(synced)) as client:
            got = await client.call_tool("get", {"id": "deploy-creds"})
            recalled = await client.call_tool("recall", {"query": "billing deploy credentials CI runner"})
            profile = await client.call_tool("profile", {})
        return got, recalled, profile

    got, recalled, profile = anyio.run(main)
    said = [json.dumps(r.structured_content) + " ".join(getattr(c, "text", "") for c in r.content)
            for r in (got, recalled, profile)]
    assert got.is_error and "quarantined" in said[0]
    assert all(token() not in text for text in said) and "deploy-creds" not in said[1]


def test_the_ui_shows_a_quarantined_memory_as_a_notice_not_its_text(synced, tmp_path, remote):
    from ui_server import logged_in

    attack(tmp_path, remote, leak)
    run_cli("sync")
    with logged_in() as client:
        response, text = client.get("/memory/deploy-creds")
        assert response.status == 409 and "quarantined" in text and token() not in text
        response, text = client.get("/health")
        assert "memories/deploy-creds.md" in text and token() not in text


def test_init_from_and_vault_add_name_a_quarantined_memory_that_came_with_the_clone(tmp_path, remote, mine):
    attack(tmp_path, remote, leak)
    fresh = run_cli("init", "--from", str(remote), env={"HAFIZA_VAULT": str(tmp_path / "fresh")})
    assert "skipped memories/deploy-creds.md: quarantined" in fresh.stderr and token() not in fresh.stderr
    run_cli("init")
    added = run_cli("vault", "add", "team", str(remote))
    assert "skipped memories/deploy-creds.md: quarantined" in added.stderr
    assert "deploy-creds" not in run_cli("search", "billing deploy credentials CI runner").stdout


def test_a_password_after_a_short_label_from_a_remote_is_quarantined(synced, tmp_path, remote):
    """A teammate's hand-written `wifi pw: …` (a new user's trial: such a memory was kept) comes in by sync: it is
    quarantined like a token, never recalled, and this machine's commits do not repeat it."""
    password = "Kedi" + "2024!xq"

    def labelled(work: Path):
        (work / "memories" / "office-wifi.md").write_text(
            "---\nid: office-wifi\ntype: fact\ntitle: Office wifi\nscope: global\ncreated: 2026-12-01\n---\n"
            f"Guest network in the office; wifi pw: {password}\n")

    attack(tmp_path, remote, labelled)
    done = run_cli("sync")
    assert "quarantined: memories/office-wifi.md" in done.stdout and password not in done.stdout + done.stderr
    recalled = hook("what is the office guest wifi pw?")
    assert password not in recalled and "office-wifi" not in recalled
    ours = git(synced, "log", "--format=%B", "--author=Test")
    assert password not in ours
