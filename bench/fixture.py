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
