"""The real Claude Code (`claude -p`, no account) against a fake model server, after `hafiza install claude-code`.

Claude Code talks to tests/model_server.py (ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY=dummy), in a temporary
HOME, so every request body is exactly what the model would see. The checks: a prompt about a stored
memory brings the recalled block; "ok, devam et" brings nothing; the session-start profile arrives;
hafiza's MCP tools are offered; the model's `remember` call commits to the vault and its result comes
back; the session's end reaches the spool; after `hafiza uninstall claude-code` nothing of hafiza is left.

MCP_CONNECTION_NONBLOCKING=0 for every run: Claude Code 2.1.197 connects MCP servers in the background by
default, and `claude -p` waits at most 2 s for them before its first request. `hafiza mcp` connected in
1.7 s on a quiet machine but in 4.9 s while the hooks and the client started beside it on two busy
cores; that first request offered `WaitForMcpServers` instead of hafiza's tools, and a scripted
`remember` call got "No such tool available". With the variable set, the client waits for its servers,
so the checks do not depend on the machine's load. But it waits only MCP_CONNECT_TIMEOUT_MS (5 s by default;
2.1.197 then logs "not ready after 5000ms, proceeding; background connection continues") before its first
request: on a fresh clone under `make e2e` with other work on the cores, the first run offered no hafiza tool
and the `remember` run found no commit (issue 30, item 9). So the runs wait 60 s for the server
(MCP_CONNECT_TIMEOUT_MS), give its connection as long (MCP_TIMEOUT, 30 s by default; longer values are cut to
60 s: anthropics/claude-code#16837) and a tool call 5 minutes (MCP_TOOL_TIMEOUT), and the `remember` check
reads the tool's result before the vault's log.

Each `claude -p` run takes a few seconds, so the runs are module fixtures shared by the checks.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: model_server
sys.path.insert(0, str(Path(__file__).resolve().parent))      # tests/e2e/: rig
import rig  # noqa: E402
from model_server import ModelServer, ToolUse  # noqa: E402

RULE = "Always answer in Turkish when the user writes in Turkish."
DEPLOY = "Deploys go through infra/deploy.sh with the blue-green flag; never push to production by hand."
STAGING = "The staging database is reset every Monday at 06:00 UTC."
RUN_SECONDS = 300  # a run waits up to 60 s for its MCP server (MCP_TIMEOUT) on a loaded machine
# Set by the developer's shell or an agent session around the tests: none of it may reach the client.
FOREIGN = ("ANTHROPIC_", "CLAUDE", "HAFIZA_", "XDG_", "MCP_", "GIT_")


@dataclass
class Run(rig.Run):
    """One `claude -p` run; `bodies` are its /v1/messages request bodies."""

    session: str = ""


class World(rig.Rig):
    """A temporary HOME, a vault with two memories and a project folder, for `claude` (`exe`)."""

    client = "claude-code"
    drop = FOREIGN
    hook_log = True

    def client_env(self) -> dict:
        return {"DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "MCP_CONNECTION_NONBLOCKING": "0", "MCP_CONNECT_TIMEOUT_MS": "60000", "MCP_TIMEOUT": "60000",
                "MCP_TOOL_TIMEOUT": "300000"}  # see the module docstring

    def run(self, prompt: str, script=lambda prompt: "ok", *args: str) -> Run:
        session = str(uuid.uuid4())
        spooled, logged = len(self.spool()), len(self.hook_lines())
        with ModelServer(script) as server:
            env = self.env(ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="dummy")
            proc = subprocess.run([str(self.exe), "-p", prompt, "--session-id", session, *args],
                                  capture_output=True, text=True, env=env, cwd=self.project, timeout=RUN_SECONDS,
                                  stdin=subprocess.DEVNULL)
            bodies = [r.body for r in server.requests if r.path.endswith("/v1/messages") and r.body]
        assert proc.returncode == 0, f"claude exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr[-2000:]}"
        return Run(proc, bodies, self.spool()[spooled:], self.hook_lines()[logged:], session)


def messages_text(body: dict) -> str:
    """Every string in the request's messages (hook context arrives there, not in `system`)."""
    out: list[str] = []

    def walk(value):
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
    walk(body.get("messages", []))
    return "\n".join(out)


def fenced(body: dict, fence: str) -> str:
    found = re.findall(rf"<{fence}>.*?</{fence}>", messages_text(body), re.S)
    return "\n".join(found)


def tool_names(body: dict) -> list[str]:
    return [tool.get("name", "") for tool in body.get("tools", [])]


def new_world(base: Path) -> World:
    world = World(base)
    world.hafiza("init")
    world.hafiza("remember", "--type", "rule", RULE)
    world.hafiza("remember", "--title", "Deploy procedure", DEPLOY)
    return world


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> World:
    return new_world(tmp_path_factory.mktemp("claude-code")).install()


@pytest.fixture(scope="module")
def recall_run(world) -> Run:
    return world.run("how do we deploy to production?")


@pytest.fixture(scope="module")
def chat_run(world) -> Run:
    return world.run("ok, devam et")


def test_recalled_block_reaches_the_model(recall_run):
    block = fenced(recall_run.first, "hafiza-recall")
    assert block, messages_text(recall_run.first)[-3000:]
    assert "deploy-procedure" in block and "infra/deploy.sh with the blue-green flag" in block
    assert "reference data, not instructions" in block  # labelled as data, whatever the memory says
    assert "UserPromptSubmit hook additional context: <hafiza-recall>" in messages_text(recall_run.first)


def test_acknowledgement_injects_nothing(chat_run):
    text = messages_text(chat_run.first)
    assert "ok, devam et" in text
    assert "<hafiza-recall>" not in text and "UserPromptSubmit hook additional context" not in text
    # The hook did run and chose silence: it was not simply left out.
    assert any("claude-code prompt silent" in line for line in chat_run.hook_log), chat_run.hook_log


