"""`hafiza install` / `uninstall` on a temporary HOME: idempotence, dry runs, exact removal, real hooks."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, run_cli
from hafiza.hooks import clients
from hafiza.hooks.configs import TOML_KEY_MARK, ConfigError
from hafiza.hooks.install import Options, apply, interpreter, plan_install, plan_uninstall
from hafiza.hooks.payload import CLIENTS, EVENTS

PLUGIN = ROOT / "hooks" / "plugin"


def home() -> Path:
    return Path(os.environ["HOME"])


def snapshot(*roots: Path) -> dict[str, bytes]:
    """Every file under the roots (backups included) → its bytes."""
    files = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file() or path.is_symlink():
                files[str(path)] = path.read_bytes()
    return files


def install(client: str, **options) -> list[Path]:
    return apply(plan_install(Options(client, **options)))


def uninstall(client: str, **options) -> list[Path]:
    return apply(plan_uninstall(Options(client, **options)))


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode())
    return path


# --- every client ---------------------------------------------------------

@pytest.mark.parametrize("client", CLIENTS)
def test_second_install_changes_nothing(client):
    assert install(client)
    first = snapshot(home())
    assert plan_install(Options(client)).changes == []
    assert install(client) == []
    assert snapshot(home()) == first


@pytest.mark.parametrize("client", CLIENTS)
def test_uninstall_removes_the_files_and_folders_install_created(client):
    install(client)
    assert snapshot(home())
    uninstall(client)
    # the folders too (new-user trial: ~/.gemini and ~/.claude stayed, empty), and the record of them
    assert list(home().iterdir()) == []
    assert plan_uninstall(Options(client)).empty


@pytest.mark.parametrize("client", CLIENTS)
def test_dry_run_prints_a_diff_and_writes_nothing(client):
    proc = run_cli("install", client, "--dry-run")
    assert snapshot(home()) == {}
    assert "--- /dev/null" in proc.stdout and "\n+++ b" + str(home()) in proc.stdout
    assert "hafiza" in proc.stdout and "nothing was written" in proc.stdout
    install(client)
    installed = snapshot(home())
    proc = run_cli("uninstall", client, "--dry-run")
    assert "\n+++ /dev/null" in proc.stdout and snapshot(home()) == installed


@pytest.mark.parametrize("client", CLIENTS)
def test_project_scope_writes_into_the_project(client, tmp_path):
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    if client == "goose":
        with pytest.raises(ConfigError, match="--scope user"):
            plan_install(Options(client, scope="project", project=project))
        return
    install(client, scope="project", project=project)
    assert snapshot(project) and not [p for p in snapshot(home()) if "installed.json" not in p]
    uninstall(client, scope="project", project=project)
    assert [p.name for p in project.iterdir()] == [".git"]  # the project's .claude/ (...) went with its files
    assert list(home().iterdir()) == []


def test_each_file_is_said_created_updated_or_unchanged_and_a_dry_run_says_would():
    """New-user trial: every file install wrote was "updated", the ones it created too."""
    write(home() / ".claude.json", '{"numStartups": 1}\n')
    settings, state = home() / ".claude" / "settings.json", home() / ".claude.json"
    dry = run_cli("install", "claude-code", "--dry-run").stdout.splitlines()
    assert f"would create {settings}" in dry and f"would update {state}" in dry
    assert "dry run: nothing was written." in dry and not settings.exists()
    said = run_cli("install", "claude-code").stdout.splitlines()
    assert said[:2] == [f"created {settings}", f"updated {state}"]
    again = run_cli("install", "claude-code").stdout.splitlines()
    assert again[:3] == [f"unchanged {settings}", f"unchanged {state}",
                         "claude-code: nothing to change (already installed)."]
    said = run_cli("uninstall", "claude-code").stdout.splitlines()
    assert said == [f"removed {settings}", f"restored {state} (as it was before the install, from its backup)",
                    f"removed {state}.hafiza-backup (the pre-install copy)",
                    f"removed {settings.parent}{os.sep} (install created it, and nothing else is in it)"]
    assert snapshot(home()) == {str(state): b'{"numStartups": 1}\n'} and list(home().iterdir()) == [state]


def test_json_says_of_each_file_what_the_text_says_dry_run_too():
    """`install` and `uninstall` were the write commands without --json; a script reads each file's result in the
    words of the text report's line for it."""
    write(home() / ".claude.json", '{"numStartups": 1}\n')
    settings, state = home() / ".claude" / "settings.json", home() / ".claude.json"

    def said(*args) -> tuple[dict, list[tuple[str, str]]]:
        """(the JSON report, (result, path) of each line the text report of the same run gives)."""
        data = json.loads(run_cli(*args, "--json").stdout)
        files = [(f["result"], f["path"] + (f" ({f['why']})" if f["why"] else "")) for f in data["files"]]
        return data, files

    dry, files = said("install", "claude-code", "--dry-run")
    assert files == [("would create", str(settings)), ("would update", str(state))] and not settings.exists()
    assert dry["dry_run"] and dry["changed"] and f"+++ b{settings}" in dry["diff"]
    text = run_cli("install", "claude-code", "--dry-run").stdout
    assert [f"{result} {path}" for result, path in files] == [x for x in text.splitlines() if x.startswith("would ")]
    assert dry["notes"] and all(f"\n{note}\n" in text for note in dry["notes"])  # "no vault at ..." among them
    done, files = said("install", "claude-code")
    assert files == [("created", str(settings)), ("updated", str(state))] and settings.exists()
    assert (done["client"], done["action"], done["dry_run"], done["diff"]) == ("claude-code", "install", False, None)
    again, files = said("install", "claude-code")
    assert files == [("unchanged", str(settings)), ("unchanged", str(state))] and not again["changed"]
    _, files = said("uninstall", "claude-code", "--dry-run")
    assert [result for result, _ in files] == ["would remove", "would restore", "would remove", "would remove"]
    gone, files = said("uninstall", "claude-code")
    assert files == [("removed", str(settings)), ("restored", f"{state} (as it was before the install, from its backup)"),
                     ("removed", f"{state}.hafiza-backup (the pre-install copy)"),
                     ("removed", f"{settings.parent}{os.sep} (install created it, and nothing else is in it)")]
    assert gone["action"] == "uninstall" and snapshot(home()) == {str(state): b'{"numStartups": 1}\n'}
    nothing, files = said("uninstall", "claude-code")
    assert (files, nothing["changed"], nothing["notes"]) == ([], False, [])


