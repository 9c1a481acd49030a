"""Faults an attacker or an unlucky user causes (hardening issue): hostile files in the vault, hostile
input, git without a git, writes killed half-way, a full disk. Each test reproduces a defect that the
fault pass found and holds its fix. The long loops (10 random kills, a brimming tmpfs) are in
bench/faults/."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp_types import Implementation

from conftest import git_subjects, run_cli
from hafiza.hooks.mcp import create_server

# Whether a .git/index.lock has a live owner is read from /proc; elsewhere a lock is stale after 10 minutes.
NEEDS_PROC = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc (Linux)")
OUTSIDE = "aws_secret_access_key lives here: production deploy credentials for the billing cluster"
PROMPT = {"session_id": "f-1", "transcript_path": "", "cwd": "/tmp", "hook_event_name": "UserPromptSubmit"}


def token() -> str:
    return "gh" + "p_" + "Zq7Lm2Xc9Vb4Nk1Rt6Yw3Ps8Dh5Gf0Ja2Ue7"  # assembled at run time; not a real token


def hook(prompt: str, event: str = "UserPromptSubmit", env: dict | None = None) -> str:
    proc = subprocess.run([sys.executable, "-m", "hafiza.cli.main", "hook", "claude-code", event],
                          input=json.dumps({**PROMPT, "hook_event_name": event, "prompt": prompt}),
                          capture_output=True, text=True, timeout=30,
                          env={**os.environ, "HAFIZA_DAEMON": "0", **(env or {})})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def history(root: Path) -> str:
    """Every byte ever committed, as `git log -p` shows it."""
    return subprocess.run(["git", "-C", str(root), "log", "-p", "--all", "--format=%B"], capture_output=True,
                          text=True, errors="replace", check=True).stdout


def tracked(root: Path) -> list[str]:
    return subprocess.run(["git", "-C", str(root), "ls-files"], capture_output=True, text=True,
                          check=True).stdout.split()


def status(root: Path) -> str:
    return subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=all"],
                          capture_output=True, text=True, check=True).stdout


@pytest.fixture
def kept(vault):
    vault.remember("Deploy to production only from main, after CI is green.", title="Production deploys from main",
                   type="rule", tags=["deploy"])
    return vault


# ---- 1. nothing outside the vault is ever read

@pytest.mark.parametrize("link, named", [(lambda target, path: path.symlink_to(target), "a symbolic link"),
                                          (lambda target, path: os.link(target, path), "a hard link")],
                         ids=["symlink", "hard-link"])
def test_a_link_out_of_the_vault_is_never_listed_shown_searched_injected_or_committed(kept, tmp_path, link, named):
    """A hard link is a regular file to lstat, but its text is another file's (issue 29, item 2)."""
    secret = tmp_path / "credentials"
    secret.write_text(f"---\nid: creds\ntitle: Production deploy credentials\n---\n{OUTSIDE}\n")
    link(secret, kept.memories_dir / "creds.md")
    link(secret, kept.root / "profile.md")

    listed = run_cli("list").stdout
    assert "creds" not in listed and "Production deploys from main" in listed
    shown = run_cli("show", "creds", check=False)
    assert shown.returncode != 0 and named in shown.stderr and OUTSIDE not in shown.stdout
    assert "creds" not in run_cli("search", "production deploy credentials billing").stdout
    assert OUTSIDE not in hook("production deploy credentials for billing?")
    assert OUTSIDE not in hook("", event="SessionStart")

    done = run_cli("remember", "Staging deploys go through Argo.", "--tag", "deploy")
    assert f"creds.md is {named}" in done.stderr
    assert "memories/creds.md" not in tracked(kept.root) and "profile.md" not in tracked(kept.root)
    assert OUTSIDE not in history(kept.root)
    doctor = run_cli("doctor", check=False).stdout
    assert f"memories/creds.md: {named}" in doctor and f"profile.md: {named}" in doctor


def fifo(path: Path) -> None:
    os.mkfifo(path)


def dangling(path: Path) -> None:
    path.symlink_to(path.parent / "gone-for-good.md")


def folder(path: Path) -> None:
    path.mkdir()


