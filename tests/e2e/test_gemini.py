"""Gemini CLI end to end: the real `gemini` binary (pinned in clients.py), headless, against a local Gemini API.

Each run is `gemini -m gemini-2.5-flash -o json -p PROMPT` in a temporary HOME whose settings.json
`hafiza install gemini` edited, with GOOGLE_GEMINI_BASE_URL pointing at gemini_server.GeminiServer.
What the tests read is what reached the model: the request bodies the server recorded. Gemini wraps
hook context in `<hook_context>` and escapes `<` and `>` inside it (gemini-cli 0.61
`DefaultHookOutput.getAdditionalContext`), so the model sees `&lt;hafiza-recall&gt;`; `hook_blocks`
undoes that escaping.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from gemini_server import FunctionCall, GeminiServer, Request
from rig import Rig, traces

MODEL = "gemini-2.5-flash"  # pinned with -m: without it, every prompt first goes to a routing classifier
RULE = "Production deploys only from main, after CI is green."               # a rule: in the profile
FACT = "The billing service's staging database is billing-stg on port 6543."  # knowledge: recall only
NEW = "Staging deploys need a green end-to-end run first."
HAFIZA_TOOLS = {f"mcp_hafiza_{name}" for name in ("recall", "remember", "add_aliases", "supersede", "forget",
                                                  "mark_used", "get", "list", "profile", "record_episode")}
# Gemini CLI's own settings for a run without an account: gemini-cli 0.61 takes GOOGLE_GEMINI_BASE_URL
# alone as auth type "gateway", which its own validateAuthMethod then rejects ("Invalid auth method
# selected."); with the API-key type selected it still sends to that base URL. No update checks, no
# usage statistics: the only host a run talks to is the test's server.
GEMINI_SETTINGS = {"security": {"auth": {"selectedType": "gemini-api-key"}},
                   "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
                   "privacy": {"usageStatisticsEnabled": False}}
RUN_SECONDS = 180


@dataclass
class Run:
    """One headless gemini run: what it printed and what reached the model."""

    proc: subprocess.CompletedProcess
    requests: list[Request]
    session: str

    @property
    def first(self) -> Request:
        return self.requests[0]


class World(Rig):
    """A HOME with Gemini CLI's settings, a vault with two memories, and a project (a git repository)."""

    client = "gemini"

    def __init__(self, root: Path):
        super().__init__(root)
        self.settings = self.home / ".gemini" / "settings.json"
        self.settings.parent.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(self.project)], check=True, env=self.env())
        self.settings.write_text(json.dumps(GEMINI_SETTINGS, indent=2) + "\n")
        self.original = self.settings.read_bytes()
        self.hafiza("init")
        self.hafiza("remember", RULE, "--type", "rule", "--tag", "deploy")
        self.hafiza("remember", FACT, "--type", "knowledge", "--tag", "billing")

    def run(self, prompt: str, script: list, *flags: str) -> Run:
        """`gemini -p PROMPT` against a server answering from `script`."""
        with GeminiServer(script) as server:
            env = self.env(GEMINI_API_KEY="dummy", GOOGLE_GEMINI_BASE_URL=server.url,
                           GEMINI_CLI_TRUST_WORKSPACE="true")  # headless gemini refuses an untrusted folder
            proc = subprocess.run([str(self.exe), "-m", MODEL, "-o", "json", *flags, "-p", prompt],
                                  capture_output=True, text=True, env=env, cwd=self.project, timeout=RUN_SECONDS)
        assert proc.returncode == 0, f"gemini exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
        assert server.turns, f"gemini sent no model request:\n{proc.stderr[-3000:]}"
        return Run(proc, server.turns, json.loads(proc.stdout)["session_id"])

    def spool(self, session: str | None = None, wait_for: str | None = None, seconds: float = 10) -> list[dict]:
        """The vault's spool lines (of one session), waiting up to `seconds` for an event of kind `wait_for`:
        Gemini does not wait for its SessionEnd hooks."""
        deadline = time.monotonic() + seconds
        while True:
            lines = [line for line in super().spool() if session is None or line["session"] == session]
            if wait_for is None or any(line["event"] == wait_for for line in lines) or time.monotonic() > deadline:
                return lines
            time.sleep(0.1)


def hook_blocks(request: Request, fence: str) -> list[str]:
    """The hook contexts in the prompt holding `<fence>`, as hafiza wrote them (Gemini's escaping undone)."""
    found = []
    for text in request.texts:
        for match in re.finditer(r"<hook_context>(.*?)</hook_context>", text, re.S):
            inner = html.unescape(match.group(1))
            if f"<{fence}>" in inner:
                found.append(inner)
    return found


@pytest.fixture(scope="module")
def rig(tmp_path_factory) -> World:
    return World(tmp_path_factory.mktemp("gemini")).install()


@pytest.fixture(scope="module")
def recall_run(rig) -> Run:
    """A prompt about the stored fact, in Gemini's default (headless) approval mode."""
    return rig.run("Which port does the billing staging database listen on?", ["Port 6543."])