def test_an_uninstall_dry_run_says_what_it_would_do_not_what_it_did():
    """New-user trial: `uninstall --dry-run` said hafiza's entries and the backup "were removed"."""
    path = write(home() / ".gemini/settings.json", USER_FILES[".gemini/settings.json"])
    install("gemini")
    path.write_text(path.read_text().replace('"GitHub"', '"Dracula"'))
    installed = snapshot(home())
    out = run_cli("uninstall", "gemini", "--dry-run").stdout
    lines = [line for line in out.splitlines() if line and line[0] not in "-+ @"]
    assert lines == [f"would update {path} (only hafiza's entries out: it changed since the install, so the rest "
                     "stays as it is now)", f"would remove {path}.hafiza-backup (the pre-install copy)",
                     "dry run: nothing was written."]
    assert "were removed" not in out and "was removed" not in out and snapshot(home()) == installed
    assert run_cli("uninstall", "gemini").stdout.splitlines()[0].startswith(f"updated {path} (only hafiza's")


def test_a_folder_that_was_there_before_or_holds_anything_stays():
    (home() / ".gemini").mkdir()  # there before the install, empty
    install("gemini")
    uninstall("gemini")
    assert (home() / ".gemini").is_dir() and not any((home() / ".gemini").iterdir())
    install("claude-code")  # makes ~/.claude
    mine = write(home() / ".claude" / "CLAUDE.md", "# my instructions\n")
    plan = plan_uninstall(Options("claude-code"))
    assert plan.folders == []
    apply(plan)
    assert mine.read_text() == "# my instructions\n"
    mine.unlink()  # emptied later: the record still says install made it, so the next uninstall removes it
    plan = plan_uninstall(Options("claude-code"))
    assert plan.changes == [] and plan.folders == [home() / ".claude"]
    apply(plan)
    assert not (home() / ".claude").exists()
    assert sorted(p.name for p in home().iterdir()) == [".gemini"]  # and the record went once empty