def laughs(path: Path) -> None:
    """A "billion laughs" header: a few hundred bytes that expand to 10^9 strings."""
    levels = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for n in range(1, 9):
        levels.append(f"{'abcdefghij'[n]}: &{'abcdefghij'[n]} [" + ", ".join(["*" + "abcdefghij"[n - 1]] * 10) + "]")
    path.write_text("---\nid: laughs\n" + "\n".join(levels) + "\n---\nBody.\n")


def huge(path: Path) -> None:
    path.write_text("---\nid: huge\n---\n" + "production deploy " * 200_000)


def deep(path: Path) -> None:
    path.write_text("---\nid: deep\nx: " + "[" * 50_000 + "]" * 50_000 + "\n---\nBody.\n")


@pytest.mark.parametrize("make", [fifo, dangling, folder, laughs, huge, deep])
def test_one_bad_entry_is_named_once_and_everything_else_keeps_working(kept, make):
    bad = kept.memories_dir / f"bad-{make.__name__}.md"
    make(bad)
    for args in (["search", "production deploy"], ["list"], ["remember", "Hotfixes go to main too.", "--tag", "deploy"],
                 ["reindex"], ["search", "hotfixes"]):
        proc = run_cli(*args, check=False)  # run_cli's own timeout catches a hang
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (args, proc.stderr)
    assert "production-deploys-from-main" in run_cli("search", "production deploy").stdout
    doctor = run_cli("doctor", check=False)
    assert "Traceback" not in doctor.stderr and bad.name in doctor.stdout
    assert "Production deploys" in hook("is a production deploy allowed before CI is green?")
    assert bad.name not in tracked(kept.root)


def test_a_file_where_the_sidecar_goes_is_one_clear_error(kept):
    import shutil

    shutil.rmtree(kept.sidecar)
    kept.sidecar.write_text("not a folder")
    for args in (["search", "deploy"], ["remember", "x y z"], ["list"], ["doctor"]):
        proc = run_cli(*args, check=False)
        assert proc.returncode != 0 and proc.stderr.startswith("Error: ") and "Traceback" not in proc.stderr
        assert ".hafiza is not a folder" in proc.stderr
    assert hook("is a production deploy allowed before CI is green?") == ""  # fails open


def test_git_missing_from_path_is_one_clear_error(kept, tmp_path):
    env = {"PATH": str(tmp_path / "no-bin")}
    proc = run_cli("remember", "Something worth keeping.", check=False, env=env)
    assert proc.returncode != 0 and proc.stderr == (
        "Error: git is not installed or not on PATH; hafiza keeps the vault in git: install git and try again\n")
    assert "production-deploys-from-main" in run_cli("search", "production deploy", env=env).stdout


# ---- 2. no secret reaches git by any path

@pytest.mark.parametrize("encoding", ["latin-1", "utf-16", "utf-16-le", "cp1254"])
def test_a_hand_edit_in_any_encoding_is_scanned_before_it_is_committed(kept, encoding):
    note = "Sifre notu (café): token" if encoding == "latin-1" else "Şifre notu: token"
    (kept.memories_dir / "notes.md").write_bytes(f"{note} {token()}\n".encode(encoding))
    head = git_subjects(kept.root)
    proc = run_cli("remember", "Something else.", check=False)
    assert proc.returncode == 4 and "memories/notes.md" in proc.stderr and "secret" in proc.stderr
    assert git_subjects(kept.root) == head and token() not in history(kept.root)


def test_any_file_record_manual_edits_would_commit_is_scanned(kept):
    (kept.root / "notes").mkdir()
    (kept.root / "notes" / "todo.txt").write_text(f"GITHUB_TOKEN={token()}\n")
    proc = run_cli("remember", "Something else.", check=False)
    assert proc.returncode == 4 and "notes/todo.txt" in proc.stderr
    assert token() not in history(kept.root)


