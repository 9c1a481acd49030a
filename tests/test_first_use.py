"""What a new user hit on first use, each fixed and tried the way they tried it."""

from __future__ import annotations

import json
import os

from conftest import git_subjects, run_cli


def test_install_with_hafiza_vault_writes_hooks_that_name_that_vault(tmp_path):
    vault = tmp_path / "elsewhere"
    env = {"HAFIZA_VAULT": str(vault)}
    run_cli("init", env=env)
    run_cli("install", "claude-code", env=env)
    settings = (tmp_path / "home" / ".claude" / "settings.json").read_text()
    assert f"HAFIZA_VAULT={vault}" in settings
    assert "ok    clients: claude-code: hooks and MCP point at this vault" in run_cli("doctor", env=env).stdout
    other = {"HAFIZA_VAULT": str(tmp_path / "other")}
    run_cli("init", env=other)
    report = run_cli("doctor", env=other, check=False).stdout
    assert "warn  clients: 1 installed client would not reach this vault" in report


def test_repeated_undo_walks_back_and_redo_undoes_the_undo(vault):
    for n in (1, 2, 3):
        vault.remember(f"note {n}", id=f"n{n}")
    run_cli("undo")
    run_cli("undo")
    assert not (vault.memories_dir / "n3.md").exists() and not (vault.memories_dir / "n2.md").exists()
    assert (vault.memories_dir / "n1.md").exists()
    run_cli("undo", "--redo")
    assert (vault.memories_dir / "n2.md").exists() and not (vault.memories_dir / "n3.md").exists()
    assert git_subjects(vault.root)[0] == "hafiza: redo undo remember n2"


def test_an_archived_memory_is_restored_and_its_log_tells_the_story(vault):
    vault.remember("Staging runs on Fridays too", id="friday")
    run_cli("forget", "friday")
    run_cli("restore", "friday")
    assert vault.get("friday").status == "active"
    history = json.loads(run_cli("log", "friday", "--json").stdout)
    assert [c["action"] for c in history] == ["restore", "forget", "remember"]


def _remember_bytes(data: bytes):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "hafiza.cli.main", "remember"], input=data, capture_output=True,
                          env=os.environ)


def test_bad_input_is_a_clear_error_not_a_traceback(vault, tmp_path):
    binary = _remember_bytes(b"\xff\xfe\x00bad")
    assert binary.returncode == 1 and b"not UTF-8" in binary.stderr and b"Traceback" not in binary.stderr
    nul = _remember_bytes(b"text with a \x00 byte")  # argv cannot carry a NUL; stdin can
    assert nul.returncode == 1 and b"NUL" in nul.stderr
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("x")
    init = run_cli("init", env={"HAFIZA_VAULT": str(a_file)}, check=False)
    assert init.returncode == 1 and "is not a folder" in init.stderr and "Traceback" not in init.stderr
    big = run_cli("remember", input="x " * 600_000, check=False)
    assert big.returncode == 1 and "at most 50,000" in big.stderr


def test_types_are_accepted_in_any_case(vault):
    run_cli("remember", "Always squash merge", "--type", "Rule", "--id", "squash")
    assert vault.get("squash").type == "rule"


def test_a_title_made_from_the_text_is_not_printed_twice():
    from hafiza.hooks import render

    text, _ = render.block([{"id": "deploy", "type": "rule", "status": "active",
                             "title": "Deploy only from main after CI is green",
                             "snippet": "Deploy only from main after CI is green. Feature branches go to staging."}])
    assert text.count("Deploy only from main after CI is green") == 1
    text, _ = render.block([{"id": "deploy", "type": "rule", "status": "active", "title": "Production deploys",
                             "snippet": "Deploy only from main after CI is green."}])
    assert "deploy: Production deploys — Deploy only from main" in text


def test_importing_the_same_file_twice_adds_nothing_and_dry_run_writes_nothing(vault, tmp_path):
    source = tmp_path / "notes.jsonl"
    source.write_text('{"text": "Docker builds use the cache"}\n{"text": "Releases are tagged vX.Y"}\n')
    dry = json.loads(run_cli("import", str(source), "--dry-run", "--json").stdout)
    assert len(dry["would_import"]) == 2 and len(vault.load_all()[0]) == 0
    run_cli("import", str(source))
    again = run_cli("import", str(source))
    assert "imported 0 memories" in again.stdout and "already in the vault as" in again.stderr
    assert len(vault.load_all()[0]) == 2


def test_a_memory_of_another_project_is_not_silently_absent(vault, tmp_path):
    vault.remember("The shop deploys with the blue-green script", id="shop-deploy", scope="project:shop")
    for n in range(6):
        vault.remember(f"Unrelated note {n} about lunch", id=f"lunch-{n}")
    here = tmp_path / "other"
    (here / ".git").mkdir(parents=True)
    out = run_cli("search", "blue-green deploys", cwd=str(here))
    assert "1 more match in other scopes (project:shop); use --all-scopes" in out.stderr


