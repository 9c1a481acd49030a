"""Shared fixtures: every test gets its own vault, home and cache under tmp_path."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hafiza.vault.store.vault import Vault

ROOT = Path(__file__).resolve().parents[1]

# The hafiza processes tests start (thousands) keep their compiled modules, as an installed hafiza's are
# kept, rather than compiling every module again in each (~80 ms of a `remember`) where the machine sets
# PYTHONDONTWRITEBYTECODE; under .pytest_cache, not beside the sources.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
os.environ.setdefault("PYTHONPYCACHEPREFIX", str(ROOT / ".pytest_cache" / "pycache"))


@pytest.fixture(autouse=True)
def isolated_env(tmp_path, monkeypatch):
    """Point HAFIZA_VAULT, HOME and XDG dirs at tmp_path; fix git's identity and dates."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HAFIZA_VAULT", str(tmp_path / "vault"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    # The real model's cache is kept across tests (it is keyed by package version).
    monkeypatch.setenv("XDG_CACHE_HOME", os.environ.get("HAFIZA_TEST_CACHE", str(ROOT / ".pytest_cache" / "xdg")))
    monkeypatch.setenv("HAFIZA_EMBEDDER", "hash")  # the deterministic embedder; a few tests opt into the model
    for key, value in git_identity(home).items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)
    yield


def git_identity(home: Path) -> dict[str, str]:
    return {"GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com",
            "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.com",
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": str(home / ".gitconfig")}


@pytest.fixture(scope="session")
def initialized(tmp_path_factory) -> Path:
    """A vault `Vault.init` made once per run, for `vault` to copy: init runs ~8 git processes (~0.2 s), and
    hundreds of tests start from an empty vault. (test_store and test_git test init itself.)"""
    top = tmp_path_factory.mktemp("initialized")
    with pytest.MonkeyPatch.context() as mp:
        for key, value in git_identity(top).items():
            mp.setenv(key, value)
        return Vault.init(top / "vault").root


@pytest.fixture
def vault(tmp_path, initialized) -> Vault:
    """An empty vault at $HAFIZA_VAULT: a copy of `initialized` (git keeps no absolute path of its own)."""
    shutil.copytree(initialized, tmp_path / "vault", symlinks=True)
    return Vault(tmp_path / "vault")


def run_cli(*args, input: str | None = None, env: dict | None = None, check: bool = True,
            cwd: str | None = None) -> subprocess.CompletedProcess:
    """Run `hafiza ARGS` as a real process, as a user would."""
    proc = subprocess.run([sys.executable, "-m", "hafiza.cli.main", *args], input=input, capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, cwd=cwd, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"hafiza {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def edit_in_place(path: Path, old: str, new: str) -> None:
    """Replace `old` with `new` in `path` as an editor saving in place does: same file, no rename, so the
    folder's mtime stays and only a kernel watch (or a full comparison) sees the edit."""
    with open(path, "r+", encoding="utf-8") as fh:
        text = fh.read().replace(old, new)
        fh.seek(0)
        fh.write(text)
        fh.truncate()


def git_subjects(root: Path) -> list[str]:
    out = subprocess.run(["git", "-C", str(root), "log", "--format=%s"], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def git_head(root: Path) -> str:
    """`git rev-parse HEAD` in `root`: the commit a write says it made, asked of git itself."""
    return git(root, "rev-parse", "HEAD").strip()


def git(root: Path, *args: str, input: str | None = None) -> str:
    """Run git in `root` (a project or a vault in tmp_path) as a person would; its output."""
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True,
                          input=input).stdout


def project_repo(root: Path, files: dict[str, str]) -> Path:
    """A git repository at `root` whose first commit, "start", holds `files` (path -> text)."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    return root


def recall_among_fillers(vault: Vault, memories: list[dict], fillers: int = 30):
    """A Recall (test embedder, both channels built) over `memories` and `fillers` notes of noise around them,
    so that word statistics are not those of a three-memory vault."""
    from hafiza.indexer.embed import HashEmbedder
    from hafiza.indexer.recall import Recall
    from hafiza.indexer.refresh import refresh_all

    vault.import_many(memories + [{"text": f"Filler note {n} about topic number {n}.", "title": f"Filler {n}"}
                                  for n in range(fillers)], source="test")
    refresh_all(vault.root, embedder=HashEmbedder())
    return Recall(vault.root, HashEmbedder())