@pytest.mark.parametrize("args", [
    ["remember", "A fine memory.", "--reason", "from TOKEN"],
    ["remember", "A fine memory.", "--scope", "project:TOKEN"],
    ["forget", "production-deploys-from-main", "--reason", "rotated TOKEN"],
    ["alias", "production-deploys-from-main", "canliya cikmak", "--reason", "TOKEN"],
])
def test_every_cli_input_that_reaches_a_commit_is_scanned(kept, args):
    head = git_subjects(kept.root)
    proc = run_cli(*[a.replace("TOKEN", token()) for a in args], check=False)
    assert proc.returncode == 4 and "secret" in proc.stderr
    assert git_subjects(kept.root) == head and token() not in history(kept.root)


def test_import_fields_are_scanned(kept, tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"text": "A fine memory.", "source": f"import:{token()}"}) + "\n")
    proc = run_cli("import", str(source), check=False)
    assert proc.returncode == 4 and token() not in history(kept.root)


def test_an_mcp_client_that_names_itself_with_a_token_commits_nothing(kept):
    async def main():
        async with Client(create_server(kept.root), client_info=Implementation(name=token(), version="1")) as client:
            result = await client.call_tool("remember", {"text": "A fine memory from an agent."})
            assert result.is_error and "secret" in result.content[0].text

    anyio.run(main)
    assert token() not in history(kept.root)


def test_a_refused_edit_is_kept_private_with_the_secret_masked(kept, tmp_path):
    editor = tmp_path / "editor.sh"
    editor.write_text(f"#!/bin/sh\nprintf '\\nDB token {token()}\\n' >> \"$1\"\n")
    editor.chmod(0o755)
    proc = run_cli("edit", "production-deploys-from-main", check=False, env={"EDITOR": str(editor)})
    assert proc.returncode == 4 and "saved with the secret masked" in proc.stderr
    drafts = list((kept.sidecar / "drafts").iterdir())
    assert len(drafts) == 1 and stat.S_IMODE(drafts[0].stat().st_mode) == 0o600
    assert token() not in drafts[0].read_text() and "Deploy to production" in drafts[0].read_text()


# ---- 5. an interrupted write is whole or absent

KILL_AT = """
import os, signal, sys
from hafiza.vault.git import index as gitindex, repo as git
from hafiza.vault.store import vault as store

moment, count = sys.argv[1], int(sys.argv[2])
seen = {}

def die_after(name, real):
    # `real`, but the process kills itself before (moment NAME) or after (NAME-after) its COUNT-th call
    def wrapper(*args, **kwargs):
        seen[name] = seen.get(name, 0) + 1
        if moment == name and seen[name] == count:
            os.kill(os.getpid(), signal.SIGKILL)
        try:
            result = real(*args, **kwargs)
        except gitindex.Unsupported:  # left to git's update-index, which is then the staging step
            seen[name] -= 1
            raise
        if moment == name + "-after" and seen[name] == count:
            os.kill(os.getpid(), signal.SIGKILL)
        return result
    return wrapper

store.atomic_write = die_after("write", store.atomic_write)
real_run = git.GitStore._run
def run(self, *args, **kwargs):
    # Staging is `add`, `update-index --stdin`, or hafiza bringing git's index level itself (gitindex.prepare);
    # the commit lands when `update-ref` moves the branch.
    step = {"update-index": "add", "update-ref": "commit"}.get(args[0], args[0])
    if step in ("add", "commit"):
        return wrapped[step](self, *args, **kwargs)
    return real_run(self, *args, **kwargs)
wrapped = {name: die_after(name, real_run) for name in ("add", "commit")}
git.GitStore._run = run
gitindex.prepare = die_after("add", gitindex.prepare)
sys.argv = ["hafiza", *sys.argv[3:]]
from hafiza.cli.main import main
main()
"""


@pytest.mark.parametrize("moment,count", [("write", 1), ("write", 37), ("write", 80), ("add", 1),
                                          ("add-after", 1), ("commit", 1)])
