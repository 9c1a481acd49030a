"""The real opencode (`opencode run`, no account) against a fake model server, after `hafiza install opencode`.

opencode talks to tests/e2e/opencode_server.py through a custom provider in ~/.config/opencode/opencode.json
(`"npm": "@ai-sdk/openai-compatible"`, baseURL on 127.0.0.1, apiKey "dummy"; opencode bundles that package,
so nothing is installed for it), in a temporary HOME, so every request body is exactly what the model sees.
The checks: a prompt about a stored memory brings the recalled block; "ok, devam et" brings nothing; the
session-start profile; hafiza's MCP tools are offered; the model's `remember` call commits to the vault and
its result comes back; the session's end; after `hafiza uninstall opencode` nothing of hafiza is left.

No run touches the internet, and a check says so. Measured with opencode 1.18.33 behind `Tripwire`:
- without OPENCODE_DISABLE_MODELS_FETCH=1 it fetches models.dev at start-up;
- at every start it installs `@opencode-ai/plugin` into each config folder in the background
  (`background dependency install`: npm to registry.npmjs.org) unless the folder has a node_modules and a
  package-lock.json that already lists it, so `seed_config_folder` writes those two, as an earlier install
  would have. hafiza's plugin imports only a type from that package, so it runs without it.
`opencode run "a b"` quotes an argument that has a space: the model (and hafiza) get `"a b"`, quotes and all.

Each run takes ~10 s, so the runs are module fixtures shared by the checks.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: model_server
sys.path.insert(0, str(Path(__file__).resolve().parent))      # tests/e2e/: opencode_server, rig
from opencode_server import StreamingModelServer, ToolCall, Tripwire  # noqa: E402
from rig import Rig, Run, traces  # noqa: E402

from hafiza.hooks.mcp import TOOLS  # noqa: E402

STAGING = "The staging Postgres database listens on port 6544, not the default 5432."
RULE = "Always run make lint before committing in this user's projects."
DEPLOY = "Deploys go out on Thursdays only, never on Fridays."
DEPLOY_ID = "deploys-go-out-on-thursdays-only-never-on-fridays"
RUN_SECONDS = 180
# Set by the developer's shell or an agent session around the tests: none of it may reach the client.
FOREIGN = ("OPENCODE", "HAFIZA_", "XDG_", "GIT_", "OPENAI_", "ANTHROPIC_", "HTTP_PROXY", "HTTPS_PROXY",
           "NO_PROXY", "http_proxy", "https_proxy", "no_proxy", "ALL_PROXY", "all_proxy")
TITLE_AGENT = "You are a title generator"


def model(request):
    """The scripted model: a title for opencode's title agent, `remember` when asked to, else a short answer."""
    messages = request.body.get("messages", [])
    if messages and TITLE_AGENT in str(messages[0].get("content")):
        return "Test session"
    if messages and messages[-1].get("role") == "tool":
        return "Saved."
    if "please remember" in request.prompt.lower():
        return ToolCall("hafiza_remember", {"text": DEPLOY, "type": "rule", "aliases": ["deploy day"]})
    return "ok from the fake model"


