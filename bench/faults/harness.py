"""What the fault loops share: a private environment per vault, running hafiza as a user does,
and looking at a vault from outside (git, temp files, locks) without touching it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))

from common import machine as described  # noqa: E402

IDENTITY = {"GIT_AUTHOR_NAME": "Fault Suite", "GIT_AUTHOR_EMAIL": "faults@example.com",
            "GIT_COMMITTER_NAME": "Fault Suite", "GIT_COMMITTER_EMAIL": "faults@example.com",
            "GIT_CONFIG_NOSYSTEM": "1"}
TRACEBACK = "Traceback (most recent call last)"


def log(line: str) -> None:
    print(line, flush=True)


def hafiza_env(vault: Path, home: Path, embedder: str = "hash") -> dict:
    """The environment of a user whose vault is `vault`: fixed git identity, no system or user git
    config, no warm process (one left running would outlive the trial)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / ".gitconfig").touch()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HAFIZA_", "GIT_"))}
    return {**env, **IDENTITY, "HOME": str(home), "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
            "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local" / "share"),
            "HAFIZA_VAULT": str(vault), "HAFIZA_EMBEDDER": embedder, "HAFIZA_DAEMON": "0"}


def hafiza_argv(*args: str) -> list[str]:
    """`hafiza ARGS` through this interpreter, so a frozen copy on PYTHONPATH is what runs."""
    return [sys.executable, "-m", "hafiza.cli.main", *args]


def hz(env: dict, *args: str, cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(hafiza_argv(*args), env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def hz_ok(env: dict, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`hafiza ARGS` while setting a vault up: a failure here is the harness's, not a finding."""
    proc = hz(env, *args, cwd=cwd)
    if proc.returncode != 0:
        raise RuntimeError(f"hafiza {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc


# ---- looking from outside: GIT_OPTIONAL_LOCKS=0 so a look never takes .git/index.lock itself

def git(root: Path, *args: str) -> str:
    env = {**os.environ, **IDENTITY, "GIT_OPTIONAL_LOCKS": "0"}
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, env=env,
                          errors="replace", check=True).stdout


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def subjects_since(root: Path, base: str) -> list[str]:
    """Subjects of the commits after `base`, oldest first."""
    return git(root, "log", "--reverse", "--format=%s", f"{base}..HEAD").splitlines()


def porcelain(root: Path) -> list[str]:
    return git(root, "status", "--porcelain", "--untracked-files=all").splitlines()


def tracked(root: Path) -> set[str]:
    return set(git(root, "ls-files").splitlines())


def temp_files(root: Path) -> list[str]:
    """Every `*.tmp` in the vault, .git included."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.tmp"))


WRITER_TEMP = re.compile(r"^\..+\.\d+\.\d+\.\d+\.tmp$")  # atomic_write's .<name>.<pid>.<ns>.<seq>.tmp


def writer_temp_files(paths: list[str]) -> list[str]:
    """Of `paths`, hafiza's own temp files in the folders it commits from (doctor looks there;
    the index's temp files under .hafiza/ never reach a commit)."""
    return [p for p in paths if WRITER_TEMP.match(Path(p).name) and not p.startswith((".git/", ".hafiza/"))]


def pathspec_files(root: Path) -> list[str]:
    """hafiza's `.git/hafiza-pathspec-<pid>` files (a killed writer leaves one, and so does a full disk)."""
    return sorted(p.name for p in (root / ".git").glob("hafiza-pathspec-*"))


def leftovers(root: Path) -> dict:
    """What an interrupted write can leave: the journal, temp files, git's lock."""
    return {"journal": (root / ".hafiza" / "journal").exists(), "temp_files": temp_files(root),
            "index_lock": (root / ".git" / "index.lock").exists(), "pathspec_files": pathspec_files(root)}


def doctor(env: dict, names=("git", "interrupted writes", "lock")) -> dict:
    """`hafiza doctor --json`: its exit code, and the checks named `names` as `level  name: summary` lines."""
    proc = hz(env, "doctor", "--json")
    try:
        checks = json.loads(proc.stdout)
    except ValueError:
        failed = f"fail  doctor --json printed no JSON: {proc.stderr.strip()[-500:]}"
        return {"rc": proc.returncode, "lines": [failed], "not_ok": [failed], "checks": {}}
    lines = [f"{c['level']}  {c['name']}: {c['summary']}" + "".join(f" | {d}" for d in c["details"][:3])
             for c in checks if c["name"] in names]
    not_ok = [f"{c['level']}  {c['name']}: {c['summary']}" for c in checks if c["level"] != "ok"]
    return {"rc": proc.returncode, "lines": lines, "not_ok": not_ok, "checks": {c["name"]: c["level"] for c in checks}}


def search_ids(env: dict, query: str) -> tuple[int, list[str], str]:
    """(exit code, ids found, stderr) of `hafiza search --json QUERY` over every scope."""
    proc = hz(env, "search", "--json", "--all-scopes", "-n", "10", query)
    try:
        ids = [hit["id"] for hit in json.loads(proc.stdout)]
    except (ValueError, TypeError, KeyError):
        ids = []
    return proc.returncode, ids, proc.stderr.strip()


def stderr_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of group `pgid`, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state, ppid, pgrp, ...
        if fields[0] != "Z" and int(fields[2]) == pgid:
            found.append(int(entry.name))
    return found


def wait_group_gone(pgid: int, timeout: float = 5.0) -> bool:
    """True once no process of group `pgid` is left (git children die a moment after the kill;
    a killed child nobody reaps stays a zombie, which holds no file)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not group_members(pgid):
            return True
        time.sleep(0.01)
    return False


def machine() -> dict:
    """Facts that bear on the figures: cores, Python, git, and which hafiza ran."""
    git_version = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    return described(git=re.sub(r"^git version ", "", git_version))