def test_a_memory_is_updated_in_place_from_the_cli_and_through_mcp(vault):
    import anyio
    from test_mcp import inproc, ok

    vault.remember("Lint with flake8 before pushing", id="lint")
    run_cli("edit", "lint", "--text", "Lint with ruff before pushing")
    assert vault.get("lint").body == "Lint with ruff before pushing"
    assert vault.get("lint").title == "Lint with ruff before pushing"  # made from the text: made again
    assert git_subjects(vault.root)[0] == "hafiza: update lint"

    async def main():
        async with inproc(vault.root) as client:
            return await ok(client, "update", id="lint", text="Lint with ruff and mypy before pushing",
                            title="Linting")

    anyio.run(main)
    assert (vault.get("lint").title, vault.get("lint").body) == ("Linting", "Lint with ruff and mypy before pushing")
    refused = run_cli("edit", "lint", "--text", "token ghp_" + "a1B2" * 9, check=False)
    assert refused.returncode == 4 and vault.get("lint").title == "Linting"


def test_mcp_names_itself_lists_every_tool_in_help_and_creates_a_missing_vault_where_it_looks_by_default(
        tmp_path, vault, monkeypatch):
    from importlib.metadata import version

    import anyio
    from hafiza.hooks.mcp import TOOLS
    from test_mcp import inproc

    async def main():
        async with inproc(vault.root) as client:
            return client.server_info

    info = anyio.run(main)
    assert (info.name, info.version) == ("hafiza", version("hafiza"))  # the installed distribution's
    help_text = " ".join(run_cli("mcp", "--help").stdout.split())
    assert all(name in help_text for name, _, _ in TOOLS)
    named = tmp_path / "fresh-vault"
    proc = run_cli("--vault", str(named), "mcp", input="", check=False)  # stdin closed: it ends at once
    assert proc.returncode == 2 and "hafiza --vault" in proc.stderr and not named.exists()  # only `init` makes it
    monkeypatch.delenv("HAFIZA_VAULT")  # the default location: an agent's first session there gets a server
    proc = run_cli("mcp", input="", check=False)
    fresh = tmp_path / "home" / ".local" / "share" / "hafiza" / "vault"
    assert (fresh / "memories").is_dir() and f"created a vault at {fresh}" in proc.stderr


def test_list_and_search_json_agree_on_path(vault):
    vault.remember("Deploys need a green CI", id="ci")
    listed = json.loads(run_cli("list", "--json").stdout)[0]["path"]
    found = json.loads(run_cli("search", "green CI deploys", "--json").stdout)[0]["path"]
    assert listed == found == "memories/ci.md"


def test_a_title_made_from_the_text_is_shown_but_not_weighed_as_a_title(vault):
    from whoosh.query import Term

    from hafiza.indexer.index import Index

    vault.remember("Kubernetes upgrades happen on the first Monday of the month", id="made-up")
    vault.remember("We upgrade clusters monthly", title="Kubernetes upgrades", id="written")
    index = Index(vault.root)
    index.sync()
    with index.open().searcher() as searcher:
        titled = {hit["id"] for hit in searcher.search(Term("title", "kubernetes"))}
        assert titled == {"written"}
        stored = {d["id"]: d["title"] for d in searcher.all_stored_fields()}
    assert stored["made-up"] == "Kubernetes upgrades happen on the first Monday of the month"


def test_the_first_prompt_after_session_start_is_answered_by_the_warm_process(vault):
    from test_hooks import CLAUDE_PROMPT, context_of, hook

    vault.remember("Deploy to production only from main, after CI is green", id="deploy-main", type="rule")
    for n in range(8):
        vault.remember(f"A note about lunch option {n}", id=f"lunch-{n}")
    warm = {"HAFIZA_DAEMON": "1", "HAFIZA_DAEMON_IDLE": "20"}
    try:
        hook("claude-code", "SessionStart", {"session_id": "first", "source": "startup", "cwd": "/tmp"}, env=warm)
        block = context_of(hook("claude-code", "UserPromptSubmit",
                                {**CLAUDE_PROMPT, "session_id": "first", "prompt": "can we deploy to production?"},
                                env=warm))
        status = json.loads(run_cli("daemon", "status", "--json").stdout)
        assert "deploy-main" in block
        assert status.get("served", 0) >= 2  # the prompt, then this status: the prompt did not go cold
    finally:
        run_cli("daemon", "stop", check=False)


def test_a_vault_opened_for_reading_refuses_to_write(vault):
    import pytest

    from hafiza.vault.errors import HafizaError
    from hafiza.vault.store.vault import reader

    with pytest.raises(HafizaError, match="opened for reading"):
        reader(vault.root).remember("should not land")
    assert git_subjects(vault.root) == ["hafiza: init vault"]