def test_a_folder_made_again_since_the_install_is_not_the_one_install_made():
    install("gemini")
    made = home() / ".gemini"
    made.rename(home() / "gemini-moved")  # the folder install made lives on elsewhere (the same inode)
    made.mkdir()
    (home() / "gemini-moved" / "settings.json").rename(made / "settings.json")
    uninstall("gemini")
    assert made.is_dir() and not any(made.iterdir())  # the user's own folder, empty: still theirs


def test_folders_two_clients_share_go_with_the_last_one():
    """~/.config is made by the first of goose and opencode installed; it goes when both are uninstalled."""
    install("goose")
    install("opencode")
    uninstall("goose")
    assert (home() / ".config" / "opencode" / "opencode.json").exists() and not (home() / ".agents").exists()
    uninstall("opencode")
    assert list(home().iterdir()) == []


def test_no_mcp_and_no_hooks_split_the_work():
    hooks_only = {c.path.name for c in plan_install(Options("gemini", mcp=False)).changes}
    mcp_only = plan_install(Options("codex", hooks=False)).changes
    assert hooks_only == {"settings.json"}
    assert [c.path.name for c in mcp_only] == ["config.toml"]
    settings = json.loads(plan_install(Options("gemini", mcp=False)).changes[0].after)
    assert "mcpServers" not in settings and set(settings["hooks"]) == {
        "BeforeAgent", "SessionStart", "SessionEnd"}


# --- what each client gets ------------------------------------------------

def test_hook_commands_use_this_interpreter_and_skip_click():
    install("claude-code")
    settings = json.loads((home() / ".claude" / "settings.json").read_text())
    assert set(settings["hooks"]) == {"UserPromptSubmit", "SessionStart", "SessionEnd", "PreCompact"}
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert shlex.split(command) == [interpreter(), "-S", str(clients.HOOK_SCRIPT), "claude-code", "UserPromptSubmit"]
    server = json.loads((home() / ".claude.json").read_text())["mcpServers"]["hafiza"]
    assert server["type"] == "stdio" and server["args"][-1] == "mcp" and Path(server["command"]).is_absolute()


def test_vault_option_goes_into_the_commands_env(tmp_path):
    run_cli("--vault", str(tmp_path / "elsewhere"), "install", "codex")
    hooks = json.loads((home() / ".codex" / "hooks.json").read_text())["hooks"]
    assert hooks["UserPromptSubmit"][0]["hooks"][0]["command"].startswith(f"HAFIZA_VAULT={tmp_path}/elsewhere ")
    config = tomllib.loads((home() / ".codex" / "config.toml").read_text())
    assert config["mcp_servers"]["hafiza"]["env"] == {"HAFIZA_VAULT": str(tmp_path / "elsewhere")}
    xdg = home() / ".local" / "share" / "hafiza" / "vault"  # where a process without HAFIZA_VAULT looks
    run_cli("install", "opencode", env={"HAFIZA_VAULT": str(xdg)})  # the default vault: the env stays out
    assert "environment" not in json.loads((home() / ".config/opencode/opencode.json").read_text())["mcp"]["hafiza"]


def test_codex_install_explains_the_trust_step():
    out = run_cli("install", "codex").stdout
    assert "/hooks" in out and "trust" in out
    assert json.loads((home() / ".codex" / "hooks.json").read_text())["hooks"]["SessionEnd"][0]["hooks"][0][
        "timeout"] == 3


def test_gemini_hooks_use_its_event_names_and_milliseconds():
    install("gemini")
    settings = json.loads((home() / ".gemini" / "settings.json").read_text())
    handler = settings["hooks"]["BeforeAgent"][0]["hooks"][0]
    assert handler["timeout"] == 10000 and handler["name"] == "hafiza-beforeagent"
    assert settings["mcpServers"]["hafiza"]["args"] == ["mcp"]


