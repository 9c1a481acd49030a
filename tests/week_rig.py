"""The rig of tests/test_week.py: a week of hafiza lived on two machines and a team vault, read after every
step through each channel a person or an agent has (the command line, the prompt and session-start hooks,
the MCP server through the SDK's client, the web UI over HTTP).

Days pass by the clock the code already honours, git's: every process the rig starts gets
GIT_AUTHOR_DATE/GIT_COMMITTER_DATE of the simulated day, a minute later each time, so `hafiza log` reads
as the week it was; transcripts carry the day in their own timestamps and facts take `--since`. Nothing
sleeps.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from anyio.from_thread import start_blocking_portal
from mcp import Client, StdioServerParameters
from mcp_types import Implementation

from hafiza.hooks.clients import hook_argv
from ui_server import Client as UiClient, Server as UiServer

HAFIZA = str(Path(sys.executable).parent / "hafiza")  # the installed entry point, as a user runs it
MONDAY = dt.date(2026, 11, 30)
WEEK = [MONDAY + dt.timedelta(days=n) for n in range(7)]
STRIPPED = ("HAFIZA_", "GIT_")  # what the test process's own environment must not lend the week


SPENT: dict[str, list[float]] = {}  # what the week's processes cost, by kind (HAFIZA_WEEK_TIMES=1 prints it)


def _spent(kind: str, since: float) -> None:
    import time

    SPENT.setdefault(kind, []).append(time.monotonic() - since)


def _traceback_free(argv, proc) -> None:
    for stream in (proc.stdout, proc.stderr):
        assert "Traceback (most recent call last)" not in (stream or ""), f"{argv}:\n{stream}"


# ---- known seams: a check that fails on main because of an issue-30 item not fixed yet

@dataclass
class Known:
    """Checks marked `known(item=N)`: each must fail (strict) until item N of issue 30 lands; then the
    marker goes. HAFIZA_WEEK_KNOWN=off runs them as plain checks (to record which steps fail on old code)."""

    failed: list[str] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)

    @contextlib.contextmanager
    def __call__(self, item: int, what: str = ""):
        if os.environ.get("HAFIZA_WEEK_KNOWN") == "off":
            yield
            return
        try:
            yield
        except AssertionError as e:
            self.failed.append(f"item {item}{f' ({what})' if what else ''}: {str(e).splitlines()[0][:200]}")
        else:
            self.fixed.append(f"item {item}{f' ({what})' if what else ''}")

    def settle(self) -> None:
        """End a step: a known check that passed is a fix that landed (fail: remove the marker); one that
        failed as expected makes the step an expected failure."""
        import pytest

        fixed, failed = self.fixed, self.failed
        self.fixed, self.failed = [], []
        assert not fixed, f"fixed now, remove known(...) from: {fixed}"
        if failed:
            pytest.xfail("known seams of issue 30: " + "; ".join(failed))


# ---- the MCP server, one process a day, held open through a blocking portal

class Mcp:
    """`hafiza mcp` over stdio through the MCP SDK's client, as an agent connects."""

    def __init__(self, env: dict, name: str = "week-agent"):
        params = StdioServerParameters(command=HAFIZA, args=["mcp"], env=env)
        self._stack = contextlib.ExitStack()
        self.portal = self._stack.enter_context(start_blocking_portal())
        client = Client(params, client_info=Implementation(name=name, version="1.0"))
        self.client = self._stack.enter_context(self.portal.wrap_async_context_manager(client))

    def call(self, tool: str, **args):
        started = time.monotonic()
        result = self.portal.call(self.client.call_tool, tool, args)
        _spent("mcp", started)
        text = result.content[0].text if result.content else ""
        assert "Traceback" not in text, text
        return result

    def ok(self, tool: str, **args) -> dict:
        result = self.call(tool, **args)
        assert not result.is_error, f"{tool}: {result.content[0].text}"
        return result.structured_content

    def recall(self, query: str, **args) -> list[str]:
        return [h["id"] for h in self.ok("recall", query=query, **args)["hits"]]

    def close(self) -> None:
        self._stack.close()


# ---- a machine: a vault, a HOME, a clock