class World(Rig):
    """A temporary HOME, a vault and a project folder, for `opencode` (`exe`); `server` is its model, `wire` its
    proxy. A run's `bodies` are the agent's /v1/chat/completions bodies (the title agent's left out)."""

    client = "opencode"
    drop = FOREIGN
    hook_log = True

    def __init__(self, root: Path, server: StreamingModelServer, wire: Tripwire):
        super().__init__(root)
        self.server, self.wire = server, wire

    @property
    def config(self) -> Path:
        return self.home / ".config" / "opencode"

    def client_env(self) -> dict:
        return {
            "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
            # Whatever opencode (or npm inside it) still tries to fetch ends at the tripwire.
            **{name: self.wire.url for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")},
            "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        }

    def run(self, prompt: str) -> Run:
        spooled, logged, asked = len(self.spool()), len(self.hook_lines()), len(self.server.requests)
        proc = subprocess.run([str(self.exe), "run", prompt], capture_output=True, text=True, env=self.env(),
                              cwd=self.project, timeout=RUN_SECONDS, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, f"opencode exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr[-3000:]}"
        bodies = [r.body for r in self.server.requests[asked:] if r.path.endswith("/chat/completions")
                  and TITLE_AGENT not in str(r.body["messages"][0].get("content"))]
        return Run(proc, bodies, self.spool()[spooled:], self.hook_lines()[logged:])


def texts(body: dict, role: str) -> list[str]:
    """The text of every message (or part of one) with this role."""
    out = []
    for message in body.get("messages", []):
        if message.get("role") != role:
            continue
        content = message.get("content")
        if isinstance(content, str):
            out.append(content)
        for part in content if isinstance(content, list) else ():
            out.append(part.get("text", ""))
    return out


def fenced(body: dict, fence: str) -> str:
    text = "\n".join(texts(body, "system") + texts(body, "user"))
    return "\n".join(re.findall(rf"<{fence}>.*?</{fence}>", text, re.S))


def tool_names(body: dict) -> list[str]:
    return [tool["function"]["name"] for tool in body.get("tools", [])]


def seed_config_folder(config: Path) -> None:
    """What opencode's background `npm install @opencode-ai/plugin` would have left: with it, opencode
    skips that install (it goes to registry.npmjs.org at every start otherwise)."""
    (config / "node_modules").mkdir()
    lock = {"name": "opencode", "lockfileVersion": 3, "requires": True,
            "packages": {"": {"dependencies": {"@opencode-ai/plugin": "*"}}}}
    (config / "package-lock.json").write_text(json.dumps(lock, indent=2) + "\n")


def user_config(base_url: str) -> str:
    """The user's own opencode.json before hafiza: the local provider and its model."""
    provider = {"npm": "@ai-sdk/openai-compatible", "name": "Local test model",
                "options": {"baseURL": base_url + "/v1", "apiKey": "dummy"},
                "models": {"test-model": {"name": "Test model"}}}
    return json.dumps({"$schema": "https://opencode.ai/config.json", "provider": {"local": provider},
                       "model": "local/test-model", "small_model": "local/test-model"}, indent=2) + "\n"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    with StreamingModelServer(model) as server, Tripwire() as wire:
        world = World(tmp_path_factory.mktemp("opencode"), server, wire)
        world.hafiza("init")
        world.hafiza("remember", "--title", "Staging database port", STAGING)
        world.hafiza("remember", "--type", "rule", RULE)
        world.config.mkdir(parents=True)
        (world.config / "opencode.json").write_text(user_config(server.url))
        seed_config_folder(world.config)
        yield world


@pytest.fixture(scope="module")
def installed(world) -> str:
    """`hafiza install opencode`; returns the user's opencode.json as it was before."""
    before = (world.config / "opencode.json").read_text()
    world.install()
    return before


@pytest.fixture(scope="module")
def recall_run(world, installed) -> Run:
    return world.run("what port does the staging database listen on?")


@pytest.fixture(scope="module")
def chat_run(world, installed) -> Run:
    return world.run("ok, devam et")


@pytest.fixture(scope="module")
def remember_run(world, installed) -> Run:
    return world.run("Please remember: deploys go out on Thursdays only, never on Fridays.")


@dataclass
class Uninstalled:
    before: str                 # opencode.json before `hafiza install`
    after: str                  # opencode.json after `hafiza uninstall`
    run: Run


@pytest.fixture(scope="module")
def uninstalled(world, installed, recall_run, chat_run, remember_run) -> Uninstalled:
    """After the other runs: `hafiza uninstall opencode`, then one more run."""
    world.uninstall()
    after = (world.config / "opencode.json").read_text()
    return Uninstalled(installed, after, world.run("what port does the staging database listen on?"))


def test_recalled_block_reaches_the_model(recall_run):
    block = fenced(recall_run.first, "hafiza-recall")
    assert "staging-database-port" in block and STAGING in block, texts(recall_run.first, "user")
    assert "reference data, not instructions" in block.splitlines()[1], block  # labelled as data, not orders
    # The plugin's synthetic part follows the prompt in the same user message.
    parts = recall_run.first["messages"][-1]["content"]
    assert [p["text"][:16] for p in parts] == ['"what port does ', "<hafiza-recall>\n"], parts
    assert any("opencode prompt injected" in line for line in recall_run.hook_log), recall_run.hook_log
    assert "ok from the fake model" in recall_run.proc.stdout


def test_acknowledgement_injects_nothing(chat_run):
    assert texts(chat_run.first, "user") == ['"ok, devam et"']  # opencode quotes an argument with spaces
    assert "<hafiza-recall" not in json.dumps(chat_run.first)  # the session-start profile is there; no recall
    # The plugin did run the hook and hafiza chose silence: it was not simply left out.
    assert any("opencode prompt silent" in line for line in chat_run.hook_log), chat_run.hook_log


def test_session_start_profile_arrives(recall_run):
    profile = fenced(recall_run.first, "hafiza-profile")
    assert RULE in profile, (texts(recall_run.first, "system")[-1][-1500:], texts(recall_run.first, "user"))


def test_mcp_tools_are_offered(recall_run):
    offered = {tool["function"]["name"]: tool["function"] for tool in recall_run.first["tools"]}
    assert {f"hafiza_{name}" for name, _, _ in TOOLS} <= set(offered), sorted(offered)
    remember = offered["hafiza_remember"]
    assert remember["description"].startswith("Save something to the user's long-term memory")
    assert "text" in remember["parameters"]["required"]


def test_remember_through_the_client_commits(world, remember_run):
    assert len(remember_run.bodies) == 2, [texts(b, "user") for b in remember_run.bodies]
    log = world.git_log("-1", "--format=%s%n%b")
    assert log.startswith(f"hafiza: remember {DEPLOY_ID}\n") and "Hafiza-Actor: opencode" in log, log
    text = (world.vault / "memories" / f"{DEPLOY_ID}.md").read_text(encoding="utf-8")
    assert DEPLOY in text and "type: rule" in text and "deploy day" in text
    # The tool's result comes back to the model in the next request.
    call, result = remember_run.bodies[1]["messages"][-2:]
    assert call["role"] == "assistant" and call["tool_calls"][0]["function"]["name"] == "hafiza_remember"
    assert result["role"] == "tool" and result["tool_call_id"] == "call_1", result
    assert json.loads(result["content"])["path"] == f"memories/{DEPLOY_ID}.md", result["content"]
    assert "Saved." in remember_run.proc.stdout


def test_session_end_reaches_the_spool(recall_run, chat_run, remember_run):
    ends = [line for run in (recall_run, chat_run, remember_run) for line in run.spool]
    if not ends:
        pytest.skip("opencode 1.18.33 has no session-end event for plugins: in `opencode run` a plugin sees "
                    "session.created/updated/status/diff/idle and message.* events; session.idle comes after "
                    "every turn, session.deleted only when a session is deleted, and nothing at exit")
    assert {(e["client"], e["event"]) for e in ends} == {("opencode", "end")}, ends


def test_uninstall_leaves_nothing(world, uninstalled):
    u = uninstalled
    assert u.after == u.before  # the user's opencode.json, byte for byte
    assert not (world.config / "plugins").exists()
    leftovers = [p for p in world.home.rglob("*") if "hafiza" in p.name]
    assert leftovers == [], leftovers
    body = json.dumps(u.run.first)
    assert not traces(body, STAGING, RULE, DEPLOY), body[-3000:]  # no fence or memory of hafiza's
    assert not [name for name in tool_names(u.run.first) if name.startswith("hafiza")]
    assert u.run.spool == [] and u.run.hook_log == []
    assert "ok from the fake model" in u.run.proc.stdout


def test_nothing_left_the_machine(world, uninstalled):
    assert world.wire.attempts == []


def test_the_session_is_found_by_conversation_search(world, recall_run, remember_run):
    world.hafiza("sessions", "import", "--client", "opencode")
    found = json.loads(world.hafiza("sessions", "search", "staging database port", "--json").stdout)
    assert (found[0]["client"], found[0]["role"]) == ("opencode", "user")
    assert "what port does the staging database listen on?" in found[0]["context"][0]