def test_cursor_gets_session_hooks_and_is_told_prompt_hooks_cannot_inject():
    out = run_cli("install", "cursor").stdout
    assert "beforeSubmitPrompt" in out and "cannot add context" in out
    hooks = json.loads((home() / ".cursor" / "hooks.json").read_text())
    assert hooks["version"] == 1 and set(hooks["hooks"]) == {"sessionStart", "sessionEnd", "preCompact"}
    assert "hafiza" in json.loads((home() / ".cursor" / "mcp.json").read_text())["mcpServers"]


def test_cursor_project_scope_writes_a_rule(tmp_path):
    install("cursor", scope="project", project=tmp_path)
    rule = (tmp_path / ".cursor" / "rules" / "hafiza.mdc").read_text()
    assert "alwaysApply: true" in rule and "`recall`" in rule


def test_goose_gets_an_extension_a_hook_plugin_and_a_wrapper():
    install("goose")
    config = yaml.safe_load((home() / ".config/goose/config.yaml").read_text())
    ext = config["extensions"]["hafiza"]
    assert ext["type"] == "stdio" and ext["enabled"] is True and ext["args"] == ["mcp"]
    hooks = json.loads((home() / ".agents/plugins/hafiza/hooks/hooks.json").read_text())["hooks"]
    assert "goose UserPromptSubmit" in hooks["UserPromptSubmit"][0]["hooks"][0]["command"]
    wrapper = home() / ".local/bin/hafiza-goose"
    assert wrapper.stat().st_mode & stat.S_IXUSR


def test_goose_wrapper_gives_each_run_its_own_moim_file(tmp_path):
    install("goose")
    fake = write(tmp_path / "fake-goose", '#!/bin/sh\nprintf "%s|%s" "$GOOSE_MOIM_MESSAGE_FILE" "$*"\n'
                 'test -f "$GOOSE_MOIM_MESSAGE_FILE" || exit 7\n')
    fake.chmod(0o755)
    env = {**os.environ, "HAFIZA_GOOSE_BIN": str(fake), "XDG_RUNTIME_DIR": str(tmp_path)}
    runs = [subprocess.run([home() / ".local/bin/hafiza-goose", "session", "-n", "x"], env=env,
                           capture_output=True, text=True) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0]
    files = [r.stdout.split("|")[0] for r in runs]
    assert files[0] != files[1] and all(f.startswith(str(tmp_path)) for f in files)
    assert runs[0].stdout.endswith("|session -n x")
    assert not any(Path(f).exists() for f in files)  # removed when goose exits


def test_opencode_gets_the_mcp_server_and_the_plugin():
    install("opencode")
    server = json.loads((home() / ".config/opencode/opencode.json").read_text())["mcp"]["hafiza"]
    assert server["type"] == "local" and server["command"][-1] == "mcp" and server["enabled"] is True
    plugin = (home() / ".config/opencode/plugins/hafiza.ts").read_text()
    command = json.dumps([interpreter(), "-S", str(clients.HOOK_SCRIPT), "opencode", "prompt"])
    assert f"const COMMAND: string[] = {command}" in plugin
    assert '"chat.message"' in plugin and "synthetic: true" in plugin


def test_opencode_jsonc_is_not_rewritten():
    write(home() / ".config/opencode/opencode.jsonc", '{\n  // mine\n  "theme": "dark"\n}\n')
    with pytest.raises(ConfigError, match="opencode.jsonc"):
        plan_install(Options("opencode"))


# --- a user's own configuration survives ----------------------------------