@pytest.fixture(scope="module")
def tool_run(rig) -> Run:
    """The model calls hafiza's `remember`; --yolo, since headless gemini runs no tool that needs approval."""
    call = FunctionCall("mcp_hafiza_remember", {"text": NEW, "type": "rule", "tags": ["deploy"]})
    return rig.run("Remember: staging deploys need a green end-to-end run first.", [call, "Saved."], "--yolo")


def test_recall_reaches_the_model(recall_run):
    blocks = hook_blocks(recall_run.first, "hafiza-recall")
    assert len(blocks) == 1, recall_run.first.texts
    assert blocks[0].startswith("<hafiza-recall>\n") and blocks[0].endswith("</hafiza-recall>")
    assert FACT in blocks[0]
    assert recall_run.first.texts[-1].startswith("<hook_context>&lt;hafiza-recall&gt;")  # a part after the prompt


def test_filler_prompt_injects_nothing(rig):
    run = rig.run("ok, devam et", ["Tamam."])
    assert hook_blocks(run.first, "hafiza-recall") == [], run.first.texts


def test_session_start_profile_arrives(recall_run):
    blocks = hook_blocks(recall_run.first, "hafiza-profile")
    assert len(blocks) == 1 and RULE in blocks[0], recall_run.first.texts
    # Headless, Gemini prepends the SessionStart context to the prompt (interactive: a first turn of its own).
    prompt = next(text for text in recall_run.first.texts if text.endswith("listen on?"))
    assert prompt.startswith("<hook_context>&lt;hafiza-profile&gt;")


def test_mcp_tools_are_offered(tool_run):
    offered = tool_run.first.function_declarations
    assert HAFIZA_TOOLS <= set(offered), sorted(offered)
    remember = offered["mcp_hafiza_remember"]
    assert "long-term memory" in remember["description"]
    assert remember["parametersJsonSchema"]["required"] == ["text"]


def test_mcp_tools_are_offered_without_yolo(recall_run):
    assert HAFIZA_TOOLS <= set(recall_run.first.function_declarations), sorted(recall_run.first.function_declarations)


def test_remember_tool_commits_to_the_vault(rig, tool_run):
    assert len(tool_run.requests) == 2, [r.texts for r in tool_run.requests]
    (response,) = tool_run.requests[1].function_responses
    assert response["name"] == "mcp_hafiza_remember"
    # Gemini hands an MCP tool's result back as text, fenced as untrusted.
    output = response["response"]["output"]
    assert output.startswith("<untrusted_context>\n") and output.endswith("\n</untrusted_context>"), output
    memory_id = json.loads(output.removeprefix("<untrusted_context>").removesuffix("</untrusted_context>"))["id"]
    log = rig.git_subjects()
    assert log[0] == f"hafiza: remember {memory_id}", log
    text = (rig.vault / "memories" / f"{memory_id}.md").read_text()
    assert NEW in text and "type: rule" in text
    assert json.loads(tool_run.proc.stdout)["response"] == "Saved."


def test_session_end_reaches_the_spool(rig, recall_run):
    ends = [line for line in rig.spool(recall_run.session, wait_for="end") if line["event"] == "end"]
    assert len(ends) == 1, rig.spool()
    assert ends[0]["client"] == "gemini" and ends[0]["cwd"] == str(rig.project)
    assert ends[0]["transcript"] and Path(ends[0]["transcript"]).exists()


def test_no_precompact_without_compression(rig, recall_run):
    events = [line["event"] for line in rig.spool(recall_run.session, wait_for="end")]
    assert "precompact" not in events, events


def test_uninstall_leaves_nothing(tmp_path_factory):
    rig = World(tmp_path_factory.mktemp("gemini-uninstall"))
    rig.install()
    before = rig.run("Which port does the billing staging database listen on?", ["Port 6543."], "--yolo")
    assert hook_blocks(before.first, "hafiza-recall") and HAFIZA_TOOLS <= set(before.first.function_declarations)
    spooled = rig.spool(wait_for="end")

    rig.uninstall()
    assert rig.settings.read_bytes() == rig.original
    assert not list(rig.settings.parent.glob("*.hafiza-backup"))

    after = rig.run("Which port does the billing staging database listen on?", ["Port 6543."], "--yolo")
    for request in after.requests:
        assert not traces(json.dumps(request.body), RULE, FACT), request.texts
        assert not any("<hook_context>" in text for text in request.texts)  # its system prompt names the tag
    assert after.first.function_declarations and not set(after.first.function_declarations) & HAFIZA_TOOLS
    time.sleep(1)  # a SessionEnd hook, had one run, would have spooled by now (it took ~0.1 s above)
    assert rig.spool() == spooled
    assert not traces(after.proc.stderr)


def test_the_session_is_found_by_conversation_search_and_a_restatement_is_not_proposed(rig, recall_run, tool_run):
    rig.hafiza("sessions", "import")
    found = json.loads(rig.hafiza("sessions", "search", "billing staging port 6543", "--json").stdout)
    assert {(r["client"], r["role"]) for r in found[:2]} == {("gemini", "user"), ("gemini", "assistant")}
    # The user said "Remember: staging deploys need…" and the model saved it through MCP: capture finds the
    # statement, sees the memory, and records a use instead of proposing it again.
    assert "1 restated an existing memory" in rig.hafiza("inbox", "file").stdout