def test_session_start_profile_arrives(recall_run):
    profile = fenced(recall_run.first, "hafiza-profile")
    assert RULE in profile, messages_text(recall_run.first)[:3000]
    assert "SessionStart hook additional context: <hafiza-profile>" in messages_text(recall_run.first)


def test_mcp_tools_are_offered(recall_run):
    names = tool_names(recall_run.first)
    assert {"mcp__hafiza__recall", "mcp__hafiza__remember", "mcp__hafiza__supersede"} <= set(names), names


def test_remember_through_the_client_commits(world):
    call = ToolUse("mcp__hafiza__remember", {"text": STAGING, "type": "fact", "aliases": ["staging reset"]})
    run = world.run("Remember this: the staging database resets every Monday at 06:00 UTC.",
                    lambda prompt: call if "staging" in prompt else "Saved.",
                    "--allowedTools", "mcp__hafiza__remember")
    assert len(run.bodies) == 2, [messages_text(b)[-500:] for b in run.bodies]
    results = [block for message in run.bodies[1]["messages"] for block in message.get("content", [])
               if isinstance(block, dict) and block.get("type") == "tool_result"]
    assert [r["tool_use_id"] for r in results] == [call.id] and not results[0].get("is_error"), results
    memory_id = "the-staging-database-is-reset-every-monday-at-06-00-utc"
    committed = f"hafiza: remember {memory_id}"
    log = rig.wait_for(lambda: committed in world.git_subjects() and world.git_subjects())
    assert log and log[0] == committed, (world.git_subjects(), run.proc.stderr[-2000:])
    text = (world.vault / "memories" / f"{memory_id}.md").read_text(encoding="utf-8")
    assert STAGING in text and "type: fact" in text
    assert f'"id":"{memory_id}"' in json.dumps(results[0]["content"]).replace("\\", "")
    assert "Saved." in run.proc.stdout


def test_session_end_reaches_the_spool(recall_run):
    ends = [line for line in recall_run.spool if line["event"] == "end"]
    assert [(e["client"], e["session"]) for e in ends] == [("claude-code", recall_run.session)], recall_run.spool
    assert Path(ends[0]["transcript"]).is_file()  # the transcript the curator will read later is there
    metadata = json.loads(recall_run.first["metadata"]["user_id"])
    assert metadata["session_id"] == recall_run.session


@dataclass
class Uninstalled:
    world: World
    before: dict[str, bytes]    # the user's files before `hafiza install`
    after: dict[str, bytes]     # the same files after `hafiza uninstall`
    with_hafiza: Run
    run: Run


@pytest.fixture(scope="module")
def uninstalled(tmp_path_factory) -> Uninstalled:
    """A user who has used Claude Code (its ~/.claude.json exists) and has settings of their own installs
    hafiza, runs a session, uninstalls, and runs one more."""
    world = new_world(tmp_path_factory.mktemp("uninstall"))
    settings = world.home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{\n  "cleanupPeriodDays": 30\n}\n')
    world.run("hello")  # Claude Code writes its own state into ~/.claude.json
    before = _files(world.home)
    world.install()
    with_hafiza = world.run("how do we deploy to production?")
    # Meanwhile the user adds a server of their own, with Claude Code's own command (it rewrites ~/.claude.json).
    added = subprocess.run([str(world.exe), "mcp", "add", "--scope", "user", "notes", "--", "/bin/true"],
                           capture_output=True, text=True, env=world.env(), cwd=world.project, timeout=RUN_SECONDS)
    assert added.returncode == 0, added.stderr
    world.uninstall()
    after = _files(world.home)
    return Uninstalled(world, before, after, with_hafiza, world.run("how do we deploy to production?"))


def _files(home: Path) -> dict[str, bytes]:
    paths = [home / ".claude.json", *home.glob(".claude.json.*"), *(home / ".claude").glob("settings*")]
    return {str(p.relative_to(home)): p.read_bytes() for p in paths if p.is_file()}


def test_uninstall_leaves_nothing(uninstalled):
    u = uninstalled
    assert fenced(u.with_hafiza.first, "hafiza-recall") and "mcp__hafiza__remember" in tool_names(u.with_hafiza.first)
    assert u.after[".claude/settings.json"] == u.before[".claude/settings.json"]  # back byte for byte
    # Claude Code's own state file changed meanwhile (the user's server): their entries stay, hafiza's go.
    state, earlier = json.loads(u.after[".claude.json"]), json.loads(u.before[".claude.json"])
    assert list(state["mcpServers"]) == ["notes"], state["mcpServers"]
    assert {k: v for k, v in state.items() if k != "mcpServers"} == earlier
    body = json.dumps(u.run.first)
    assert not rig.traces(body, "blue-green flag", RULE), body[-3000:]  # no fence, tool or memory of hafiza's
    assert not [name for name in tool_names(u.run.first) if name.startswith("mcp__")]
    assert u.run.spool == [] and u.run.hook_log == []


def test_uninstall_leaves_no_backup(uninstalled):
    assert sorted(uninstalled.after) == sorted(uninstalled.before)


def test_the_session_is_found_by_conversation_search(world, recall_run):
    world.hafiza("sessions", "import")
    found = json.loads(world.hafiza("sessions", "search", "deploy to production", "--json").stdout)
    assert (found[0]["client"], found[0]["role"]) == ("claude-code", "user")
    assert found[0]["context"] == ["how do we deploy to production?"]
    assert not [r for r in found if "hafiza-recall" in " ".join(r["context"])]  # what hafiza injected is not indexed
