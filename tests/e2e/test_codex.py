"""The end-to-end test of record for Codex: the real `codex exec` (pinned in clients.py), no account.

Codex runs headless in a temp HOME (CODEX_HOME inside it) against tests/e2e/responses_server.py, a
real local server speaking the Responses API it calls (POST /v1/responses, streamed). What the server
receives is what the model would see. Set-up is shared per module: a vault with two memories, a
config.toml naming the local provider, `hafiza install codex`, then the trust step a user takes in the
TUI ("Trust all and continue"), done through Codex's own app-server API: `hooks/list` gives each hook's
key and the hash Codex computes, `config/batchWrite` records it as `[hooks.state."<key>"] trusted_hash`.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from responses_server import Call, ResponsesServer
from rig import Rig, traces

RUN_SECONDS = 120
PNPM = "For JavaScript projects the user always uses pnpm as the package manager, never npm or yarn."
DENIZ = "The user is Deniz, a backend developer in Istanbul."
BUILDKITE = "The team's CI runs on Buildkite; pipelines live in .buildkite/pipeline.yml."
REMEMBER_CUE = "remember: our CI runs on Buildkite"
# Codex builds a turn's tool catalog once, waiting `mcp_optional_startup_grace_ms` (default 1000 ms)
# for servers that are not `required`; `hafiza mcp` needs longer than that to answer (the mcp SDK's
# import alone took 1.9 s of CPU here), so with the config as installed its tools miss the turn.
NO_GRACE = ("-c", "mcp_optional_startup_grace_ms=0")  # wait each server's startup_timeout_sec instead


def script(request):
    """The fake model: save on cue through hafiza's tool, acknowledge a tool result, else say ok."""
    if request.outputs():
        return "Saved."
    if REMEMBER_CUE in request.prompt:
        return Call("remember", {"text": BUILDKITE, "type": "fact"}, namespace="mcp__hafiza")
    return "ok"


@pytest.fixture(scope="module")
def server():
    with ResponsesServer(script) as running:
        yield running


@pytest.fixture(scope="module")
def world(tmp_path_factory, server):
    """Codex, its HOME, a vault with two memories and a project folder; hafiza not installed yet."""
    world = World(tmp_path_factory.mktemp("codex"), server)
    # The user's own config, written before the install (top-level keys must precede every table).
    (world.codex_home / "config.toml").write_text(
        'model = "test-model"\nmodel_provider = "local"\n\n[model_providers.local]\nname = "local test server"\n'
        f'base_url = "{server.url}/v1"\nenv_key = "HAFIZA_TEST_KEY"\nwire_api = "responses"\n')
    world.hafiza("init")
    world.hafiza("remember", "--type", "preference", PNPM)
    world.hafiza("remember", "--type", "identity", DENIZ)
    return world


@pytest.fixture(scope="module")
def installed(world):
    world.install()
    assert "[mcp_servers.hafiza]" in world.config_toml() and (world.codex_home / "hooks.json").exists()
    return world


@pytest.fixture(scope="module")
def trusted(installed):
    """The user's trust step, through the API Codex's TUI uses for it."""
    hooks = installed.trust_hooks()
    assert sorted(h["eventName"] for h in hooks) == ["preCompact", "sessionEnd", "sessionStart", "userPromptSubmit"]
    return installed


@pytest.fixture(scope="module")
def recall_run(trusted):
    return trusted.codex("which package manager should I use for the javascript frontend?")


@pytest.fixture(scope="module")
def remember_run(trusted):
    return trusted.codex(REMEMBER_CUE, *NO_GRACE)