class Machine:
    """One machine's vault and HOME; every process it runs gets the simulated day's git dates."""

    def __init__(self, name: str, top: Path, *, warm: bool, hour: int):
        self.name, self.top = name, top
        self.root = top / name / "vault"
        self.home = top / name / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.warm, self.hour = warm, hour
        self.day, self.minute = WEEK[0], 0
        self.mcp: Mcp | None = None

    def env(self, tick: bool = True) -> dict:
        if tick:
            self.minute += 1
        stamp = dt.datetime.combine(self.day, dt.time(self.hour), dt.timezone.utc) + dt.timedelta(minutes=self.minute)
        base = {k: v for k, v in os.environ.items() if not k.startswith(STRIPPED)}
        home = self.home
        return {**base, "HOME": str(home), "HAFIZA_VAULT": str(self.root), "HAFIZA_EMBEDDER": "hash",
                "XDG_DATA_HOME": str(home / ".local" / "share"), "XDG_CONFIG_HOME": str(home / ".config"),
                "GIT_AUTHOR_NAME": f"Dev {self.name}", "GIT_AUTHOR_EMAIL": f"{self.name}@example.com",
                "GIT_COMMITTER_NAME": f"Dev {self.name}", "GIT_COMMITTER_EMAIL": f"{self.name}@example.com",
                "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
                "GIT_AUTHOR_DATE": stamp.isoformat(), "GIT_COMMITTER_DATE": stamp.isoformat(),
                **({} if self.warm else {"HAFIZA_DAEMON": "0"})}

    def run(self, *args: str, ok: bool = True, input: str | None = None, cwd: Path | None = None):
        """`hafiza ARGS` as a process; never a traceback, and exit 0 unless `ok` is False."""
        argv = [HAFIZA, *args]
        started = time.monotonic()
        proc = subprocess.run(argv, env=self.env(), input=input, capture_output=True, text=True,
                              cwd=cwd or self.top, timeout=120)
        _spent(args[0], started)
        _traceback_free(argv, proc)
        if ok:
            assert proc.returncode == 0, f"hafiza {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}"
        return proc

    def json(self, *args: str):
        return json.loads(self.run(*args, "--json").stdout)

    def git(self, *args: str, root: Path | None = None) -> str:
        proc = subprocess.run(["git", "-C", str(root or self.root), *args], env=self.env(), capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
        return proc.stdout

    def hook(self, event: str, payload: dict) -> str:
        """The Claude Code hook exactly as `hafiza install claude-code` writes it; what it injects."""
        argv = hook_argv(sys.executable, "claude-code", event)
        started = time.monotonic()
        # A loaded machine (CI, or 8 test runs on 2 cores) must not turn a slow answer into silence: the
        # in-process hook's budget is raised; what it answers is what is checked.
        env = {**self.env(tick=False), "HAFIZA_HOOK_TIMEOUT": "60"}
        proc = subprocess.run(argv, input=json.dumps(payload), env=env, capture_output=True,
                              text=True, timeout=60)
        _spent("hook", started)
        _traceback_free(argv, proc)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"] if proc.stdout.strip() else ""

    def prompt(self, text: str, cwd: Path | None = None) -> str:
        """The block the prompt hook injects for `text`, in a session of its own (no repeat suppression)."""
        return self.hook("UserPromptSubmit", {"session_id": str(uuid.uuid4()), "transcript_path": "",
                                              "cwd": str(cwd or self.top), "hook_event_name": "UserPromptSubmit",
                                              "permission_mode": "default", "prompt": text})

    def session_start(self, cwd: Path | None = None) -> str:
        return self.hook("SessionStart", {"session_id": str(uuid.uuid4()), "transcript_path": "",
                                          "cwd": str(cwd or self.top), "hook_event_name": "SessionStart",
                                          "source": "startup"})

    def next_day(self, day: dt.date) -> None:
        """Morning: the day's clock, and the agent's MCP server started for the day (its commits carry it)."""
        self.day, self.minute = day, 0
        self.close_mcp()
        self.mcp = Mcp(self.env(tick=False), name=f"agent-{self.name}")

    def close_mcp(self) -> None:
        if self.mcp is not None:
            self.mcp.close()
            self.mcp = None

    def stop(self) -> None:
        """The end of the week: the MCP server and the warm process this machine started (by their pid)."""
        self.close_mcp()
        if not self.root.exists():
            return
        status = self.run("daemon", "status", "--json", ok=False)
        with contextlib.suppress(ValueError):
            pid = json.loads(status.stdout).get("pid")
            self.run("daemon", "stop", ok=False)
            if pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, 15)


# ---- the web UI over HTTP

class Ui:
    """`hafiza ui --no-browser` for a machine's vault, signed in with its one-time token."""

    def __init__(self, machine: Machine):
        self.server = UiServer(env=machine.env(tick=False))
        self.client = UiClient(self.server)
        response, _ = self.client.login()
        assert response.status == 303

    def page(self, path: str) -> str:
        response, text = self.client.get(path)
        assert response.status == 200, f"{path}: {response.status} {text[:300]}"
        assert "Traceback" not in text
        return text

    def stop(self) -> None:
        self.server.stop()


def block_ids(block: str) -> list[str]:
    """The memory ids in a recalled block, in order: lines `- [type] id: text`."""
    import re

    return [m.group(1) for m in (re.match(r"- \[.*?\] (\S+?):(?: |$)", line) for line in block.splitlines()) if m]