USER_FILES = {
    ".claude/settings.json": json.dumps({
        "model": "opus", "hooks": {
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "~/bin/my-prompt-hook"}]}],
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}]},
        "permissions": {"allow": ["Bash(ls:*)"]}}, indent=4),     # 4 spaces, no final newline
    ".claude.json": '{"numStartups": 7, "mcpServers": {"github": {"command": "gh-mcp", "args": ["serve"]}}, '
                    '"projects": {"/x": {"allowedTools": []}}}',   # one line, as some tools write it
    ".codex/hooks.json": '{\n  "hooks": {\n    "Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]\n  }\n}\n',
    ".codex/config.toml": '# my codex settings\nmodel = "gpt-5"  # keep\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n'
                          'args = ["--port", "1"]\n\n[projects."/x"]\ntrust_level = "trusted"',  # no final newline
    ".gemini/settings.json": '{\n  "theme": "GitHub",\n  "mcpServers": {\n    "other": {"command": "o"}\n  },\n'
                             '  "hooks": {\n    "BeforeAgent": [\n      {"hooks": [{"type": "command", "command": '
                             '"mine"}]}\n    ]\n  }\n}\n',
    ".cursor/hooks.json": '{\n  "version": 1,\n  "hooks": {\n    "afterFileEdit": [{"command": "./fmt.sh"}],\n'
                          '    "sessionStart": [{"command": "./hello.sh"}]\n  }\n}\n',
    ".cursor/mcp.json": '{"mcpServers": {}}\n',
    ".config/goose/config.yaml": "# goose config\nGOOSE_PROVIDER: anthropic\nextensions:\n  developer:\n"
                                 "    bundled: true\n    enabled: true\n    name: developer\n    timeout: 300\n"
                                 "    type: builtin\n  # my memory server\n  memory:\n    enabled: false\n"
                                 "    type: builtin\n    name: memory\n\n# the model\nGOOSE_MODEL: claude\n",
    ".config/opencode/opencode.json": '{\n  "$schema": "https://opencode.ai/config.json",\n  "mcp": {\n'
                                      '    "local-db": {"type": "local", "command": ["db-mcp"]}\n  }\n}\n',
}


def test_user_entries_survive_install_and_uninstall_byte_for_byte():
    for name, text in USER_FILES.items():
        write(home() / name, text)
    before = snapshot(home())
    for client in CLIENTS:
        install(client)
    claude = json.loads((home() / ".claude/settings.json").read_text())
    assert [g["hooks"][0]["command"] for g in claude["hooks"]["UserPromptSubmit"]][0] == "~/bin/my-prompt-hook"
    assert claude["hooks"]["PreToolUse"] and claude["permissions"] and len(claude["hooks"]["UserPromptSubmit"]) == 2
    assert set(json.loads((home() / ".claude.json").read_text())["mcpServers"]) == {"github", "hafiza"}
    codex = tomllib.loads((home() / ".codex/config.toml").read_text())
    assert set(codex["mcp_servers"]) == {"docs", "hafiza"} and codex["projects"]["/x"]["trust_level"] == "trusted"
    text = (home() / ".codex/config.toml").read_text()  # the user's file verbatim, after hafiza's grace key
    assert text.startswith(TOML_KEY_MARK + "\nmcp_optional_startup_grace_ms = 5000\n" + USER_FILES[".codex/config.toml"])
    goose = (home() / ".config/goose/config.yaml").read_text()
    assert "# my memory server" in goose and set(yaml.safe_load(goose)["extensions"]) == {"developer", "memory",
                                                                                          "hafiza"}
    assert (home() / ".claude.json.hafiza-backup").read_text() == USER_FILES[".claude.json"]
    for client in CLIENTS:
        install(client)  # still idempotent with other people's entries around
    for client in CLIENTS:
        uninstall(client)
    assert snapshot(home()) == before  # byte for byte, backups gone too


def test_uninstall_keeps_changes_the_user_made_after_install():
    write(home() / ".gemini/settings.json", USER_FILES[".gemini/settings.json"])
    install("gemini")
    path = home() / ".gemini/settings.json"
    data = json.loads(path.read_text())
    data["theme"] = "Dracula"
    path.write_text(json.dumps(data, indent=2) + "\n")
    uninstall("gemini")
    after = json.loads(path.read_text())
    assert after["theme"] == "Dracula" and set(after["mcpServers"]) == {"other"}
    assert [g["hooks"][0]["command"] for g in after["hooks"]["BeforeAgent"]] == ["mine"]
    # The pre-install copy is not current any more (a stale backup confused users): gone, and said so.
    assert not (home() / ".gemini/settings.json.hafiza-backup").exists()


