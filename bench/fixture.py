"""Fixture projects as real git repositories with a deterministic history (bench/curate, bench/verify).

Fixed author, committer and dates, and neither the user's nor the system's git config, so every build
of a fixture has the same commits and shas.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def env(date: str, author: tuple[str, str]) -> dict:
    name, email = author
    base = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return {**base, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email, "GIT_COMMITTER_DATE": date,
            "TZ": "UTC", "LC_ALL": "C"}


def git(repo: Path, *args: str, date: str, author: tuple[str, str]) -> str:
    done = subprocess.run(["git", *args], cwd=repo, env=env(date, author), check=True, capture_output=True,
                          text=True)
    return done.stdout


def write(repo: Path, rel: str, text: str) -> None:
    """A file of the project, executable when it starts with a #! line."""
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="\n")
    path.chmod(0o755 if text.startswith("#!") else 0o644)


def start(dest: Path, name: str, files: dict[str, str], subject: str, date: str, author: tuple[str, str]) -> Path:
    """`dest/name` as a new repository whose first commit holds `files` (an existing folder is refused)."""
    repo = Path(dest) / name
    if repo.exists():
        raise FileExistsError(f"{repo} exists; build into an empty place")
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main", date=date, author=author)
    for rel, text in files.items():
        write(repo, rel, text)
    git(repo, "add", "-A", date=date, author=author)
    git(repo, "commit", "-q", "-m", subject, date=date, author=author)
    return repo


def entry_problems(item: dict, keys: set, optional: set, seen: set) -> tuple[bool, list[str]]:
    """(whether its keys are right, what is wrong) for one entry of a labelled set: the keys, then an id
    hafiza would accept and no other entry has. The id is added to `seen`."""
    from hafiza.vault.format.ids import is_valid_id

    missing, extra = keys - item.keys(), item.keys() - keys - optional
    if missing or extra:
        return False, [f"missing {sorted(missing)} extra {sorted(extra)}"]
    problems = [] if is_valid_id(item["id"]) else ["bad id"]
    if item["id"] in seen:
        problems.append("duplicate id")
    seen.add(item["id"])
    return True, problems
