"""What a new user meets going through the README and getting-started page, command by command, where
features meet (the trial run of 2026-12-07): each test is one thing that went wrong there."""

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_types import Implementation

from conftest import git_subjects, run_cli
from test_hooks import ASKED, console


def test_superseding_again_writes_nothing_so_undo_takes_back_the_supersession(vault):
    run_cli("remember", "Use flake8 for linting.", "--id", "flake8")
    run_cli("remember", "Use ruff for linting and formatting.", "--id", "ruff")
    run_cli("supersede", "flake8", "ruff")
    before = git_subjects(vault.root)
    again = run_cli("supersede", "flake8", "ruff", check=False)
    assert (again.returncode, again.stderr.strip()) == (1, "Error: flake8 is already superseded by ruff; nothing written")
    assert git_subjects(vault.root) == before  # no empty commit for `undo` to take back instead
    run_cli("undo")
    assert run_cli("list").stdout.startswith("flake8")


def test_search_json_gives_tags_as_a_list_as_show_json_does(vault):
    run_cli("remember", "Kod incelemesi iki onay ister.", "--id", "review", "--tag", "süreç", "--tag", "code review")
    shown = json.loads(run_cli("show", "review", "--json").stdout)
    for mode in ("keyword", "hybrid"):
        hits = json.loads(run_cli("search", "kod incelemesi", "--json", "--mode", mode).stdout)
        assert [h["tags"] for h in hits] == [shown["tags"]] == [["süreç", "code-review"]]
    batch = run_cli("search", "--batch", "-", "--json", input='{"id": "q", "query": "kod incelemesi"}\n').stdout
    assert [h["tags"] for h in json.loads(batch)["results"]] == [["süreç", "code-review"]]


def test_doctor_names_hooks_that_failed_open(vault):
    """A hook fails open: the prompt gets nothing, and the line in .hafiza/hooks.log was all that told of it."""
    checks = {c["name"]: c for c in json.loads(run_cli("doctor", "--json").stdout)}
    assert checks["hooks"]["level"] == "ok"
    hook = run_cli("hook", "claude-code", "UserPromptSubmit", input="not json")
    assert (hook.returncode, hook.stdout) == (0, "")
    doctor = run_cli("doctor")
    assert doctor.returncode == 0
    line = next(line for line in doctor.stdout.splitlines() if "hooks:" in line)
    assert line.startswith("warn  hooks: 1 hook call failed in the last 7 days and injected nothing; the latest: ")
    assert line.endswith("claude-code hook failed open: JSONDecodeError: Expecting value: line 1 column 1 (char 0)")


def test_list_refuses_a_status_there_is_none_of(vault):
    """`list --status bogus` said "no memories", as if the vault held none."""
    run_cli("remember", "We deploy on Thursdays.", "--id", "thursdays")
    proc = run_cli("list", "--status", "activ", check=False)
    assert proc.returncode == 2 and "invalid choice: 'activ'" in proc.stderr
    assert run_cli("list", "--status", "ALL").stdout.startswith("thursdays")


def test_search_through_the_warm_process_names_a_file_it_left_out(vault):
    """A broken hand edit must not vanish without a word: the in-process search said so, the warm one did not."""
    run_cli("remember", "Deploys go out on Thursdays.", "--id", "thursdays")
    (vault.memories_dir / "broken.md").write_bytes(b"---\nid: broken\ntitle: caf\xe9\n---\ncaf\xe9\n")
    assert run_cli("daemon", "start").stdout.strip() == "started"
    try:
        for mode in ("hybrid", "keyword"):  # the warm process, and the in-process search
            proc = run_cli("search", "deploys thursdays", "--mode", mode)
            assert proc.stdout.split()[1] == "thursdays"
            assert proc.stderr.startswith("warning: 1 memory file does not parse and is left out "
                                          "(memories/broken.md)"), (mode, proc.stderr)
    finally:
        run_cli("daemon", "stop", check=False)


def test_list_refuses_a_scope_that_is_not_one(vault):
    """`list --scope web` (for project:web) said "no memories", as if the project had none."""
    run_cli("remember", "The web app deploys on Thursdays.", "--id", "thursdays", "--scope", "project:web")
    proc = run_cli("list", "--scope", "web", check=False)
    assert proc.returncode == 2 and "'web' is not 'global' or 'project:<name>'" in proc.stderr
    assert run_cli("list", "--scope", "project:web").stdout.startswith("thursdays")


def test_a_misspelt_vault_is_never_created_and_every_channel_says_so_alike(tmp_path, vault):
    """HAFIZA_VAULT=~/.local/share/hafiza/vualt: the MCP server made an empty vault there, so the agent wrote
    where nobody reads. Only `hafiza init` makes a vault in a named folder; each channel names the folder and
    the command, and the hook fails open."""
    typo = tmp_path / "vualt"
    env = {"HAFIZA_VAULT": str(typo)}
    told = (f"Error: no vault at {typo}; create one with `hafiza --vault {typo} init`, or correct --vault or "
            "HAFIZA_VAULT if you meant another folder")
    for command in (("search", "deploy"), ("remember", "Deploys go out on Thursdays."), ("used", "x"),
                    ("fact", "set", "acme", "city", "İzmir"), ("mcp",), ("ui", "--no-browser")):
        proc = run_cli(*command, env=env, input="", check=False)
        assert (proc.returncode, proc.stdout, proc.stderr.strip()) == (2, "", told), command

    async def connect():
        params = StdioServerParameters(command=sys.executable, args=["-m", "hafiza.cli.main", "mcp"],
                                       env={**os.environ, **env})
        with anyio.fail_after(60):
            async with Client(params, client_info=Implementation(name="test-agent", version="1.0")) as client:
                await client.call_tool("remember", {"text": "Deploys go out on Thursdays."})

    with pytest.raises(Exception):  # a real client: the server is gone before it answers
        anyio.run(connect)
    assert console("claude-code", ASKED, env).stdout == b""  # fails open
    log = (Path.home() / ".cache" / "hafiza" / "hooks.log").read_text()
    assert f"claude-code prompt: {told.removeprefix('Error: ')}; nothing injected" in log
    assert not typo.exists()
    run_cli("--vault", str(typo), "init", env=env)  # what the error says to run makes it
    assert run_cli("remember", "Deploys go out on Thursdays.", env=env).returncode == 0