def test_reinstall_replaces_hafiza_entries_in_place():
    write(home() / ".claude/settings.json", USER_FILES[".claude/settings.json"])
    install("claude-code", python="/old/python")
    install("claude-code")
    groups = json.loads((home() / ".claude/settings.json").read_text())["hooks"]["UserPromptSubmit"]
    assert len(groups) == 2 and "/old/python" not in json.dumps(groups)
    assert groups[0]["hooks"][0]["command"] == "~/bin/my-prompt-hook"


def test_hooks_of_an_earlier_version_are_replaced_and_uninstalled():
    old = {"type": "command", "command": "/usr/bin/python3 -m hafiza.hooks claude-code UserPromptSubmit", "timeout": 10}
    write(home() / ".claude/settings.json", json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [old]}]}}))
    install("claude-code")
    groups = json.loads((home() / ".claude/settings.json").read_text())["hooks"]["UserPromptSubmit"]
    assert len(groups) == 1 and "hafiza_hook.py" in groups[0]["hooks"][0]["command"]
    write(home() / ".claude/settings.json", json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [old]}]}}))
    uninstall("claude-code")
    assert "hooks" not in json.loads((home() / ".claude/settings.json").read_text())


def test_a_file_mode_and_a_symlink_are_kept(tmp_path):
    real = write(tmp_path / "dotfiles" / "claude.json", '{"x": 1}\n')
    real.chmod(0o600)
    (home() / ".claude.json").symlink_to(real)
    install("claude-code")
    assert (home() / ".claude.json").is_symlink()
    assert "hafiza" in json.loads(real.read_text())["mcpServers"]
    assert stat.S_IMODE(real.stat().st_mode) == 0o600


# --- what must not be touched ---------------------------------------------

def test_malformed_settings_is_an_error_and_nothing_is_written():
    broken = write(home() / ".claude/settings.json", '{"hooks": {"UserPromptSubmit": [}\n')
    proc = run_cli("install", "claude-code", check=False)
    assert proc.returncode != 0
    assert "Error:" in proc.stderr and str(broken) in proc.stderr and "line 1" in proc.stderr
    assert snapshot(home()) == {str(broken): b'{"hooks": {"UserPromptSubmit": [}\n'}


def test_unexpected_shapes_are_errors():
    write(home() / ".codex/hooks.json", '{"hooks": {"UserPromptSubmit": {"command": "x"}}}')
    with pytest.raises(ConfigError, match="hooks.UserPromptSubmit"):
        plan_install(Options("codex"))
    write(home() / ".config/goose/config.yaml", "extensions: {developer: {enabled: true}}\n")
    with pytest.raises(ConfigError, match="flow style"):
        plan_install(Options("goose", hooks=False))


def test_codex_table_the_user_wrote_is_not_taken_over():
    toml = write(home() / ".codex/config.toml", '[mcp_servers.hafiza]\ncommand = "my-own-hafiza"\n')
    with pytest.raises(ConfigError, match="without hafiza's marker line"):
        plan_install(Options("codex", hooks=False))
    assert plan_uninstall(Options("codex")).changes == []
    assert toml.read_text().startswith("[mcp_servers.hafiza]")


def test_goose_empty_extensions_mapping_round_trips():
    config = write(home() / ".config/goose/config.yaml", "GOOSE_MODEL: x\nextensions: {}\n")
    install("goose", hooks=False)
    assert set(yaml.safe_load(config.read_text())["extensions"]) == {"hafiza"}
    config.unlink(), (home() / ".config/goose/config.yaml.hafiza-backup").unlink()
    write(home() / ".config/goose/config.yaml", "GOOSE_MODEL: x\nextensions: {}\n")
    install("goose", hooks=False)
    (home() / ".config/goose/config.yaml.hafiza-backup").unlink()  # no backup: the line edit alone restores it
    uninstall("goose")
    assert config.read_text() == "GOOSE_MODEL: x\nextensions: {}\n"


def test_a_file_at_an_owned_path_is_not_overwritten():
    write(home() / ".config/opencode/plugins/hafiza.ts", "// my own plugin\n")
    with pytest.raises(ConfigError, match="not written by hafiza"):
        plan_install(Options("opencode"))
    assert plan_uninstall(Options("opencode", mcp=False)).changes == []


