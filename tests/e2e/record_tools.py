"""Record tests/fixtures/sessions/tools/home: each real client running the same release steps with its own
shell and edit tools, against the e2e model servers (no account, nothing leaves 127.0.0.1).

    HAFIZA_E2E=1 .venv/bin/python tests/e2e/record_tools.py

The model asks for `make changelog`, a read and an edit of CHANGELOG.md, then `git tag -a v1.4.N ...`;
each client runs them with every tool allowed. Paths are rewritten to /home/dev/project, as in the other
recorded fixtures. tests/test_skills.py checks that the transcript readers give the same steps for all four.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
import test_claude_code as claude_e2e  # noqa: E402
import test_codex as codex_e2e  # noqa: E402
import test_gemini as gemini_e2e  # noqa: E402
import test_opencode as opencode_e2e  # noqa: E402
from gemini_server import FunctionCall  # noqa: E402
from model_server import ToolUse  # noqa: E402
from opencode_server import StreamingModelServer, ToolCall, Tripwire  # noqa: E402
from responses_server import Call, ResponsesServer  # noqa: E402

OUT = HERE.parent / "fixtures" / "sessions" / "tools" / "home"
MAKEFILE = "changelog:\n\techo changes > CHANGELOG.md\n"


def project(world) -> Path:
    (world.project / "Makefile").write_text(MAKEFILE)
    (world.project / "CHANGELOG.md").write_text("# Changes\n")
    return world.project


def tag(n: int) -> str:
    return f"git tag -a v1.4.{n} -m 'Release 1.4.{n}' || echo no-repo"


def claude(root: Path) -> Path:
    world = claude_e2e.World(root)
    log = str(project(world) / "CHANGELOG.md")
    world.run("cut the release", [
        ToolUse("Bash", {"command": "make changelog", "description": "Write the changelog"}, id="toolu_1"),
        ToolUse("Read", {"file_path": log}, id="toolu_2"),
        ToolUse("Edit", {"file_path": log, "old_string": "changes", "new_string": "Changes in 1.4.2"}, id="toolu_3"),
        ToolUse("Bash", {"command": tag(2), "description": "Tag"}, id="toolu_4"), "Released."],
        "--allowedTools", "Bash", "Read", "Edit")
    return world.home


def codex(root: Path) -> Path:
    # Codex 0.171 offers a model it has no metadata for exec_command only: the edit is not part of this run
    script = [Call("exec_command", {"cmd": "make changelog"}, call_id="call_0"),
              Call("exec_command", {"cmd": tag(3).replace("'", '"')}, call_id="call_1"), "Released."]
    with ResponsesServer(script) as server:
        world = codex_e2e.World(root, server)
        project(world)
        (world.codex_home / "config.toml").write_text(
            'model = "test-model"\nmodel_provider = "local"\napproval_policy = "never"\nsandbox_mode = "workspace-write"\n'
            f'\n[model_providers.local]\nname = "local"\nbase_url = "{server.url}/v1"\nenv_key = "HAFIZA_TEST_KEY"\n'
            'wire_api = "responses"\n')
        world.codex("cut the release")
    return world.home


def gemini(root: Path) -> Path:
    world = gemini_e2e.World(root)
    log = str(project(world) / "CHANGELOG.md")
    world.run("cut the release", [
        FunctionCall("run_shell_command", {"command": "make changelog", "description": "changelog"}),
        FunctionCall("replace", {"file_path": log, "old_string": "changes", "new_string": "Changes in 1.4.5",
                                 "instruction": "title"}),
        FunctionCall("run_shell_command", {"command": tag(5), "description": "tag"}), "Released."],
        "--approval-mode", "yolo")
    return world.home


class OpencodeWorld(opencode_e2e.World):
    def client_env(self) -> dict:
        return {**super().client_env(), "PWD": str(self.project)}  # opencode takes its folder from PWD


def opencode(root: Path) -> Path:
    log = str(root / "project" / "CHANGELOG.md")
    steps = [ToolCall("bash", {"command": "make changelog", "description": "Write the changelog"}, id="call_1"),
             ToolCall("read", {"filePath": log}, id="call_2"),
             ToolCall("edit", {"filePath": log, "oldString": "changes", "newString": "Changes in 1.4.6"}, id="call_3"),
             ToolCall("bash", {"command": tag(6), "description": "Tag"}, id="call_4"), "Released."]

    def model(request):
        messages = request.body.get("messages", [])
        if messages and opencode_e2e.TITLE_AGENT in str(messages[0].get("content")):
            return "Test session"
        return steps[min(sum(m.get("role") == "tool" for m in messages), len(steps) - 1)]

    with StreamingModelServer(model) as server, Tripwire() as wire:
        world = OpencodeWorld(root, server, wire)
        project(world)
        world.config.mkdir(parents=True)
        config = json.loads(opencode_e2e.user_config(server.url))
        config["permission"] = {"bash": "allow", "edit": "allow", "read": "allow", "external_directory": "allow"}
        (world.config / "opencode.json").write_text(json.dumps(config))
        opencode_e2e.seed_config_folder(world.config)
        world.run("cut the release")
    return world.home


def save(client: str, home: Path, root: Path) -> None:
    def fixed(text: str) -> str:
        return text.replace(str(root / "project"), "/home/dev/project").replace(str(home), "/home/dev")

    globs = {"claude": [".claude/projects/*/*.jsonl"], "codex": [".codex/sessions/*/*/*/*.jsonl"],
             "gemini": [".gemini/tmp/*/chats/*.jsonl", ".gemini/projects.json"]}
    for pattern in globs.get(client, []):
        for path in home.glob(pattern):
            rel = str(path.relative_to(home)).replace(str(root / "project").replace("/", "-"), "-home-dev-project")
            (OUT / rel).parent.mkdir(parents=True, exist_ok=True)
            (OUT / rel).write_text(fixed(path.read_text(encoding="utf-8")), encoding="utf-8")
    if client == "opencode":
        with sqlite3.connect(home / ".local" / "share" / "opencode" / "opencode.db") as con:
            dump = "\n".join(con.iterdump()) + "\n"
        out = OUT / ".local" / "share" / "opencode" / "opencode.sql"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(fixed(dump).replace(str(root / "project").lstrip("/"), "home/dev/project"), encoding="utf-8")


def main() -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    for client, record in {"claude": claude, "codex": codex, "gemini": gemini, "opencode": opencode}.items():
        root = Path(tempfile.mkdtemp(prefix=f"hafiza-record-{client}-"))
        save(client, record(root), root)
        shutil.rmtree(root, ignore_errors=True)
        print(f"recorded {client}")


if __name__ == "__main__":
    main()