class World(Rig):
    """A temporary HOME (CODEX_HOME in it), a vault and a project folder, for `codex`; `server` is its model."""

    client = "codex"

    def __init__(self, root: Path, server: ResponsesServer):
        super().__init__(root)
        self.server = server
        self.codex_home = self.home / ".codex"
        self.codex_home.mkdir()

    def client_env(self) -> dict[str, str]:
        return {"CODEX_HOME": str(self.codex_home), "HAFIZA_TEST_KEY": "dummy"}

    def codex(self, prompt: str, *flags: str) -> "Run":
        """`codex exec PROMPT` headless; the model requests it made during the run come back with it."""
        before = len(self.server.responses())
        proc = subprocess.run([str(self.exe), "exec", "--skip-git-repo-check", "-C", str(self.project), *flags, prompt],
                              env=self.env(), capture_output=True, text=True, timeout=RUN_SECONDS,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, f"codex exec exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr[-3000:]}"
        requests = self.server.responses()[before:]
        assert requests, f"codex made no model request:\n{proc.stderr[-3000:]}"
        return Run(proc, requests)

    def trust_hooks(self) -> list[dict]:
        """Trust every hook Codex lists for the project, as the TUI's "Trust all and continue" does."""
        proc = subprocess.Popen([str(self.exe), "app-server"], env=self.env(), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            rpc = _Rpc(proc)
            rpc.call("initialize", {"clientInfo": {"name": "hafiza-e2e", "version": "1"}, "capabilities": None})
            rpc.notify("initialized")
            hooks = rpc.call("hooks/list", {"cwds": [str(self.project)]})["data"][0]["hooks"]
            assert {h["trustStatus"] for h in hooks} == {"untrusted"}, hooks
            state = {h["key"]: {"trusted_hash": h["currentHash"]} for h in hooks}
            rpc.call("config/batchWrite", {"edits": [{"keyPath": "hooks.state", "value": state,
                                                      "mergeStrategy": "upsert"}]})
            after = rpc.call("hooks/list", {"cwds": [str(self.project)]})["data"][0]["hooks"]
            assert {h["trustStatus"] for h in after} == {"trusted"}, after
            return after
        finally:
            proc.stdin.close()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def config_toml(self) -> str:
        return (self.codex_home / "config.toml").read_text(encoding="utf-8")


class Run:
    def __init__(self, proc: subprocess.CompletedProcess, requests: list):
        self.proc, self.requests = proc, requests

    @property
    def first(self):
        return self.requests[0]

    @property
    def session(self) -> str:
        return self.first.headers["session-id"]


class _Rpc:
    """JSON-RPC over the app-server's stdio, one JSON object a line."""

    def __init__(self, proc: subprocess.Popen):
        self.proc, self.next_id = proc, 0

    def notify(self, method: str, params: dict | None = None) -> None:
        self._send({"jsonrpc": "2.0", "method": method, **({"params": params} if params else {})})

    def call(self, method: str, params: dict):
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            line = self.proc.stdout.readline()
            assert line, f"codex app-server closed its output during {method}"
            message = json.loads(line)
            if message.get("id") == self.next_id and "method" not in message:
                assert "error" not in message, f"{method}: {message['error']}"
                return message["result"]

    def _send(self, message: dict) -> None:
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()


def blocks(text: str, tag: str) -> list[str]:
    """Every `<tag>...</tag>` block in `text`."""
    parts = text.split(f"<{tag}>")[1:]
    return [part.split(f"</{tag}>")[0] for part in parts]


# --- the checks -------------------------------------------------------------------------------------

def test_hooks_wait_for_the_users_trust(installed):
    """Installed but not yet trusted: Codex skips hafiza's hooks without a word (README, trust step)."""
    spooled = len(installed.spool())
    run = installed.codex("which package manager should I use for the javascript frontend?")
    assert "<hafiza-" not in json.dumps(run.first.body)
    assert len(installed.spool()) == spooled
    assert "hook:" not in run.proc.stderr


def test_prompt_about_a_memory_brings_the_recalled_block(recall_run):
    recalled = blocks(recall_run.first.text, "hafiza-recall")
    assert len(recalled) == 1 and PNPM in recalled[0], recall_run.first.text[-2000:]
    # It arrives after the prompt it answers, as Codex's additional context (a developer message).
    developer = "\n".join(recall_run.first.texts("developer"))
    assert "<hafiza-recall>" in developer
    assert "hook: UserPromptSubmit Completed" in recall_run.proc.stderr


def test_follow_up_without_content_injects_nothing(trusted):
    run = trusted.codex("ok, devam et")
    assert run.first.prompt == "ok, devam et"
    assert "<hafiza-recall>" not in json.dumps(run.first.body)
    assert "hook: UserPromptSubmit Completed" in run.proc.stderr  # the hook ran and stayed silent


def test_session_start_brings_the_profile(recall_run):
    profile = blocks(recall_run.first.text, "hafiza-profile")
    assert len(profile) == 1 and DENIZ in profile[0], recall_run.first.text[-2000:]
    assert "hook: SessionStart Completed" in recall_run.proc.stderr


def test_mcp_tools_are_offered_as_installed(recall_run):
    assert "mcp__hafiza.recall" in recall_run.first.tool_names()


def test_mcp_tools_are_offered_once_codex_waits_for_the_server(remember_run):
    names = remember_run.first.tool_names()
    for tool in ("recall", "remember", "supersede", "forget", "mark_used", "get", "list", "profile"):
        assert f"mcp__hafiza.{tool}" in names, names


def test_model_calls_remember_and_the_memory_is_committed(trusted, remember_run):
    assert len(remember_run.requests) == 2, [r.prompt for r in remember_run.requests]
    subjects = trusted.git_subjects()
    assert subjects[0].startswith("hafiza: remember "), subjects
    memory_id = subjects[0].removeprefix("hafiza: remember ")
    assert BUILDKITE in (trusted.vault / "memories" / f"{memory_id}.md").read_text(encoding="utf-8")
    outputs = remember_run.requests[1].outputs()
    assert [o["call_id"] for o in outputs] == ["call_1"]
    assert memory_id in json.dumps(outputs[0]["output"]), outputs


def test_session_end_reaches_the_spool(trusted, recall_run):
    ends = [e for e in trusted.spool() if e["event"] == "end" and e["session"] == recall_run.session]
    assert len(ends) == 1, trusted.spool()
    assert ends[0]["client"] == "codex"
    assert ends[0]["cwd"] == str(trusted.project)
    assert Path(ends[0]["transcript"]).is_file()  # the rollout the curator reads later


def test_uninstall_leaves_codex_clean(trusted):
    trusted.codex("warm up", *NO_GRACE)  # everything installed has run at least once
    trusted.uninstall()
    spooled = len(trusted.spool())
    run = trusted.codex("which package manager should I use for the javascript frontend?", *NO_GRACE)
    sent = json.dumps([r.body for r in run.requests])
    assert not traces(sent, PNPM, DENIZ) and "hook:" not in run.proc.stderr
    assert len(trusted.spool()) == spooled
    assert not (trusted.codex_home / "hooks.json").exists()
    assert not traces(trusted.config_toml())
    assert 'env_key = "HAFIZA_TEST_KEY"' in trusted.config_toml()  # the user's own settings stay


def test_uninstall_leaves_no_file_of_hafiza(trusted):
    if "[mcp_servers.hafiza]" in trusted.config_toml():
        trusted.uninstall()
    left = sorted(p.name for p in trusted.codex_home.iterdir() if "hafiza" in p.name)
    assert left == []


def test_the_session_is_found_by_conversation_search(trusted, recall_run):
    trusted.hafiza("sessions", "import", "--client", "codex")
    found = json.loads(trusted.hafiza("sessions", "search", "package manager javascript", "--json").stdout)
    assert (found[0]["client"], found[0]["role"]) == ("codex", "user")
    assert found[0]["context"] == ["which package manager should I use for the javascript frontend?"]
