"""What every end-to-end test sets up around its client: a temporary HOME, a vault and a project folder.

A test's own world extends `Rig` with its client (the binary, its config files, how one run goes):

    class World(Rig):
        client = "claude-code"                            # clients.PINNED's name, and `hafiza install`'s
        drop = ("ANTHROPIC_", "HAFIZA_", "XDG_", "GIT_")  # the caller's environment, less these

        def client_env(self):
            return {"DISABLE_AUTOUPDATER": "1"}

    world = World(tmp_path)  # world.exe: the client's binary (skips the test without it)
    world.hafiza("init")
    world.install()
    spooled = len(world.spool())
    ...run world.exe with env=world.env(...)...
    assert world.spool()[spooled:]

Every process gets the same isolation: HOME and the XDG folders inside the temporary HOME, HAFIZA_VAULT,
the deterministic embedder, no daemon, and a git identity and config of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from clients import binary

HAFIZA_SECONDS = 180
# What only hafiza puts into a client's request or config: its fences, its tools' names, its MCP table. Tests look
# for these (and a memory's own words), never for the word "hafiza" alone: a path holds it whenever the clone's
# folder is named hafiza, the default (`make e2e` failed so on a fresh clone: issue 30, item 9).
TRACES = ("<hafiza-", "</hafiza-", "hafiza-recall", "hafiza-profile", "mcp__hafiza", "mcp_hafiza_",
          "mcp_servers.hafiza", "hafiza.cli.main", "hafiza hook", "hafiza mcp")


class Rig:
    """`home`, `vault` and `project` under `root` (home and project made; `hafiza init` makes the vault)."""

    client: str
    # The caller's environment, but for variables starting with these; None: only PATH and LANG.
    drop: tuple[str, ...] | None = None
    hook_log = False  # HAFIZA_HOOK_LOG_ALL=1: every hook's decision goes to the vault's .hafiza/hooks.log

    def __init__(self, root: Path):
        self.exe = binary(self.client)
        self.home, self.vault, self.project = root / "home", root / "vault", root / "project"
        self.home.mkdir(parents=True, exist_ok=True)
        self.project.mkdir(parents=True, exist_ok=True)

    def client_env(self) -> dict[str, str]:
        """The client's own variables, for every process the rig runs."""
        return {}

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of every process the rig runs, with `extra` on top: nothing of the developer's
        HAFIZA_*, git identity or client settings leaks in."""
        if self.drop is None:
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
        else:
            env = {k: v for k, v in os.environ.items() if not k.startswith(self.drop)}
        home = self.home
        env.update({
            "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"), "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "HAFIZA_VAULT": str(self.vault), "HAFIZA_EMBEDDER": "hash", "HAFIZA_DAEMON": "0",
            "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com", "GIT_COMMITTER_NAME": "Test",
            "GIT_COMMITTER_EMAIL": "test@example.com", "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        })
        if self.hook_log:
            env["HAFIZA_HOOK_LOG_ALL"] = "1"
        env.update(self.client_env())
        env.update(extra)
        return env

    def hafiza(self, *args: str) -> subprocess.CompletedProcess:
        """`hafiza ARGS` in the project folder (e.g. install CLIENT, uninstall CLIENT); it must succeed."""
        proc = subprocess.run([sys.executable, "-m", "hafiza.cli.main", *args], capture_output=True, text=True,
                              env=self.env(), cwd=self.project, timeout=HAFIZA_SECONDS, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, f"hafiza {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
        return proc

    def install(self) -> Self:
        self.hafiza("install", self.client)
        return self

    def uninstall(self) -> Self:
        self.hafiza("uninstall", self.client)
        return self

    def spool(self) -> list[dict]:
        """The vault's spool (.hafiza/spool.jsonl), one event a line."""
        return [json.loads(line) for line in lines(self.vault / ".hafiza" / "spool.jsonl")]

    def hook_lines(self) -> list[str]:
        """The vault's hook log (.hafiza/hooks.log; every hook's decision when `hook_log`)."""
        return lines(self.vault / ".hafiza" / "hooks.log")

    def git_log(self, *args: str) -> str:
        """`git log ARGS` in the vault."""
        return subprocess.run(["git", "-C", str(self.vault), "log", *args], capture_output=True, text=True,
                              check=True, env=self.env()).stdout

    def git_subjects(self) -> list[str]:
        """The vault's commit subjects, newest first."""
        return self.git_log("--format=%s").splitlines()


@dataclass
class Run:
    """One run of the client: what the model server received and what hafiza wrote meanwhile."""

    proc: subprocess.CompletedProcess
    bodies: list[dict]          # the model requests' bodies, in order
    spool: list[dict]           # events the run added to the vault's spool (.hafiza/spool.jsonl)
    hook_log: list[str]         # lines the run added to .hafiza/hooks.log (with `Rig.hook_log`)

    @property
    def first(self) -> dict:
        assert self.bodies, f"no model request arrived:\n{self.proc.stdout}\n{self.proc.stderr[-3000:]}"
        return self.bodies[0]


def traces(text: str, *memories: str) -> list[str]:
    """The marks of hafiza found in `text` (a request body, a config file): TRACES and the `memories`' texts."""
    lowered = text.lower()
    return [mark for mark in (*TRACES, *memories) if mark.lower() in lowered]


def wait_for(condition, seconds: float = 120, step: float = 0.25):
    """`condition()`'s first true value, asked every `step` s for at most `seconds` (then its last value): for
    what a client's process may finish after it exits, on a loaded machine."""
    deadline = time.monotonic() + seconds
    while not (found := condition()) and time.monotonic() < deadline:
        time.sleep(step)
    return found


def lines(path: Path) -> list[str]:
    """The lines of a text file, none when it is not there."""
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