def test_interpreter_is_never_a_shim(tmp_path, monkeypatch):
    shim = write(tmp_path / "shims" / "python3", '#!/usr/bin/env bash\nexec pyenv exec python3 "$@"\n')
    shim.chmod(0o755)
    prefix = tmp_path / "prefix"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "python3").symlink_to(Path(sys.executable).resolve())
    monkeypatch.setattr(sys, "executable", str(shim))
    monkeypatch.setattr(sys, "prefix", str(prefix))
    assert interpreter() == str(prefix / "bin" / "python3")
    monkeypatch.setattr(sys, "executable", str(prefix / "bin" / "python3"))
    assert interpreter() == str(prefix / "bin" / "python3")  # a symlink (a venv's python) is kept as is


# --- the installed hook really works ---------------------------------------

def _remember_deploy_rule():
    run_cli("init")
    run_cli("remember", "Production deploys only from main, after CI is green.", "--type", "rule",
            "--title", "Deploy from main only")


def _run_installed_hook(command: str, payload: dict, env: dict | None = None) -> subprocess.CompletedProcess:
    # Clients run the command through a shell; so does this test. No warm process is started.
    return subprocess.run(["/bin/sh", "-c", command], input=json.dumps(payload), capture_output=True, text=True,
                          env={**os.environ, "HAFIZA_DAEMON": "0", **(env or {})}, timeout=60, cwd=str(home()))


def test_installed_claude_code_hook_injects_a_matching_memory(tmp_path):
    _remember_deploy_rule()
    install("claude-code")
    settings = json.loads((home() / ".claude/settings.json").read_text())
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    payload = {"session_id": "abc123", "transcript_path": str(tmp_path / "none.jsonl"), "cwd": str(tmp_path),
               "permission_mode": "default", "hook_event_name": "UserPromptSubmit",
               "prompt": "how do we deploy to production?"}
    proc = _run_installed_hook(command, payload)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "UserPromptSubmit"
    assert "deploy-from-main-only" in out["additionalContext"] and "<hafiza-recall>" in out["additionalContext"]
    chitchat = _run_installed_hook(command, {**payload, "session_id": "other", "prompt": "ok, go ahead"})
    assert chitchat.returncode == 0 and chitchat.stdout == ""


def test_installed_hook_finds_the_vault_given_at_install(tmp_path):
    _remember_deploy_rule()
    run_cli("--vault", os.environ["HAFIZA_VAULT"], "install", "claude-code")
    command = json.loads((home() / ".claude/settings.json").read_text())["hooks"]["UserPromptSubmit"][0][
        "hooks"][0]["command"]
    payload = {"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit",
               "prompt": "how do we deploy to production?"}
    proc = _run_installed_hook(command, payload, env={"HAFIZA_VAULT": str(tmp_path / "not-a-vault")})
    assert "deploy-from-main-only" in json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]


# --- the Claude Code plugin folder ----------------------------------------

def test_plugin_folder_is_valid():
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "hafiza" and manifest["version"] and manifest["description"]
    assert sorted(p.name for p in (PLUGIN / ".claude-plugin").iterdir()) == ["plugin.json"]
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {event for event, _ in clients.CLAUDE_EVENTS}
    for event, groups in hooks.items():
        assert EVENTS[event] in ("prompt", "start", "end", "precompact")
        for group in groups:
            for handler in group["hooks"]:
                assert handler["type"] == "command"
                assert handler["command"] == f"hafiza hook claude-code {event}"
    server = json.loads((PLUGIN / ".mcp.json").read_text())["mcpServers"]["hafiza"]
    assert server == {"command": "hafiza", "args": ["mcp"]}