def test_an_import_killed_at_any_moment_leaves_nothing_behind(kept, tmp_path, moment, count):
    source = tmp_path / "many.jsonl"
    source.write_text("".join(json.dumps({"text": f"Imported note number {n} about service {n}."}) + "\n"
                              for n in range(80)))
    before = sorted(p.name for p in kept.memories_dir.iterdir())
    proc = subprocess.run([sys.executable, "-c", KILL_AT, moment, str(count), "import", str(source)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    if moment in ("add", "add-after"):  # git itself dies with its index locked, as kill -9 leaves it
        (kept.root / ".git" / "index.lock").write_text("")
    assert "interrupted" in run_cli("doctor", check=False).stdout

    done = run_cli("remember", "After the crash, this still works.")
    if (moment, count) != ("write", 1):  # killed before its first file: nothing to roll back
        assert "rolled back a write that was interrupted" in done.stderr
    subjects = git_subjects(kept.root)
    assert "hafiza: record manual edits" not in subjects and not any("import" in s for s in subjects)
    after = sorted(p.name for p in kept.memories_dir.iterdir())
    assert after == sorted(before + ["after-the-crash-this-still-works.md"])
    assert status(kept.root) == "" and not (kept.root / ".git" / "index.lock").exists()


@pytest.mark.parametrize("moment", ["add", "add-after", "commit"])
def test_a_remember_killed_around_splicing_git_index_leaves_nothing_behind(kept, moment):
    before = sorted(p.name for p in kept.memories_dir.iterdir())
    proc = subprocess.run([sys.executable, "-c", KILL_AT, moment, "1", "remember", "A note killed half-way."],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    done = run_cli("remember", "After the crash, this still works.")
    assert "rolled back a write that was interrupted" in done.stderr
    after = sorted(p.name for p in kept.memories_dir.iterdir())
    assert after == sorted(before + ["after-the-crash-this-still-works.md"])
    assert status(kept.root) == "" and not (kept.root / ".git" / "index.lock").exists()
    assert "hafiza: record manual edits" not in git_subjects(kept.root)


def test_an_import_whose_commit_landed_before_the_kill_is_kept(kept, tmp_path):
    source = tmp_path / "few.jsonl"
    source.write_text("".join(json.dumps({"text": f"Note {n} on the queue workers."}) + "\n" for n in range(5)))
    proc = subprocess.run([sys.executable, "-c", KILL_AT, "commit-after", "1", "import", str(source)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL
    run_cli("remember", "Another note.")
    assert len(list(kept.memories_dir.glob("note-*.md"))) == 5
    assert git_subjects(kept.root)[1] == "hafiza: import 5 memories"


@NEEDS_PROC
def test_a_stale_git_lock_is_reported_then_cleared(kept):
    (kept.root / ".git" / "index.lock").write_text("")
    assert "left by a git process that died" in run_cli("doctor", check=False).stdout
    done = run_cli("remember", "Lock or no lock.")
    assert "stale .git/index.lock" in done.stderr and not (kept.root / ".git" / "index.lock").exists()


@NEEDS_PROC
def test_a_git_lock_held_by_a_live_git_is_left_alone(kept):
    lock = kept.root / ".git" / "index.lock"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; f = open(sys.argv[1], 'w'); time.sleep(60)",
                               str(lock)])
    try:
        for _ in range(100):
            if lock.exists():
                break
            time.sleep(0.05)
        assert kept.git.stale_lock() is None
    finally:
        holder.kill()
        holder.wait()
    assert kept.git.stale_lock() == lock


# ---- 6. a full disk

def _mount_tmpfs(where: Path, size: str) -> bool:
    where.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True)
    return proc.returncode == 0


@pytest.fixture
def small_disk(tmp_path):
    where = tmp_path / "disk"
    if not _mount_tmpfs(where, "3m"):
        pytest.skip("cannot mount a tmpfs here (not root, or no mount namespace): bench/faults/disk_full.py "
                    "reports the disk-full trials where it can")
    yield where
    subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_full_disk_never_half_writes_and_never_shows_a_traceback(small_disk):
    root = small_disk / "vault"
    env = {"HAFIZA_VAULT": str(root)}
    run_cli("init", env=env)
    run_cli("remember", "The first memory, written while there was room.", env=env)
    filler = small_disk / "filler"
    outcomes = set()
    for free_kb in (0, 2, 8, 24, 40, 64, 128):
        filler.unlink(missing_ok=True)
        free = os.statvfs(small_disk).f_bavail * os.statvfs(small_disk).f_frsize
        with open(filler, "wb") as fh:
            fh.write(b"\0" * max(0, free - free_kb * 1024))
        before = git_subjects(root)
        proc = run_cli("remember", f"A memory written with {free_kb} KB free.", env=env, check=False)
        assert "Traceback" not in proc.stderr, proc.stderr
        committed = git_subjects(root) != before
        if proc.returncode == 0:
            assert committed  # success means it landed, whatever the index did
        else:
            assert not committed and proc.stderr.startswith("Error: ") and proc.stderr.count("\n") == 1
        filler.unlink()
        assert status(root) == "" or run_cli("remember", "Room again.", env=env, check=False).returncode == 0
        outcomes.add(proc.returncode)
    assert 0 in outcomes  # with room, it works; which sizes fail depends on the machine


# ---- 8. size limits where input enters

@pytest.mark.parametrize("args,field", [
    (["remember", "x" * 60_000], "text"),
    (["remember", "short text", "--title", "t" * 1_000], "title"),
    (["remember", "short text", *[a for n in range(100) for a in ("--tag", f"t{n}")]], "tags"),
    (["remember", "short text", "--reason", "r" * 5_000], "reason"),
])
def test_inputs_past_the_limits_are_refused_with_a_clear_error(kept, args, field):
    proc = run_cli(*args, check=False)
    assert proc.returncode == 1 and proc.stderr.startswith("Error: ") and "at most" in proc.stderr


def test_a_ten_megabyte_mcp_text_is_refused_at_once(kept):
    async def main():
        async with Client(create_server(kept.root)) as client:
            result = await client.call_tool("remember", {"text": "x" * 10_000_000})
            assert result.is_error
            result = await client.call_tool("remember", {"text": "fine", "tags": [f"t{n}" for n in range(100_000)]})
            assert result.is_error

    anyio.run(main)
    assert len(git_subjects(kept.root)) == 2


# ---- 10, 11. private files; a word about missing vectors

def test_the_vault_and_everything_in_it_is_private(tmp_path):
    root = tmp_path / "private-vault"
    env = {"HAFIZA_VAULT": str(root)}
    run_cli("init", env=env)
    run_cli("remember", "A private note.", env=env)
    run_cli("search", "private note", env=env)
    run_cli("undo", env=env)
    open_to_others = [str(p) for p in [root, *root.rglob("*")]
                      if not p.is_symlink() and stat.S_IMODE(p.stat().st_mode) & 0o077]
    assert open_to_others == []


def test_meaning_search_says_when_there_are_no_vectors(kept):
    import shutil

    shutil.rmtree(kept.sidecar)
    proc = run_cli("search", "production deploy", "--mode", "meaning")
    assert "no vectors" in proc.stderr and ".hafiza/ was removed" in proc.stderr and "hafiza reindex" in proc.stderr


def test_an_undo_ends_its_write_so_a_later_hand_edit_is_kept(kept):
    """A finished undo left its journal behind, and the next write rolled back a hand edit made since
    (found by bench/faults/disk_full.py)."""
    run_cli("forget", "production-deploys-from-main")
    run_cli("undo")
    assert not (kept.sidecar / "journal").exists()
    path = kept.memories_dir / "production-deploys-from-main.md"
    path.write_text(path.read_text() + "Also: tag the release.\n")
    done = run_cli("remember", "Something else entirely.")
    assert "rolled back" not in done.stderr and "Also: tag the release." in path.read_text()
    assert git_subjects(kept.root)[1] == "hafiza: record manual edits"


def test_a_fold_of_only_vanished_memories_leaves_no_journal(kept):
    """A usage log naming only memories that are gone wrote nothing, yet left the fold's journal behind,
    and doctor reported an interrupted write."""
    from hafiza.vault.store import usage

    usage.append(kept.sidecar, "used", ["no-such-memory"])
    assert run_cli("fold").stdout == "nothing to fold\n"
    assert not (kept.sidecar / "journal").exists()
    assert "interrupted writes: none" in run_cli("doctor", check=False).stdout