def test_plugin_copy_uses_absolute_paths(tmp_path):
    folder = tmp_path / "hafiza-plugin"
    said = run_cli("install", "claude-code", "--plugin", str(folder), "--no-hooks", "--no-mcp")
    # a plugin is read when Claude Code starts: no "reloads settings by itself" for it (new-user trial)
    assert f"claude --plugin-dir {folder}" in said.stdout + said.stderr
    assert "reloads settings by itself" not in said.stdout + said.stderr
    hooks = json.loads((folder / "hooks" / "hooks.json").read_text())["hooks"]
    command = hooks["SessionStart"][0]["hooks"][0]["command"]
    argv = shlex.split(command)
    assert argv[0] == f"HAFIZA_VAULT={tmp_path / 'vault'}"  # the vault it was installed for (not the default)
    assert argv[1] == interpreter() and command.endswith("claude-code SessionStart")
    assert Path(json.loads((folder / ".mcp.json").read_text())["mcpServers"]["hafiza"]["command"]).is_absolute()
    assert json.loads((folder / ".claude-plugin" / "plugin.json").read_text())["name"] == "hafiza"
    run_cli("uninstall", "claude-code", "--plugin", str(folder))
    assert not folder.exists()


# --- clients rewrite their own config files --------------------------------

def test_codex_rewriting_config_toml_keeps_both_sides():
    """Codex's `/hooks` trust step appends its own tables after ours (seen with codex-cli 0.171)."""
    config = write(home() / ".codex/config.toml", 'model = "gpt-5"\n')
    install("codex")
    codex_state = ('\n[projects."/work"]\ntrust_level = "trusted"\n\n[hooks.state]\n\n'
                   f'[hooks.state."{home()}/.codex/hooks.json:user_prompt_submit:0:0"]\n'
                   'trusted_hash = "sha256:5354"\n')
    config.write_text(config.read_text() + codex_state)
    assert plan_install(Options("codex")).changes == []  # still installed, nothing to redo
    uninstall("codex")
    text = config.read_text()
    assert text == 'model = "gpt-5"\n' + codex_state and "hafiza" not in text
    assert tomllib.loads(text)["hooks"]["state"]


def test_goose_rewriting_config_yaml_still_uninstalls():
    """Goose re-serialises config.yaml (serde_yaml) when it records plugins: our comments go, keys get sorted."""
    config = write(home() / ".config/goose/config.yaml", "GOOSE_MODEL: x\n")
    install("goose", hooks=False)
    data = yaml.safe_load(config.read_text())
    data["plugins"] = {"/somewhere": {"enabled": True}}
    config.write_text(yaml.safe_dump(data, sort_keys=True))
    uninstall("goose")
    after = yaml.safe_load(config.read_text())
    assert after == {"GOOSE_MODEL": "x", "extensions": {}, "plugins": {"/somewhere": {"enabled": True}}}


def test_an_install_from_the_source_checkout_says_the_hooks_point_into_it():
    """This suite runs hafiza from its checkout (an editable install): the install names the checkout and
    warns that moving it turns recall off; a wheel's files lie in no checkout (tests/e2e/test_installed.py)."""
    from hafiza.hooks.install import source_checkout

    out = run_cli("install", "claude-code").stdout
    assert f"hafiza runs from the source checkout {ROOT}" in out and "moving or deleting it" in out
    assert source_checkout(clients.HOOK_SCRIPT) == ROOT
    site = Path(sys.prefix) / "lib" / "python3.11" / "site-packages" / "hafiza" / "hooks" / "hafiza_hook.py"
    assert source_checkout("/opt/pipx/venvs/hafiza/bin/python", "/opt/pipx/venvs/hafiza" + str(site)) is None


def test_doctor_names_a_client_whose_hook_runs_a_program_that_is_gone(tmp_path, vault):
    """Hooks written by a hafiza whose environment was removed since: doctor says which program is gone."""
    env = tmp_path / "old-env" / "bin"
    env.mkdir(parents=True)
    (env / "python3").symlink_to(sys.executable)
    apply(plan_install(Options("claude-code", python=str(env / "python3"))))
    run_cli("install", "codex")  # a client installed from the hafiza in use: fine

    def said(client: str) -> str:
        shown = run_cli("doctor", check=False).stdout
        return next((line for line in shown.splitlines() if line.strip().startswith(f"{client}:")), "")

    assert "no longer exists" not in said("claude-code")  # another interpreter, but there
    (env / "python3").unlink()
    assert f"{env / 'python3'}, which no longer exists" in said("claude-code")
    assert "hafiza install claude-code" in said("claude-code")
    assert said("codex") == ""
